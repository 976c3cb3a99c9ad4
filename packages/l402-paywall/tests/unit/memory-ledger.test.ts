// The in-process session ledger stays bounded and its sweeps do only what is
// due: settled sessions (refund paid, given up, or nothing to refund) are
// forgotten MEMORY_SESSION_RETENTION_MS after they settled, while money owed
// is never forgotten; and the sweeper's queries (idle sessions, refunds due)
// look at the index entries that are due, not at every session held. Work is
// counted (index entries visited), not timed.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { MEMORY_SESSION_RETENTION_MS, memorySessionLedger, type MemorySessionLedger } from 'l402-paywall/lightning';
import { closeIdleSessions, refundDue } from '../../src/schemes/session/refunds.js';
import { DueIndex } from '../../src/util/due-index.js';

const SAT = 1000;
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const T0 = 1_800_000_000_000;
const id = (n: number) => n.toString(16).padStart(64, '0');
const open = (ledger: MemorySessionLedger, n: number, idleTimeoutMs = HOUR, at = T0) =>
  ledger.open({ id: id(n), depositMsat: 20 * SAT, returnInvoice: `lnbcrt1return${n}`, idleTimeoutMs }, at);

describe('memorySessionLedger: memory', () => {
  it('forgets 8,000 settled sessions an hour after they settled; a refund still owed is kept', async () => {
    const ledger = memorySessionLedger();
    const N = 8_000;
    for (let n = 0; n < N; n++) {
      await open(ledger, n);
      if (n % 4 === 0) await ledger.spend(id(n), 20 * SAT, T0); // spent it all: nothing to refund
      await ledger.close(id(n), 'client', T0 + 1);
      if (n % 4 === 1) {
        const claim = await ledger.claimRefund(id(n), T0 + 2, MINUTE);
        await ledger.settleRefund(id(n), claim!.attempt, { paid: true }, T0 + 3);
      }
      if (n % 4 === 2) {
        const claim = await ledger.claimRefund(id(n), T0 + 2, MINUTE);
        await ledger.settleRefund(id(n), claim!.attempt, { paid: false, givenUp: 'return invoice expired' }, T0 + 3);
      }
      // n % 4 === 3: the refund stays due (the provider was down, say).
    }
    expect(ledger.footprint().sessions).toBe(N);
    // Within the retention a settled session still answers: its close says closed, not unknown.
    expect(await ledger.close(id(0), 'client', T0 + MEMORY_SESSION_RETENTION_MS)).toMatchObject({ ok: false, reason: 'closed' });
    await ledger.idleSessions(T0 + MEMORY_SESSION_RETENTION_MS + 3, 50);
    expect(ledger.footprint().sessions).toBe(N / 4);
    expect(await ledger.get(id(0))).toBeNull();
    expect(await ledger.get(id(1))).toBeNull();
    expect(await ledger.get(id(2))).toBeNull();
    expect(await ledger.get(id(3))).toMatchObject({ status: 'closed', refund: { state: 'due', amountMsat: 20 * SAT } });
    // Long after, money owed is still there to pay, and forgotten an hour after it is paid.
    const later = T0 + 30 * 24 * HOUR;
    expect((await ledger.refundsDue(later, N)).length).toBe(N / 4);
    const claim = await ledger.claimRefund(id(3), later, MINUTE);
    await ledger.settleRefund(id(3), claim!.attempt, { paid: true }, later);
    await ledger.refundsDue(later + MEMORY_SESSION_RETENTION_MS, 1);
    expect(await ledger.get(id(3))).toBeNull();
    expect(ledger.footprint().sessions).toBe(N / 4 - 1);
  });

  it('a top-up that makes a settled session owe a refund again keeps it until that refund settles', async () => {
    const ledger = memorySessionLedger({ retentionMs: 10 * MINUTE });
    await open(ledger, 1);
    await ledger.spend(id(1), 20 * SAT, T0);
    await ledger.close(id(1), 'client', T0 + 1); // settled: nothing to refund
    expect(await ledger.topUp(id(1), id(99), 5 * SAT, T0 + 5 * MINUTE)).toMatchObject({ ok: false, reason: 'closed' });
    await ledger.idleSessions(T0 + HOUR, 1);
    expect(await ledger.get(id(1))).toMatchObject({ refund: { state: 'due', amountMsat: 5 * SAT } });
    expect(await ledger.refundsDue(T0 + HOUR, 5)).toEqual([id(1)]);
  });

  it('a retention that is not a positive whole number of milliseconds is refused, naming it', () => {
    for (const retentionMs of [0, -1, 1.5, Number.NaN]) expect(() => memorySessionLedger({ retentionMs })).toThrow(/retentionMs/);
  });
});

