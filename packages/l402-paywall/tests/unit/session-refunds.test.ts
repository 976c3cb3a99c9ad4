// Refunds of closed sessions (src/schemes/session/refunds.ts) through the real dev
// Lightning node: the client's amountless return invoice is paid exactly what
// was not spent, once, whether attempts race, fail, or lose their answer
// after paying; a refund that cannot be paid is given up with its reason and
// stays visible.
import { describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore, type DevNode } from 'l402-paywall/backends';
import { PaymentFailed, ProviderUnavailable, type LightningProvider } from 'l402-paywall/lightning';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';
import { canRefund, closeIdleSessions, refundDue, refundPayment, refundSession, type RefundOptions } from '../../src/schemes/session/refunds.js';
import { feeTakingBackend } from '../support/fee-taking-backend.js';

const SAT = 1000;

/** A server node and a client's wallet node on one fake network; the client has paid a 20-sat deposit. */
async function paidSession(options: { idleTimeoutMs?: number; returnExpirySeconds?: number } = {}) {
  const store = memoryDevNodeStore();
  const server = createDevNode({ store });
  const wallet = createDevNode({ store });
  const deposit = await server.createInvoice({ amountMsat: 20 * SAT, memo: 'session deposit' });
  await server.pay(deposit.invoice); // the dev wallet: the server's node now holds the 20 sats
  const returnInvoice = await wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: options.returnExpirySeconds ?? 3600 });
  const ledger = memorySessionLedger();
  const now = Date.now();
  await ledger.open(
    { id: deposit.paymentHash, depositMsat: 20 * SAT, returnInvoice: returnInvoice.invoice, idleTimeoutMs: options.idleTimeoutMs ?? 60_000 },
    now,
  );
  return { server, wallet, ledger, id: deposit.paymentHash, returnHash: returnInvoice.paymentHash, now };
}

const received = async (wallet: DevNode, hash: string) => {
  const status = await wallet.lookupInvoice(hash);
  return status?.settled ? status.amountMsat : 0;
};

