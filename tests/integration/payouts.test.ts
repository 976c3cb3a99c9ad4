// Payouts to owners' Lightning Addresses, on the real local server and real
// PostgreSQL: hostile owner servers get nothing and the ledger says why; a
// provider failing mid-payout is retried by the cron and pays exactly once;
// small shares accrue and are paid together; a payment whose webhook never
// came is found by the cron.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PaymentFailed, ProviderConfigError, ProviderUnavailable, type LightningProvider } from 'l402-paywall/lightning';
import type { ServiceContext } from '../../lib/service/context.js';
import { issueInvoice } from '../../lib/service/money/invoices.js';
import { confirmPayment } from '../../lib/service/money/managed.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';
import { startOwnerServer, type OwnerBehaviour, type OwnerServer } from '../support/owner-server.js';

const backends = await databaseBackends();
const postgres = backends.find((b) => b.name === 'PostgreSQL')!;
const CRON_SECRET = 'cron-secret-for-payout-tests-0123456789';

type Fault = 'none' | 'unavailable-before-paying' | 'payment-failed' | 'unavailable-after-paying' | 'credentials-refused' | 'queued';

describe.skipIf(postgres.skip)('payouts (local server, PostgreSQL)', () => {
  // PAYOUT_MIN_FEE_MSAT 0: small test payments are paid out at once (tests/integration/payout-fees.test.ts covers the default).
  const server = useDevServerOn(postgres, () => ({
    CRON_SECRET,
    OUTBOUND_TIMEOUT_MS: '1000',
    SPLIT_MIN_SATS: '100',
    PAYOUT_MAX_ATTEMPTS: '3',
    PAYOUT_MIN_FEE_MSAT: '0',
  }));
  let owner: OwnerServer;
  let real: ServiceContext;
  let fault: Fault = 'none';
  let payCalls = 0;
  /** Payments a backend accepted without answering or recording them yet (an NWC request waiting on the relay for an offline wallet): they go through later. */
  let queued: (() => Promise<unknown>)[] = [];

  beforeAll(async () => {
    real = server.ctx;
    const node = real.devNode!;
    // The service's own dev node, with a payInvoice that fails the way real backends do.
    const flaky: LightningProvider = {
      name: 'dev',
      createInvoice: (r) => node.createInvoice(r),
      lookupInvoice: (h) => node.lookupInvoice(h),
      lookupPayment: (h) => node.lookupPayment(h),
      balance: () => node.balance(),
      readWebhook: (d) => node.readWebhook(d),
      async payInvoice(request) {
        payCalls += 1;
        const now = fault;
        fault = 'none'; // each fault happens once
        if (now === 'unavailable-before-paying') throw new ProviderUnavailable('connection reset (test)');
        if (now === 'payment-failed') throw new PaymentFailed('no route (test)');
        if (now === 'credentials-refused') throw new ProviderConfigError('LNBITS_ADMIN_KEY', 'LNbits refused the admin key (test)');
        if (now === 'queued') {
          queued.push(() => node.payInvoice(request));
          throw new ProviderUnavailable('NWC wallet did not answer pay_invoice (test)');
        }
        const paid = await node.payInvoice(request);
        if (now === 'unavailable-after-paying') throw new ProviderUnavailable('timed out waiting for the answer (test)');
        return paid;
      },
    };
    server.use({ ...real, provider: flaky });
    owner = await startOwnerServer({ store: real.store });
  });
  afterAll(async () => {
    await owner?.close();
  });
  beforeEach(() => {
    fault = 'none';
    queued = [];
    owner.setBehaviour('honest');
  });

  /** A managed payment of `amountSats` to `address`, confirmed as the webhook would. */
  async function paidTo(address: string, amountSats: number): Promise<string> {
    const ctx = server.ctx;
    const issued = await issueInvoice(ctx, { amountSats, ownerAddress: address });
    await ctx.devNode!.pay(issued.paymentRequest);
    await confirmPayment(ctx, issued.paymentHash, 'webhook');
    return issued.paymentHash;
  }

  function cron(secret = CRON_SECRET): Promise<Response> {
    return fetch(`${server.url}/api/cron/payouts`, { headers: { authorization: `Bearer ${secret}` } });
  }

  const ownerBalance = async () => (await owner.node.balance()).balanceMsat;
  const payoutsOf = (address: string) =>
    server.db.query('SELECT id, state, amount_msat, reason, attempts, invoice_hash FROM payouts WHERE owner_address = $1 ORDER BY created_at', [address]);
  const makeDue = (address: string) => server.db.query("UPDATE payouts SET next_attempt_at = now() - interval '1 second' WHERE owner_address = $1", [address]);

  describe('hostile owner servers: nothing is paid, and the ledger says why', () => {
    const cases: [OwnerBehaviour, string, Record<string, unknown>?][] = [
      ['invoice-more-than-asked', 'INVOICE_AMOUNT_MISMATCH'],
      ['invoice-less-than-asked', 'INVOICE_AMOUNT_MISMATCH'],
      ['zero-amount', 'INVOICE_AMOUNT_MISMATCH'],
      ['tampered-payment-hash', 'INVALID_INVOICE'],
      ['wrong-network', 'WRONG_NETWORK', { network: 'testnet' }],
      ['wrong-network', 'WRONG_NETWORK', { network: 'signet' }],
      ['wrong-description-hash', 'DESCRIPTION_HASH_MISMATCH'],
      ['expired-invoice', 'INVOICE_EXPIRED'],
      ['wrong-network', 'WRONG_NETWORK'],
      ['redirect', 'HOST_REFUSED', { redirectTo: 'http://10.0.0.1/' }],
      ['private-callback', 'HOST_REFUSED'],
      ['slow', 'TIMEOUT'],
      ['huge', 'RESPONSE_TOO_LARGE'],
    ];
    it.each(cases)('%s -> %s %j', async (behaviour, reason, settings) => {
      owner.setBehaviour(behaviour, settings);
      const address = owner.address(`hostile-${behaviour}${settings?.network ? `-${String(settings.network)}` : ''}`);
      const ownerBefore = await ownerBalance();
      const serviceBefore = (await server.ctx.provider.balance()).balanceMsat;
      const calls = payCalls;

      const hash = await paidTo(address, 1000);
      expect(payCalls).toBe(calls); // the provider was never asked to pay
      expect(await ownerBalance()).toBe(ownerBefore);
      expect((await server.ctx.provider.balance()).balanceMsat - serviceBefore).toBe(1_000_000); // the income, untouched
      expect(await server.db.query('SELECT state, owner_msat FROM splits WHERE payment_hash = $1', [hash])).toEqual([
        { state: 'pending', owner_msat: 997_000 },
      ]);
      const [payout] = await payoutsOf(address);
      expect(payout).toMatchObject({ state: 'pending', amount_msat: 997_000, reason, attempts: 1, invoice_hash: null });
      const attempts = await server.db.query('SELECT outcome, reason, detail FROM payout_attempts WHERE payout_id = $1', [payout!.id]);
      expect(attempts).toEqual([{ outcome: 'refused', reason, detail: expect.any(String) }]);

      // Still hostile at every retry: after PAYOUT_MAX_ATTEMPTS (3) it is failed, still unpaid, and the share stays owed.
      for (let i = 0; i < 2; i++) {
        await makeDue(address);
        expect((await cron()).status).toBe(200);
      }
      expect(await payoutsOf(address)).toEqual([expect.objectContaining({ state: 'failed', reason, attempts: 3 })]);
      expect(await server.db.query('SELECT state FROM splits WHERE payment_hash = $1', [hash])).toEqual([{ state: 'failed' }]);
      expect(await ownerBalance()).toBe(ownerBefore);
      expect(payCalls).toBe(calls);
    });
  });

  it('an invoice for a payment hash nobody can settle: the payment fails, nothing is paid, it stays owed and is retried with that same invoice', async () => {
    owner.setBehaviour('unknown-payment-hash');
    const address = owner.address('unknown-hash');
    const ownerBefore = await ownerBalance();
    const serviceBefore = (await server.ctx.provider.balance()).balanceMsat;
    const calls = payCalls;
    const hash = await paidTo(address, 1000);
    expect(payCalls).toBe(calls + 1); // the invoice passed every check; the payment itself failed
    expect((await server.ctx.provider.balance()).balanceMsat - serviceBefore).toBe(1_000_000); // 0 msat left the service
    const [payout] = await payoutsOf(address);
    expect(payout).toMatchObject({
      state: 'pending',
      amount_msat: 997_000,
      reason: 'PAYMENT_FAILED',
      attempts: 1,
      invoice_hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(await server.db.query('SELECT outcome, reason FROM payout_attempts WHERE payout_id = $1', [payout!.id])).toEqual([
      { outcome: 'failed', reason: 'PAYMENT_FAILED' },
    ]);
    for (let i = 0; i < 2; i++) {
      await makeDue(address);
      expect((await cron()).status).toBe(200);
    }
    expect(payCalls).toBe(calls + 3); // tried at every retry
    // The provider keeps no record of a failed payment, so it might still land: the same invoice is
    // tried again while it can be paid (never a second one), and the payout is not given up meanwhile.
    expect(await payoutsOf(address)).toEqual([
      expect.objectContaining({ state: 'pending', reason: 'PAYMENT_FAILED', attempts: 3, invoice_hash: payout!.invoice_hash }),
    ]);
    expect(
      await server.db.query('SELECT attempt, outcome, reason, invoice_hash FROM payout_attempts WHERE payout_id = $1 ORDER BY attempt', [payout!.id]),
    ).toEqual([1, 2, 3].map((attempt) => ({ attempt, outcome: 'failed', reason: 'PAYMENT_FAILED', invoice_hash: payout!.invoice_hash })));
    expect(await server.db.query('SELECT state, owner_msat FROM splits WHERE payment_hash = $1', [hash])).toEqual([{ state: 'pending', owner_msat: 997_000 }]);
    expect(await ownerBalance()).toBe(ownerBefore);
    expect((await server.ctx.provider.balance()).balanceMsat - serviceBefore).toBe(1_000_000);
  });

  it('a hostile server that turns honest before the attempts run out is paid, once', async () => {
    const address = owner.address('reformed');
    owner.setBehaviour('wrong-description-hash');
    const before = await ownerBalance();
    await paidTo(address, 1000);
    owner.setBehaviour('honest');
    await makeDue(address);
    expect(await (await cron()).json()).toMatchObject({ payouts: { paid: 1 } });
    expect(await ownerBalance()).toBe(before + 997_000);
    expect(await payoutsOf(address)).toEqual([expect.objectContaining({ state: 'paid', attempts: 2 })]);
  });

  it.each<[Fault, string]>([
    ['unavailable-before-paying', 'PAYMENT_UNKNOWN'],
    ['payment-failed', 'PAYMENT_FAILED'],
    ['credentials-refused', 'PROVIDER_MISCONFIGURED'],
    ['unavailable-after-paying', 'PAYMENT_UNKNOWN'],
  ])('provider %s during the payout: retried by the cron, the owner paid exactly once', async (kind, reason) => {
    const address = owner.address(`fault-${kind}`);
    const before = await ownerBalance();
    fault = kind;
    const hash = await paidTo(address, 1000);
    const [first] = await payoutsOf(address);
    expect(first).toMatchObject({ state: 'pending', reason, invoice_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // The owner was paid already only when the provider failed after paying.
    expect(await ownerBalance()).toBe(before + (kind === 'unavailable-after-paying' ? 997_000 : 0));

    // Not due yet: the cron leaves it alone.
    expect(await (await cron()).json()).toMatchObject({ payouts: { attempted: 0 } });
    await makeDue(address);
    const calls = payCalls;
    expect(await (await cron()).json()).toMatchObject({ payouts: { paid: 1 } });
    // After an unknown outcome that did pay, the provider's record settles it: no second payment.
    expect(payCalls - calls).toBe(kind === 'unavailable-after-paying' ? 0 : 1);
    expect(await ownerBalance()).toBe(before + 997_000);
    expect(await payoutsOf(address)).toEqual([expect.objectContaining({ state: 'paid', attempts: 2 })]);
    expect(await server.db.query('SELECT state FROM splits WHERE payment_hash = $1', [hash])).toEqual([{ state: 'paid' }]);

    // More cron runs change nothing.
    await makeDue(address);
    await cron();
    expect(await ownerBalance()).toBe(before + 997_000);
  });

  it('an unknown outcome the backend does not know about yet is paid with the same invoice, never a second one', async () => {
    const address = owner.address('queued-payment');
    const before = await ownerBalance();
    fault = 'queued';
    await paidTo(address, 1000);
    const [first] = await payoutsOf(address);
    expect(first).toMatchObject({ state: 'pending', reason: 'PAYMENT_UNKNOWN', invoice_hash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    // The backend has no record of it yet (lookupPayment: null), and it still holds the request.
    expect(await server.ctx.provider.lookupPayment(first!.invoice_hash as string)).toBeNull();
    // Other customers' money is in the wallet too, so a second payment would not bounce for lack of funds.
    const other = await issueInvoice(server.ctx, { amountSats: 5000 });
    await server.ctx.devNode!.pay(other.paymentRequest);

    await makeDue(address);
    expect(await (await cron()).json()).toMatchObject({ payouts: { paid: 1 } });
    // Now the wallet comes back and works through what it was sent.
    for (const late of queued.splice(0)) await late().catch(() => {});
    expect(await ownerBalance()).toBe(before + 997_000);
    expect(await payoutsOf(address)).toEqual([expect.objectContaining({ state: 'paid', invoice_hash: first!.invoice_hash })]);
  });

  it('shares below SPLIT_MIN_SATS accrue per owner; one payout covers them all once the total reaches it', async () => {
    const address = owner.address('small-shares');
    const before = await ownerBalance();
    const hashes: string[] = [];
    for (let i = 0; i < 3; i++) hashes.push(await paidTo(address, 30)); // 3 x 29_910 msat = 89_730 < 100_000
    expect(await payoutsOf(address)).toEqual([]);
    expect((await server.db.query('SELECT DISTINCT state FROM splits WHERE owner_address = $1', [address])).map((r) => r.state)).toEqual(['accrued']);
    expect(await ownerBalance()).toBe(before);

    hashes.push(await paidTo(address, 30)); // 119_640 msat >= 100_000
    const payouts = await payoutsOf(address);
    expect(payouts).toEqual([expect.objectContaining({ state: 'paid', amount_msat: 4 * 29_910 })]);
    expect(await ownerBalance()).toBe(before + 4 * 29_910);
    const linked = await server.db.query('SELECT state, payout_id FROM splits WHERE owner_address = $1', [address]);
    expect(linked).toEqual(Array(4).fill({ state: 'paid', payout_id: payouts[0]!.id }));
  });

  it('concurrent claims of one owner never cover a share twice', async () => {
    const address = owner.address('claim-race');
    // Accrued shares written straight to the ledger, then 20 settlements race.
    for (let i = 0; i < 10; i++) {
      await server.db.query(
        "INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state) VALUES ($1, $2, 20000, 19940, 60, 'accrued')",
        [`race-${i}-${Date.now()}`, address],
      );
    }
    const before = await ownerBalance();
    const { settleOwner } = await import('../../lib/service/money/payouts.js');
    await Promise.all(Array.from({ length: 20 }, () => settleOwner(server.ctx, address)));
    const payouts = await payoutsOf(address);
    const covered = await server.db.query(
      'SELECT count(*)::int AS n, count(DISTINCT payout_id)::int AS payouts FROM splits WHERE owner_address = $1 AND state = $2',
      [address, 'paid'],
    );
    expect(covered).toEqual([{ n: 10, payouts: payouts.length }]);
    expect(payouts.reduce((sum, p) => sum + Number(p.amount_msat), 0)).toBe(10 * 19_940);
    expect(await ownerBalance()).toBe(before + 10 * 19_940);
  });

  it('a managed payment whose webhook never came is found and paid by the cron', async () => {
    const address = owner.address('no-webhook');
    const ctx = server.ctx;
    const issued = await issueInvoice(ctx, { amountSats: 1000, ownerAddress: address }); // no webhook URL: nothing is announced
    await ctx.devNode!.pay(issued.paymentRequest);
    const before = await ownerBalance();
    await server.db.query("UPDATE managed_invoices SET created_at = now() - interval '1 minute' WHERE payment_hash = $1", [issued.paymentHash]);
    const body = (await (await cron()).json()) as { reconciled: { confirmed: number } };
    expect(body.reconciled.confirmed).toBe(1);
    expect(await ownerBalance()).toBe(before + 997_000);
    expect(await server.db.query('SELECT state, source FROM splits WHERE payment_hash = $1', [issued.paymentHash])).toEqual([
      { state: 'paid', source: 'reconcile' },
    ]);
    expect(await server.db.query('SELECT owner_address FROM payments WHERE payment_hash = $1', [issued.paymentHash])).toEqual([{ owner_address: address }]);
  });

  it('a payment made after the cron first looked at its invoice is still found while new unpaid invoices keep coming', async () => {
    const address = owner.address('late-payer');
    const ctx = server.ctx;
    const issued = await issueInvoice(ctx, { amountSats: 1000, ownerAddress: address }); // no webhook URL: nothing is announced
    // An earlier run looked at it while it was still unpaid; then it was paid.
    await server.db.query(
      "UPDATE managed_invoices SET created_at = now() - interval '5 minutes', checked_at = now() - interval '2 minutes' WHERE payment_hash = $1",
      [issued.paymentHash],
    );
    await ctx.devNode!.pay(issued.paymentRequest);
    // Meanwhile more 402 challenges went out than one run checks, and nobody paid them (as most are).
    const tag = `unpaid-${Date.now()}-`;
    await server.db.query(
      `INSERT INTO managed_invoices (payment_hash, owner_address, amount_msat, created_at, expires_at)
       SELECT encode(sha256(convert_to($1 || g, 'UTF8')), 'hex'), $2, 1000000, now() - interval '1 minute', now() + interval '1 hour' FROM generate_series(1, 200) g`,
      [tag, owner.address('nobody-paid')],
    );
    try {
      const before = await ownerBalance();
      const body = (await (await cron()).json()) as { reconciled: { confirmed: number; checked: number } };
      expect(body.reconciled.confirmed).toBe(1);
      // Every candidate is looked at once in a run (batches until done or the deadline), none twice.
      expect(body.reconciled.checked).toBeGreaterThanOrEqual(201);
      expect(await ownerBalance()).toBe(before + 997_000);
    } finally {
      await server.db.query('DELETE FROM managed_invoices WHERE owner_address = $1', [owner.address('nobody-paid')]);
    }
  });

  it('the cron answers only the scheduler', async () => {
    expect((await cron('wrong')).status).toBe(401);
    expect((await fetch(`${server.url}/api/cron/payouts`)).status).toBe(401);
  });
});