describe('memorySessionLedger: the sweep visits only what is due', () => {
  it('among 4,000 open sessions and 4,000 refunds waiting, finding the 5 idle and the 3 due visits a few dozen entries, not 8,000', async () => {
    const ledger = memorySessionLedger();
    for (let n = 0; n < 4_000; n++) await open(ledger, n);
    for (let n = 4_000; n < 8_000; n++) {
      await open(ledger, n);
      await ledger.close(id(n), 'client', T0);
      const claim = await ledger.claimRefund(id(n), T0, MINUTE);
      await ledger.settleRefund(id(n), claim!.attempt, { paid: false, error: 'no route', retryAt: T0 + HOUR }, T0);
    }
    for (let n = 20_000; n < 20_005; n++) await open(ledger, n, MINUTE);
    for (let n = 20_005; n < 20_008; n++) {
      await open(ledger, n);
      await ledger.close(id(n), 'client', T0);
    }
    const before = ledger.footprint().sweepVisits;
    const idle = await ledger.idleSessions(T0 + 2 * MINUTE, 50);
    const due = await ledger.refundsDue(T0 + 2 * MINUTE, 50);
    expect(idle.sort()).toEqual([20_000, 20_001, 20_002, 20_003, 20_004].map(id));
    expect(due.sort()).toEqual([20_005, 20_006, 20_007].map(id));
    const visited = ledger.footprint().sweepVisits - before;
    expect(visited).toBeLessThanOrEqual(3 * (5 + 3) + 4);
    // Asked with a limit, the earliest come first, as Redis's ZRANGEBYSCORE answers.
    expect(await ledger.idleSessions(T0 + 2 * MINUTE, 2)).toEqual([20_000, 20_001].map(id));
  });

  it("the library's sweep (closeIdleSessions, refundDue) closes and refunds the idle session through the dev node, visiting only it", async () => {
    const store = memoryDevNodeStore();
    const server = createDevNode({ store });
    const wallet = createDevNode({ store });
    const ledger = memorySessionLedger();
    const now = Date.now();
    for (let n = 0; n < 5_000; n++) await open(ledger, n, HOUR, now);
    const deposit = await server.createInvoice({ amountMsat: 20 * SAT, memo: 'deposit' });
    await server.pay(deposit.invoice);
    const returnInvoice = await wallet.createAmountlessInvoice({ memo: 'refund' });
    await ledger.open({ id: deposit.paymentHash, depositMsat: 20 * SAT, returnInvoice: returnInvoice.invoice, idleTimeoutMs: MINUTE }, now);
    await ledger.spend(deposit.paymentHash, 4 * SAT, now);
    const before = ledger.footprint().sweepVisits;
    const options = { ledger, provider: server, now: () => now + 2 * MINUTE };
    const closed = await closeIdleSessions(options);
    expect(closed.map((report) => report.id)).toEqual([deposit.paymentHash]);
    expect(await refundDue(options)).toEqual([]);
    expect((await wallet.lookupInvoice(returnInvoice.paymentHash))?.amountMsat).toBe(16 * SAT);
    expect(ledger.footprint().sweepVisits - before).toBeLessThanOrEqual(20);
  });
});

describe('DueIndex (the indexes behind it)', () => {
  it('answers as a sorted list would, through random sets, moves, deletes and takes', () => {
    const op = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), id: fc.nat(30), at: fc.nat(100) }),
      fc.record({ kind: fc.constant('delete' as const), id: fc.nat(30) }),
      fc.record({ kind: fc.constant('due' as const), now: fc.nat(100), limit: fc.integer({ min: 1, max: 10 }) }),
      fc.record({ kind: fc.constant('take' as const), now: fc.nat(100) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 200 }), (ops) => {
        const index = new DueIndex();
        const model = new Map<string, number>();
        const sorted = (now: number) =>
          [...model]
            .filter(([, at]) => at <= now)
            .sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1))
            .map(([id]) => id);
        for (const step of ops) {
          if (step.kind === 'set') {
            index.set(`s${step.id}`, step.at);
            model.set(`s${step.id}`, step.at);
          } else if (step.kind === 'delete') {
            index.delete(`s${step.id}`);
            model.delete(`s${step.id}`);
          } else if (step.kind === 'due') {
            expect(index.due(step.now, step.limit)).toEqual(sorted(step.now).slice(0, step.limit));
          } else {
            const due = sorted(step.now);
            expect(index.takeDue(step.now)).toEqual(due);
            for (const id of due) model.delete(id);
          }
          expect(index.size).toBe(model.size);
        }
      }),
      { numRuns: 300 },
    );
  });
});
