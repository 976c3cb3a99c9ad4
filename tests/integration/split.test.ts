// The 99.7/0.3 split arithmetic, and POST /api/split (manual recovery) on the
// real local server and PostgreSQL: secret checked in constant time, input
// validated, and the same ledger as the webhook so nothing is paid twice.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DEV_WEBHOOK_SIGNATURE_HEADER } from 'l402-paywall/backends';
import { issueInvoice } from '../../lib/service/money/invoices.js';
import { ownerShareMsat, serviceFeeMsat } from '../../lib/service/money/split.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';

describe('split arithmetic (integer msat)', () => {
  it('1000 sats: 997 to the owner, 3 to the service', () => {
    expect(ownerShareMsat(1_000_000)).toBe(997_000);
    expect(serviceFeeMsat(1_000_000)).toBe(3_000);
  });

  it('rounds the owner down; share + fee is always exactly the amount; no float error at large amounts', () => {
    expect(ownerShareMsat(1)).toBe(0);
    expect(serviceFeeMsat(1)).toBe(1);
    expect(ownerShareMsat(1_001)).toBe(997);
    expect(ownerShareMsat(Number.MAX_SAFE_INTEGER)).toBe(Number((BigInt(Number.MAX_SAFE_INTEGER) * 997n) / 1000n));
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (amount) => {
        const share = ownerShareMsat(amount);
        expect(share + serviceFeeMsat(amount)).toBe(amount);
        expect(share * 1000 <= amount * 997 + 1e-6 * amount).toBe(true);
        expect(Number.isSafeInteger(share)).toBe(true);
      }),
    );
    expect(() => ownerShareMsat(-1)).toThrow(RangeError);
    expect(() => ownerShareMsat(1.5)).toThrow(RangeError);
  });
});

const backends = await databaseBackends();
const postgres = backends.find((b) => b.name === 'PostgreSQL')!;
const SPLIT_SECRET = 'split-secret-for-tests-0123456789abcdef';