describe('refunds of closed sessions', () => {
  it('pay the return invoice exactly what was not spent, and the ledger says paid', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession();
    await ledger.spend(id, 7 * SAT + 250, now + 1);
    await ledger.close(id, 'client', now + 2);
    const options: RefundOptions = { ledger, provider: server, now: () => now + 10 };
    expect(await refundSession(options, id)).toEqual({ id, result: 'paid', amountMsat: 13 * SAT - 250 });
    expect(await received(wallet, returnHash)).toBe(13 * SAT - 250);
    expect((await server.balance()).balanceMsat).toBe(7 * SAT + 250);
    expect((await ledger.get(id))?.refund).toMatchObject({ state: 'paid', amountMsat: 13 * SAT - 250, attempts: 1 });
    expect(await refundSession(options, id)).toEqual({ id, result: 'not-due' });
  });

  it('racing workers: one pays, the others find nothing due', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession();
    await ledger.close(id, 'client', now + 1);
    const reports = await Promise.all(Array.from({ length: 5 }, () => refundSession({ ledger, provider: server, now: () => now + 10 }, id)));
    expect(reports.map((r) => r.result).sort()).toEqual(['not-due', 'not-due', 'not-due', 'not-due', 'paid']);
    expect(await received(wallet, returnHash)).toBe(20 * SAT);
    expect((await server.balance()).balanceMsat).toBe(0);
  });

  it('a failed payment is retried after its backoff, not before, and paid once', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession();
    await ledger.close(id, 'client', now);
    let failures = 1;
    const flaky: LightningProvider = {
      ...server,
      payAmountlessInvoice: async (request) => {
        if (failures-- > 0) throw new PaymentFailed('no route');
        return server.payAmountlessInvoice(request);
      },
    };
    let clock = now + 10;
    const options: RefundOptions = { ledger, provider: flaky, now: () => clock, backoffMs: () => 30_000 };
    expect(await refundDue(options)).toEqual([{ id, result: 'failed', amountMsat: 20 * SAT, detail: 'no route' }]);
    expect((await ledger.get(id))?.refund).toMatchObject({ state: 'failed', lastError: 'no route', nextAttemptAt: now + 10 + 30_000 });
    clock += 29_999;
    expect(await refundDue(options)).toEqual([]);
    clock += 1;
    expect(await refundDue(options)).toEqual([{ id, result: 'paid', amountMsat: 20 * SAT }]);
    expect(await received(wallet, returnHash)).toBe(20 * SAT);
  });

  it('an attempt that paid but lost its answer is found paid by the next one, never paid twice', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession();
    await ledger.close(id, 'client', now);
    let calls = 0;
    const lossy: LightningProvider = {
      ...server,
      payAmountlessInvoice: async (request) => {
        calls++;
        await server.payAmountlessInvoice(request);
        throw new ProviderUnavailable('timed out');
      },
    };
    let clock = now + 1;
    const options: RefundOptions = { ledger, provider: lossy, now: () => clock, backoffMs: () => 1_000 };
    expect(await refundSession(options, id)).toMatchObject({ result: 'failed', detail: 'outcome unknown: timed out' });
    clock += 1_000;
    expect(await refundSession(options, id)).toEqual({ id, result: 'found-paid', amountMsat: 20 * SAT });
    expect(calls).toBe(1);
    expect(await received(wallet, returnHash)).toBe(20 * SAT);
    expect((await server.balance()).balanceMsat).toBe(0);
    expect((await ledger.get(id))?.refund).toMatchObject({ state: 'paid', attempts: 2 });
  });

  it('gives up, with the reason kept, when the return invoice expired or attempts run out', async () => {
    const expired = await paidSession({ returnExpirySeconds: 1 });
    await expired.ledger.close(expired.id, 'client', expired.now);
    const later = () => expired.now + 5_000;
    expect(await refundSession({ ledger: expired.ledger, provider: expired.server, now: later }, expired.id)).toMatchObject({
      result: 'given-up',
      detail: 'the return invoice expired before the refund could be paid',
    });
    expect((await expired.ledger.get(expired.id))?.refund).toMatchObject({
      state: 'given-up',
      amountMsat: 20 * SAT,
      reason: 'the return invoice expired before the refund could be paid',
    });

    const stuck = await paidSession();
    await stuck.ledger.close(stuck.id, 'client', stuck.now);
    const failing: LightningProvider = {
      ...stuck.server,
      payAmountlessInvoice: async () => {
        throw new PaymentFailed('no route');
      },
    };
    let clock = stuck.now;
    const options: RefundOptions = { ledger: stuck.ledger, provider: failing, now: () => clock, backoffMs: () => 1, maxAttempts: 3 };
    const results = [];
    for (let i = 0; i < 3; i++) {
      clock += 10;
      results.push((await refundSession(options, stuck.id)).result);
    }
    expect(results).toEqual(['failed', 'failed', 'given-up']);
    expect((await stuck.ledger.get(stuck.id))?.refund).toMatchObject({ state: 'given-up', reason: 'not paid after 3 attempts; the last: no route' });
  });

  it('closes idle sessions and refunds them', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession({ idleTimeoutMs: 1_000 });
    await ledger.spend(id, 2 * SAT, now);
    expect(await closeIdleSessions({ ledger, provider: server, now: () => now + 999 })).toEqual([]);
    expect(await closeIdleSessions({ ledger, provider: server, now: () => now + 1_000 })).toEqual([{ id, result: 'paid', amountMsat: 18 * SAT }]);
    expect(await received(wallet, returnHash)).toBe(18 * SAT);
    expect(await ledger.get(id)).toMatchObject({ status: 'closed', closedBecause: 'idle' });
  });

  it('a backend that cannot pay an invoice without an amount cannot refund, and says so', async () => {
    const { server, ledger, id } = await paidSession();
    const { payAmountlessInvoice: _cannot, ...limited } = server;
    expect(canRefund(limited)).toBe(false);
    await expect(refundSession({ ledger, provider: limited }, id)).rejects.toThrow(
      'The dev backend cannot pay invoices without an amount, so it cannot refund sessions',
    );
  });
});

