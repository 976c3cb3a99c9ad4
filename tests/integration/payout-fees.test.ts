// Who pays the routing fee of a payout, with the default settings, through the
// real local server (POST /api/invoice, the dev wallet, the dev node's signed
// webhook to /api/provider-webhook) on real PostgreSQL and real Redis: the
// service, out of the 0.3% it earned on exactly the payments the payout
// covers, never more; the owner receives exactly its 99.7%. A share whose fee
// cannot fund PAYOUT_MIN_FEE_MSAT (3,000 msat: the 0.3% of 1,000 sats)
// accrues until the owner's shares together can.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LightningProvider } from 'l402-paywall/lightning';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { stackSkipReason, useStack } from '../support/stack.js';

const skip = await stackSkipReason();

describe.skipIf(skip !== undefined)(`payout routing fees (local server, PostgreSQL, Redis)${skip ? ` [SKIPPED: ${skip}]` : ''}`, () => {
  const stack = useStack();
  let owner: OwnerServer;
  /** The routing-fee cap of every payment the service made. */
  const caps: number[] = [];

  beforeAll(async () => {
    const real = stack.server.ctx;
    const node = real.devNode!;
    const recording: LightningProvider = {
      name: 'dev',
      createInvoice: (r) => node.createInvoice(r),
      lookupInvoice: (h) => node.lookupInvoice(h),
      lookupPayment: (h) => node.lookupPayment(h),
      balance: () => node.balance(),
      readWebhook: (d) => node.readWebhook(d),
      payInvoice(request) {
        caps.push(request.maxFeeMsat);
        return node.payInvoice(request);
      },
    };
    stack.server.use({ ...real, provider: recording });
    owner = await startOwnerServer({ store: real.store });
  });
  afterAll(() => owner?.close());

  async function managedPayment(address: string, amountSats: number): Promise<void> {
    const post = (path: string, body: unknown) =>
      fetch(`${stack.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const issued = await post('/api/invoice', { amountSats, ownerAddress: address });
    expect(issued.status).toBe(200);
    const { paymentRequest } = (await issued.json()) as { paymentRequest: string };
    expect((await post('/api/dev/pay', { invoice: paymentRequest })).status).toBe(200); // the webhook, split and payout run before it answers
  }

  /** Every payout of the owner with what its splits owed and earned. */
  const ledger = (address: string) =>
    stack.db.query<{ amount_msat: number; max_fee_msat: number; routing_fee_msat: number | null; state: string; owed: number; earned: number }>(
      `SELECT p.amount_msat::int, p.max_fee_msat::int, p.routing_fee_msat::int, p.state,
              (SELECT sum(owner_msat)::int FROM splits s WHERE s.payout_id = p.id) AS owed,
              (SELECT sum(fee_msat)::int FROM splits s WHERE s.payout_id = p.id) AS earned
       FROM payouts p WHERE p.owner_address = $1 ORDER BY p.created_at`,
      [address],
    );

  it('a 1,000-sat payment earns 3,000 msat, the routing budget: paid out at once, the service spending at most what it earned', async () => {
    const address = owner.address('spec');
    const ownerBefore = (await owner.node.balance()).balanceMsat;
    await managedPayment(address, 1000);
    expect(await ledger(address)).toEqual([{ amount_msat: 997_000, max_fee_msat: 3_000, routing_fee_msat: 0, state: 'paid', owed: 997_000, earned: 3_000 }]);
    expect((await owner.node.balance()).balanceMsat - ownerBefore).toBe(997_000); // exactly the 99.7%
  });

  it('a 500-sat payment earns 1,500 msat, less than the routing budget: the share accrues and the service pays nothing until the next one', async () => {
    const address = owner.address('small');
    const ownerBefore = (await owner.node.balance()).balanceMsat;
    await managedPayment(address, 500);
    expect(await ledger(address)).toEqual([]);
    expect(await stack.db.query('SELECT owner_msat::int, fee_msat::int, state FROM splits WHERE owner_address = $1', [address])).toEqual([
      { owner_msat: 498_500, fee_msat: 1_500, state: 'accrued' },
    ]);
    expect((await owner.node.balance()).balanceMsat).toBe(ownerBefore);

    // The next payment brings the earned fee to 3,000 msat: one payout of both shares, its fee cap within what was earned.
    await managedPayment(address, 500);
    expect(await ledger(address)).toEqual([{ amount_msat: 997_000, max_fee_msat: 3_000, routing_fee_msat: 0, state: 'paid', owed: 997_000, earned: 3_000 }]);
    expect((await owner.node.balance()).balanceMsat - ownerBefore).toBe(997_000);
  });

  it('whatever the amounts, no payout may spend more on routing than the service earned on it, and each pays exactly what its splits owe', async () => {
    const address = owner.address('mixed');
    for (const sats of [1, 7, 250, 1200, 3, 90, 1700, 40_000]) await managedPayment(address, sats);
    const payouts = await ledger(address);
    expect(payouts.length).toBeGreaterThan(0);
    for (const payout of payouts) {
      expect(payout.amount_msat).toBe(payout.owed);
      expect(payout.max_fee_msat).toBeLessThanOrEqual(payout.earned);
      expect(payout.max_fee_msat).toBeGreaterThanOrEqual(3_000);
    }
    // What the provider was told it may spend is that cap, payment by payment.
    for (const cap of caps) expect(cap).toBeLessThanOrEqual(Math.max(...payouts.map((p) => p.earned)));
    const accrued = await stack.db.query<{ fee: number }>(
      "SELECT coalesce(sum(fee_msat), 0)::int AS fee FROM splits WHERE owner_address = $1 AND state = 'accrued'",
      [address],
    );
    expect(accrued[0]!.fee).toBeLessThan(3_000); // what is left waits for more
  });
});