describe.skipIf(postgres.skip)('POST /api/split (local server, PostgreSQL)', () => {
  // PAYOUT_MIN_FEE_MSAT 0: 1000-sat test payments are paid out at once (tests/integration/payout-fees.test.ts covers the default).
  const server = useDevServerOn(postgres, () => ({ SPLIT_SECRET, SPLIT_MIN_SATS: '100', PAYOUT_MIN_FEE_MSAT: '0' }));
  let owner: OwnerServer;
  beforeAll(async () => {
    owner = await startOwnerServer({ store: server.ctx.store });
    // The manual splits below are paid from the service's wallet: give it money.
    const ctx = server.ctx;
    await ctx.devNode!.pay((await ctx.devNode!.createInvoice({ amountMsat: 10_000_000 })).invoice);
  });
  afterAll(() => owner?.close());

  function split(body: unknown, secret: string | null = SPLIT_SECRET): Promise<Response> {
    return fetch(`${server.url}/api/split`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(secret === null ? {} : { 'x-split-secret': secret }) },
      body: JSON.stringify(body),
    });
  }
  const balance = async () => (await owner.node.balance()).balanceMsat;
  const countRows = async (table: string) => Number((await server.db.query(`SELECT count(*)::int AS n FROM ${table}`))[0]!.n);

  it('missing or wrong secret: 401 and nothing recorded', async () => {
    const before = await countRows('splits');
    for (const secret of [null, '', 'wrong', `${SPLIT_SECRET}x`]) {
      const response = await split({ amountSats: 1000, ownerAddress: owner.address('x') }, secret);
      expect(response.status).toBe(401);
      expect(await response.json()).toMatchObject({ code: 'UNAUTHORIZED', error: expect.any(String) });
    }
    expect(await countRows('splits')).toBe(before);
  });

  it.each<[Record<string, unknown>, string]>([
    [{}, 'nothing'],
    [{ amountSats: 0, ownerAddress: 'alice@example.com' }, 'zero sats'],
    [{ amountSats: 1.5, ownerAddress: 'alice@example.com' }, 'fractional sats'],
    [{ amountSats: '1000', ownerAddress: 'alice@example.com' }, 'a string amount'],
    [{ amountSats: 1000, ownerAddress: 'not-an-address' }, 'a bad address'],
    [{ amountSats: 1000, ownerAddress: 'alice@example.com', paymentHash: 'xyz' }, 'a bad payment hash'],
    [{ amountSats: 1000, ownerAddress: 'alice@example.com', extra: 1 }, 'an unknown field'],
  ])('400 for %j (%s)', async (body, _what) => {
    const response = await split(body);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'INVALID_REQUEST' });
  });

  it('1000 sats: {ok, ownerSats: 997}, the owner receives 997_000 msat; the same request again pays nothing', async () => {
    const address = owner.address('manual');
    const before = await balance();
    const response = await split({ amountSats: 1000, ownerAddress: address, idempotencyKey: 'invoice-42' });
    expect(response.status).toBe(200);
    const body = await response.json();
    expect(body).toMatchObject({
      ok: true,
      ownerSats: 997,
      ownerMsat: 997_000,
      state: 'paid',
      duplicate: false,
      ledgerKey: expect.stringMatching(/^manual:[0-9a-f]{64}$/),
    });
    expect(await balance()).toBe(before + 997_000);

    const again = await (await split({ amountSats: 1000, ownerAddress: address, idempotencyKey: 'invoice-42' })).json();
    expect(again).toMatchObject({ ok: true, ownerSats: 997, duplicate: true, state: 'paid', ledgerKey: body.ledgerKey });
    expect(await balance()).toBe(before + 997_000);
    // A different key is a different split.
    await split({ amountSats: 1000, ownerAddress: address, idempotencyKey: 'invoice-43' });
    expect(await balance()).toBe(before + 2 * 997_000);
  });

  it('50 concurrent requests with one idempotency key: one split, one payout, the owner paid once', async () => {
    const address = owner.address('concurrent');
    const before = await balance();
    const answers = await Promise.all(Array.from({ length: 50 }, () => split({ amountSats: 1000, ownerAddress: address, idempotencyKey: 'same-invoice' })));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    const bodies = (await Promise.all(answers.map((a) => a.json()))) as { ledgerKey: string; duplicate: boolean }[];
    expect(new Set(bodies.map((b) => b.ledgerKey)).size).toBe(1);
    expect(bodies.filter((b) => !b.duplicate)).toHaveLength(1);
    // Whichever request's attempt paid, it was paid once: a concurrent one found the payout leased or paid.
    await vi.waitFor(async () => expect(await server.db.query('SELECT state FROM payouts WHERE owner_address = $1', [address])).toEqual([{ state: 'paid' }]));
    expect(await balance()).toBe(before + 997_000);
    expect(await server.db.query('SELECT count(*)::int AS splits, sum(owner_msat)::int AS owed FROM splits WHERE owner_address = $1', [address])).toEqual([
      { splits: 1, owed: 997_000 },
    ]);
    expect(
      await server.db.query(
        "SELECT count(*)::int AS n FROM payout_attempts a JOIN payouts p ON p.id = a.payout_id WHERE p.owner_address = $1 AND a.outcome = 'paid'",
        [address],
      ),
    ).toEqual([{ n: 1 }]);
  });

  it('below the minimum: {ok, skipped: true}, nothing paid, the share accrues for the owner', async () => {
    const address = owner.address('tiny');
    const before = await balance();
    const body = await (await split({ amountSats: 50, ownerAddress: address })).json();
    expect(body).toMatchObject({ ok: true, skipped: true, ownerMsat: 49_850, state: 'accrued' });
    expect(await balance()).toBe(before);
    expect(await server.db.query('SELECT state, source FROM splits WHERE owner_address = $1', [address])).toEqual([{ state: 'accrued', source: 'manual' }]);
  });

  it("a share that tips the owner's accrued total over the minimum is paid with the rest, and the answer does not say skipped", async () => {
    const address = owner.address('tipping');
    const before = await balance();
    const first = await (await split({ amountSats: 60, ownerAddress: address, idempotencyKey: 'a' })).json();
    expect(first).toMatchObject({ ok: true, skipped: true, ownerMsat: 59_820, state: 'accrued' });
    const second = await (await split({ amountSats: 60, ownerAddress: address, idempotencyKey: 'b' })).json();
    expect(second).toMatchObject({ ok: true, ownerSats: 59, ownerMsat: 59_820, state: 'paid' });
    expect(second).not.toHaveProperty('skipped');
    expect(await balance()).toBe(before + 2 * 59_820); // one payout covering both shares
    expect(
      await server.db.query("SELECT count(DISTINCT payout_id)::int AS payouts, bool_and(state = 'paid') AS paid FROM splits WHERE owner_address = $1", [
        address,
      ]),
    ).toEqual([{ payouts: 1, paid: true }]);
  });

  it('with the paymentHash of a payment the webhook already split: nothing is paid twice', async () => {
    const address = owner.address('recovered');
    const issuing = await fetch(`${server.url}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountSats: 1000, ownerAddress: address }),
    });
    const invoice = (await issuing.json()) as { paymentRequest: string; paymentHash: string };
    const before = await balance();
    const paid = await fetch(`${server.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: invoice.paymentRequest }),
    });
    expect(paid.status).toBe(200); // its webhook split and paid it
    expect(await balance()).toBe(before + 997_000);

    const body = await (await split({ amountSats: 1000, ownerAddress: address, paymentHash: invoice.paymentHash })).json();
    expect(body).toMatchObject({ ok: true, ownerSats: 997, duplicate: true, state: 'paid', ledgerKey: invoice.paymentHash });
    expect(await balance()).toBe(before + 997_000);
    expect(await server.db.query('SELECT count(*)::int AS n FROM payouts WHERE owner_address = $1', [address])).toEqual([{ n: 1 }]);

    // Another owner, or another amount, for that payment: refused.
    expect((await split({ amountSats: 1000, ownerAddress: owner.address('thief'), paymentHash: invoice.paymentHash })).status).toBe(409);
    expect((await split({ amountSats: 2000, ownerAddress: address, paymentHash: invoice.paymentHash })).status).toBe(409);
  });

  it('with the paymentHash of a payment whose webhook never came: split and paid once; a later webhook changes nothing', async () => {
    const address = owner.address('webhook-lost');
    const ctx = server.ctx;
    const issued = await issueInvoice(ctx, { amountSats: 1000, ownerAddress: address }); // no webhook URL
    await ctx.devNode!.pay(issued.paymentRequest);
    const before = await balance();
    expect(await (await split({ amountSats: 1000, ownerAddress: address, paymentHash: issued.paymentHash })).json()).toMatchObject({
      ok: true,
      ownerSats: 997,
      duplicate: false,
      state: 'paid',
    });
    const { confirmPayment } = await import('../../lib/service/money/managed.js');
    await confirmPayment(ctx, issued.paymentHash, 'webhook');
    expect(await balance()).toBe(before + 997_000);
  });

  it("an unpaid invoice's hash: 409 NOT_SETTLED, nothing recorded", async () => {
    const address = owner.address('unpaid');
    const issued = await issueInvoice(server.ctx, { amountSats: 1000, ownerAddress: address });
    const response = await split({ amountSats: 1000, ownerAddress: address, paymentHash: issued.paymentHash });
    expect(response.status).toBe(409);
    expect(await response.json()).toMatchObject({ code: 'NOT_SETTLED' });
    expect(await server.db.query('SELECT 1 FROM splits WHERE payment_hash = $1', [issued.paymentHash])).toEqual([]);
  });

  it('SPLIT_SECRET unset: 503 NOT_CONFIGURED, whatever is sent', async () => {
    const db = server.db;
    server.redeploy(server.config({ SPLIT_SECRET: undefined }), { database: () => Promise.resolve(db) });
    try {
      const response = await split({ amountSats: 1000, ownerAddress: 'alice@example.com' });
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ code: 'NOT_CONFIGURED' });
      expect(response.headers.get('retry-after')).toBeTruthy();
    } finally {
      server.restore();
    }
  });
});