describe('the routing fee is charged to the refund', () => {
  it('a backend that takes the whole fee limit: the service pays out exactly the refund due, the client receives the refund less the fee', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession();
    await ledger.spend(id, 5 * SAT, now + 1);
    await ledger.close(id, 'client', now + 2);
    const { provider, fees } = feeTakingBackend(server, wallet);
    const before = (await server.balance()).balanceMsat; // the 20-sat deposit
    expect(await refundSession({ ledger, provider, now: () => now + 10 }, id)).toEqual({ id, result: 'paid', amountMsat: 15 * SAT, sentMsat: 14 * SAT });
    expect(fees).toEqual([SAT]); // the default: 1% rounded up to a whole sat, at least 1 sat
    expect(await received(wallet, returnHash)).toBe(14 * SAT);
    // The service's whole outlay (the payment and its fee) is the refund due, never more.
    expect(before - (await server.balance()).balanceMsat).toBe(15 * SAT);
    expect((await ledger.get(id))?.refund).toMatchObject({ state: 'paid', amountMsat: 15 * SAT });
  });

  it("the operator's fee limit is the one charged; a refund that does not cover it is given up, nothing sent; the dev node keeps nothing back", async () => {
    const large = await paidSession();
    await large.ledger.close(large.id, 'client', large.now);
    const { provider, fees } = feeTakingBackend(large.server, large.wallet);
    const maxFeeMsat = (amountMsat: number) => Math.floor(amountMsat / 4) + 250; // 5,250 msat of a 20-sat refund: kept back as 6 whole sats
    expect(await refundSession({ ledger: large.ledger, provider, maxFeeMsat, now: () => large.now + 1 }, large.id)).toMatchObject({
      result: 'paid',
      sentMsat: 14 * SAT,
    });
    expect(fees).toEqual([5_250]);
    expect(await received(large.wallet, large.returnHash)).toBe(14 * SAT);
    expect((await large.server.balance()).balanceMsat).toBe(750); // 20 - 14 - 5.25 sats: never less than 0

    const dust = await paidSession();
    await dust.ledger.spend(dust.id, 19 * SAT, dust.now);
    await dust.ledger.close(dust.id, 'client', dust.now + 1);
    const taking = feeTakingBackend(dust.server, dust.wallet);
    expect(await refundSession({ ledger: dust.ledger, provider: taking.provider, now: () => dust.now + 2 }, dust.id)).toMatchObject({
      result: 'given-up',
      sentMsat: 0,
      detail: 'the refund (1000 msat) does not cover the routing fee limit charged to it (1000 msat): nothing is left to send',
    });
    expect(taking.fees).toEqual([]);

    expect(refundPayment(dust.server, 15 * SAT)).toEqual({ sendMsat: 15 * SAT, maxFeeMsat: 0 });
    expect(refundPayment({}, 250 * SAT)).toEqual({ sendMsat: 247 * SAT, maxFeeMsat: 3 * SAT });
    expect(refundPayment({}, 15 * SAT, () => 0)).toEqual({ sendMsat: 15 * SAT, maxFeeMsat: 0 });
    expect(() => refundPayment({}, 15 * SAT, () => -1)).toThrow(RangeError);
  });
});

