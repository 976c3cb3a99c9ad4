// POST /api/provider-webhook on the real local server and real PostgreSQL:
// only authentic, confirmed payments move money, and each moves it once,
// however many times (and however concurrently) it is delivered.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevNode, DEV_WEBHOOK_SIGNATURE_HEADER } from 'l402-paywall/backends';
import { ProviderUnavailable, type LightningProvider } from 'l402-paywall/lightning';
import { issueInvoice } from '../../lib/service/money/invoices.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';

const backends = await databaseBackends();
const postgres = backends.find((b) => b.name === 'PostgreSQL')!;

describe.skipIf(postgres.skip)('provider webhook (local server, PostgreSQL)', () => {
  // PAYOUT_MIN_FEE_MSAT 0: 1000-sat test payments are paid out at once (tests/integration/payout-fees.test.ts covers the default).
  const server = useDevServerOn(postgres, () => ({ PAYOUT_MIN_FEE_MSAT: '0' }));
  let owner: OwnerServer;
  let forged = 0;
  beforeAll(async () => {
    owner = await startOwnerServer({ store: server.ctx.store });
  });
  afterAll(() => owner?.close());

  /** A managed invoice, paid, whose webhook was NOT delivered (issued without a webhook URL): the test delivers it. */
  async function paidManagedInvoice(amountSats: number, ownerAddress: string | undefined): Promise<string> {
    const ctx = server.ctx;
    const issued = await issueInvoice(ctx, { amountSats, ...(ownerAddress ? { ownerAddress } : {}) });
    await ctx.devNode!.pay(issued.paymentRequest);
    return issued.paymentHash;
  }

  function delivery(
    paymentHash: string,
    options: { timestamp?: number; sign?: (body: string, t: number) => string; body?: string } = {},
  ): { headers: Record<string, string>; body: string } {
    const timestamp = options.timestamp ?? Date.now();
    const body = options.body ?? JSON.stringify({ type: 'payment_received', paymentHash, amountMsat: 0, timestamp });
    const sign = options.sign ?? ((b, t) => server.ctx.devNode!.signWebhook(b, t));
    return { headers: { 'content-type': 'application/json', [DEV_WEBHOOK_SIGNATURE_HEADER]: `t=${timestamp},v1=${sign(body, timestamp)}` }, body };
  }

  function post(d: { headers: Record<string, string>; body: string }): Promise<Response> {
    return fetch(`${server.url}/api/provider-webhook`, { method: 'POST', headers: d.headers, body: d.body });
  }

  async function movedFor(paymentHash: string, ownerAddress: string) {
    const [splits, payments, payouts] = await Promise.all([
      server.db.query('SELECT state, owner_msat FROM splits WHERE payment_hash = $1', [paymentHash]),
      server.db.query('SELECT owner_address FROM payments WHERE payment_hash = $1', [paymentHash]),
      server.db.query('SELECT state, amount_msat FROM payouts WHERE owner_address = $1', [ownerAddress]),
    ]);
    return { splits, payments, payouts, ownerBalance: (await owner.node.balance()).balanceMsat };
  }

  it('50 concurrent deliveries of the same payment: one split, one payout, the owner paid exactly once', async () => {
    const address = owner.address('concurrent');
    const hash = await paidManagedInvoice(1000, address);
    const before = (await owner.node.balance()).balanceMsat;
    const d = delivery(hash);
    const responses = await Promise.all(Array.from({ length: 50 }, () => post(d)));
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as { split: { duplicate: boolean } }[];
    expect(bodies.filter((b) => !b.split.duplicate)).toHaveLength(1);

    const moved = await movedFor(hash, address);
    expect(moved.splits).toEqual([{ state: 'paid', owner_msat: 997_000 }]);
    expect(moved.payments).toEqual([{ owner_address: address }]);
    expect(moved.payouts).toEqual([{ state: 'paid', amount_msat: 997_000 }]);
    expect(moved.ownerBalance - before).toBe(997_000);
    const attempts = await server.db.query('SELECT outcome FROM payout_attempts a JOIN payouts p ON p.id = a.payout_id WHERE p.owner_address = $1', [address]);
    expect(attempts).toEqual([{ outcome: 'paid' }]);

    // Replayed later (within the signature's time tolerance): still nothing new.
    expect((await post(d)).status).toBe(200);
    expect(await movedFor(hash, address)).toEqual(moved);
  });

  it.each([
    [
      'a wrong signature (another node key)',
      (hash: string) =>
        delivery(hash, { sign: (b, t) => createDevNode({ store: server.ctx.store, privateKey: bytesToHex(randomBytes(32)) }).signWebhook(b, t) }),
    ],
    ['a missing signature', (hash: string) => ({ headers: { 'content-type': 'application/json' }, body: delivery(hash).body })],
    ['a stale signature (10 minutes old, correctly signed)', (hash: string) => delivery(hash, { timestamp: Date.now() - 10 * 60_000 })],
    ['a body changed after signing', (hash: string) => ({ ...delivery(hash), body: delivery(hash).body.replace('"amountMsat":0', '"amountMsat":1') })],
    ['a garbage signature header', (hash: string) => ({ headers: { [DEV_WEBHOOK_SIGNATURE_HEADER]: 't=1,v1=zz' }, body: delivery(hash).body })],
  ])('%s: 401 and nothing moves, for a payment that really was made', async (_name, build) => {
    const address = owner.address(`forged-${++forged}`);
    const hash = await paidManagedInvoice(1000, address);
    const before = (await owner.node.balance()).balanceMsat;
    const response = await post(build(hash));
    expect(response.status).toBe(401);
    expect(await response.json()).toMatchObject({ code: 'WEBHOOK_REJECTED', error: expect.any(String) });
    const moved = await movedFor(hash, address);
    expect(moved).toMatchObject({ splits: [], payments: [], payouts: [] });
    expect(moved.ownerBalance).toBe(before);
  });

  it('an authentic delivery for an unpaid invoice: 409, nothing moves', async () => {
    const address = owner.address('unpaid');
    const issued = await issueInvoice(server.ctx, { amountSats: 1000, ownerAddress: address });
    const response = await post(delivery(issued.paymentHash));
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'NOT_SETTLED' });
    expect(await movedFor(issued.paymentHash, address)).toMatchObject({ splits: [], payments: [], payouts: [] });
  });

  it('an authentic delivery for a hash the provider does not know: 404, nothing moves', async () => {
    const hash = bytesToHex(randomBytes(32));
    const response = await post(delivery(hash));
    expect(response.status).toBe(404);
    expect(await server.db.query('SELECT 1 FROM payments WHERE payment_hash = $1', [hash])).toEqual([]);
  });

  it('a payment without an owner is only logged: no split, no payout', async () => {
    const hash = await paidManagedInvoice(5, undefined);
    const response = await post(delivery(hash));
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ ok: true, managed: false });
    expect(await server.db.query('SELECT amount_sats, owner_address, endpoint FROM payments WHERE payment_hash = $1', [hash])).toEqual([
      { amount_sats: 5, owner_address: null, endpoint: '/api/invoice' },
    ]);
    expect(await server.db.query('SELECT 1 FROM splits WHERE payment_hash = $1', [hash])).toEqual([]);
  });

  it('an oversized body is refused before any signature work (413)', async () => {
    const response = await post({ headers: { 'content-type': 'application/json' }, body: 'x'.repeat(70 * 1024) });
    expect(response.status).toBe(413);
  });

  it('the provider down while confirming: 503 with Retry-After so the delivery comes again; nothing moves', async () => {
    const address = owner.address('provider-down');
    const hash = await paidManagedInvoice(1000, address);
    const real = server.ctx;
    const down: LightningProvider = {
      ...real.provider,
      name: 'dev',
      readWebhook: (d) => real.devNode!.readWebhook(d),
      lookupInvoice: () => Promise.reject(new ProviderUnavailable('connection refused (test)')),
    };
    server.use({ ...real, provider: down });
    try {
      const d = delivery(hash);
      const response = await post(d);
      expect(response.status).toBe(503);
      expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await movedFor(hash, address)).toMatchObject({ splits: [], payments: [], payouts: [] });
      // The provider is back: the redelivery does it all, once.
      server.restore();
      expect((await post(d)).status).toBe(200);
      expect(await movedFor(hash, address)).toMatchObject({ splits: [{ state: 'paid', owner_msat: 997_000 }], payouts: [{ state: 'paid' }] });
    } finally {
      server.restore();
    }
  });

  it('a provider that sends no webhooks: 501 with a clear code', async () => {
    const real = server.ctx;
    const { readWebhook: _omit, ...noWebhooks } = real.devNode!;
    server.use({ ...real, provider: { ...noWebhooks, name: 'silent' } });
    try {
      const response = await post(delivery(bytesToHex(randomBytes(32))));
      expect(response.status).toBe(501);
      expect(await response.json()).toMatchObject({ code: 'WEBHOOKS_UNSUPPORTED' });
    } finally {
      server.restore();
    }
  });
});