describe.skipIf(postgres.skip)('the spec example with default payout settings (local server, PostgreSQL)', () => {
  // Nothing but the secret: the payout minimum and routing budget are the defaults.
  const server = useDevServerOn(postgres, () => ({ SPLIT_SECRET }));
  let owner: OwnerServer;
  beforeAll(async () => {
    owner = await startOwnerServer({ store: server.ctx.store });
    const node = server.ctx.devNode!;
    await node.pay((await node.createInvoice({ amountMsat: 10_000_000 })).invoice); // the service's wallet pays the payouts
  });
  afterAll(() => owner?.close());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const split = async (body: unknown) => {
    const response = await post('/api/split', body, { 'x-split-secret': SPLIT_SECRET });
    expect(response.status).toBe(200);
    return (await response.json()) as Record<string, unknown>;
  };
  const received = async () => (await owner.node.balance()).balanceMsat;
  /** The invoices the owner's Lightning Address server was asked for: one per payout. */
  const invoicesAskedBy = (username: string) => owner.requests.filter((r) => r.stage === 'callback' && r.username === username).map((r) => r.amountMsat);
  const payoutsTo = (address: string) =>
    server.db.query<{ amount_msat: number; max_fee_msat: number; state: string }>(
      'SELECT amount_msat, max_fee_msat, state FROM payouts WHERE owner_address = $1 ORDER BY created_at',
      [address],
    );

  it('POST /api/split of 1,000 sats answers ownerSats 997 and pays the owner 997 sats once, however often it is sent', async () => {
    const address = owner.address('spec');
    const before = await received();
    const body = { amountSats: 1000, ownerAddress: address, idempotencyKey: 'spec-example' };
    const first = await split(body);
    expect(first).toEqual({ ok: true, ownerSats: 997, ownerMsat: 997_000, ledgerKey: expect.stringMatching(/^manual:/), duplicate: false, state: 'paid' });
    expect(await split(body)).toEqual({ ...first, duplicate: true });
    expect((await received()) - before).toBe(997_000);
    expect(invoicesAskedBy('spec')).toEqual([997_000]);
    // Its routing budget is the 3 sats the service earned on it, never more.
    expect(await payoutsTo(address)).toEqual([{ amount_msat: 997_000, max_fee_msat: 3_000, state: 'paid' }]);
  });

  it('a 1,000-sat managed payment: the webhook (delivered twice) and a later split pay the owner 997 sats once', async () => {
    const address = owner.address('webhook');
    const before = await received();
    const issued = (await (await post('/api/invoice', { amountSats: 1000, ownerAddress: address })).json()) as { paymentRequest: string; paymentHash: string };
    expect((await post('/api/dev/pay', { invoice: issued.paymentRequest })).status).toBe(200); // its webhook splits and pays first
    const timestamp = Date.now();
    const delivery = JSON.stringify({ type: 'payment_received', paymentHash: issued.paymentHash, amountMsat: 0, timestamp });
    const again = await post('/api/provider-webhook', JSON.parse(delivery), {
      [DEV_WEBHOOK_SIGNATURE_HEADER]: `t=${timestamp},v1=${server.ctx.devNode!.signWebhook(delivery, timestamp)}`,
    });
    expect(await again.json()).toMatchObject({ ok: true, managed: true, split: { duplicate: true } });
    expect(await split({ amountSats: 1000, ownerAddress: address, paymentHash: issued.paymentHash })).toMatchObject({
      ok: true,
      ownerSats: 997,
      duplicate: true,
      state: 'paid',
    });
    expect((await received()) - before).toBe(997_000);
    expect(invoicesAskedBy('webhook')).toEqual([997_000]);
  });

  it('smaller shares accrue, their answers carrying ownerSats too, and are paid once together when their fee reaches the routing budget', async () => {
    const address = owner.address('small');
    const before = await received();
    expect(await split({ amountSats: 500, ownerAddress: address, idempotencyKey: 'a' })).toMatchObject({
      ok: true,
      skipped: true,
      ownerSats: 498,
      ownerMsat: 498_500,
      state: 'accrued',
    });
    expect((await received()) - before).toBe(0);
    const second = await split({ amountSats: 500, ownerAddress: address, idempotencyKey: 'b' });
    expect(second).toMatchObject({ ok: true, ownerSats: 498, ownerMsat: 498_500, state: 'paid' });
    expect(second).not.toHaveProperty('skipped');
    expect((await received()) - before).toBe(997_000);
    expect(invoicesAskedBy('small')).toEqual([997_000]);
    expect(await payoutsTo(address)).toEqual([{ amount_msat: 997_000, max_fee_msat: 3_000, state: 'paid' }]);
  });
});