describe('a payment in flight', () => {
  /** The server's node, whose first payment pays but loses its answer, and whose look-ups then say `pending` as long as `pending` says. */
  function inFlightBackend(server: DevNode, lookups: Array<'pending' | 'failed' | 'real'>, pays: 'lost' | 'fail') {
    let payments = 0;
    const provider: LightningProvider = {
      ...server,
      payAmountlessInvoice: async (request) => {
        payments += 1;
        if (pays === 'fail' && payments > 1) throw new PaymentFailed('no route');
        if (pays === 'lost') await server.payAmountlessInvoice(request);
        throw new ProviderUnavailable('timed out');
      },
      lookupPayment: async (hash) => {
        const next = lookups.shift() ?? 'real';
        if (next === 'real') return server.lookupPayment(hash);
        return { paymentHash: hash, state: next };
      },
    };
    return { provider, payments: () => payments };
  }

  it('looked up as pending 20 times, then succeeded: recorded paid, never given up, paid once (the in-flight checks do not count toward the 3 attempts)', async () => {
    const { server, wallet, ledger, id, returnHash, now } = await paidSession();
    await ledger.close(id, 'client', now);
    const backend = inFlightBackend(server, Array(20).fill('pending'), 'lost');
    let clock = now;
    const options: RefundOptions = { ledger, provider: backend.provider, now: () => clock, backoffMs: () => 1_000, maxAttempts: 3 };
    const results: string[] = [];
    for (let i = 0; i < 22; i++) {
      clock += 1_000;
      results.push((await refundSession(options, id)).result);
    }
    expect(results).toEqual(['failed', ...Array(20).fill('failed'), 'found-paid']);
    expect(backend.payments()).toBe(1);
    expect(await received(wallet, returnHash)).toBe(20 * SAT);
    expect((await ledger.get(id))?.refund).toMatchObject({ state: 'paid', attempts: 22, inFlightChecks: 20 });
  });

  it('in flight, then failed for good: given up only after 3 attempts that could pay; an unknown outcome is never given up', async () => {
    const { server, ledger, id, now } = await paidSession();
    await ledger.close(id, 'client', now);
    const backend = inFlightBackend(server, [...Array(5).fill('pending'), 'failed', 'failed'], 'fail');
    let clock = now;
    const options: RefundOptions = { ledger, provider: backend.provider, now: () => clock, backoffMs: () => 1_000, maxAttempts: 3 };
    const results: string[] = [];
    for (let i = 0; i < 8; i++) {
      clock += 1_000;
      results.push((await refundSession(options, id)).result);
    }
    // 1: outcome unknown; 2-6: in flight; 7: failed (2 counted); 8: failed, the 3rd counted: given up.
    expect(results).toEqual([...Array(7).fill('failed'), 'given-up']);
    expect((await ledger.get(id))?.refund).toMatchObject({ state: 'given-up', reason: 'not paid after 3 attempts; the last: no route' });

    const dark = await paidSession();
    await dark.ledger.close(dark.id, 'client', dark.now);
    const unreachable: LightningProvider = {
      ...dark.server,
      payAmountlessInvoice: async () => {
        throw new ProviderUnavailable('timed out');
      },
      lookupPayment: async () => {
        throw new ProviderUnavailable('timed out');
      },
    };
    let at = dark.now;
    for (let i = 0; i < 10; i++) {
      at += 1_000;
      expect((await refundSession({ ledger: dark.ledger, provider: unreachable, now: () => at, backoffMs: () => 1_000, maxAttempts: 3 }, dark.id)).result).toBe(
        'failed',
      );
    }
    expect((await dark.ledger.get(dark.id))?.refund).toMatchObject({ state: 'failed', attempts: 10 });
  });
});

describe('the dev node: invoices without an amount', () => {
  it('are paid what the payer names, once; payInvoice refuses them and payAmountlessInvoice refuses invoices with an amount', async () => {
    const store = memoryDevNodeStore();
    const payer = createDevNode({ store });
    const payee = createDevNode({ store });
    await payer.pay((await payer.createInvoice({ amountMsat: 50 * SAT })).invoice); // fund the payer
    const open = await payee.createAmountlessInvoice({ memo: 'any amount' });
    await expect(payer.payInvoice({ invoice: open.invoice, maxFeeMsat: 0 })).rejects.toThrow(PaymentFailed);
    expect(await payee.lookupInvoice(open.paymentHash)).toMatchObject({ settled: false, amountMsat: 0 });
    await payer.payAmountlessInvoice({ invoice: open.invoice, amountMsat: 12_345, maxFeeMsat: 0 });
    expect(await payee.lookupInvoice(open.paymentHash)).toMatchObject({ settled: true, amountMsat: 12_345 });
    await expect(payer.payAmountlessInvoice({ invoice: open.invoice, amountMsat: 1, maxFeeMsat: 0 })).rejects.toThrow('Invoice already paid');
    expect((await payer.balance()).balanceMsat).toBe(50 * SAT - 12_345);
    const fixed = await payee.createInvoice({ amountMsat: SAT });
    await expect(payer.payAmountlessInvoice({ invoice: fixed.invoice, amountMsat: SAT, maxFeeMsat: 0 })).rejects.toThrow('names its amount');
    await expect(payer.pay(open.invoice)).rejects.toThrow();
  });
});
