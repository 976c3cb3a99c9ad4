import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createBudget, createTokenStore, L402ClientError, type BudgetReservation } from 'l402-paywall/client';

// The budget's rules in the plainest form: every charge in a list, summed on each question.
function referenceBudget(totalMsat: number, perHostMsat: number | undefined, windowMs: number | undefined, now: () => number) {
  let charges: { host: string; msat: number; at: number; settled: boolean }[] = [];
  const live = () => charges.filter((c) => !c.settled || windowMs === undefined || c.at > now() - windowMs);
  const sum = (host?: string, settledOnly = false) =>
    live()
      .filter((c) => (host === undefined || c.host === host) && (!settledOnly || c.settled))
      .reduce((total, c) => total + c.msat, 0);
  return {
    reserve(host: string, msat: number) {
      if (sum() + msat > totalMsat || (perHostMsat !== undefined && sum(host) + msat > perHostMsat)) return undefined;
      const charge = { host, msat, at: now(), settled: false };
      charges.push(charge);
      let done = false;
      return {
        commit: () => {
          if (done) return;
          done = true;
          charge.settled = true;
          charge.at = now();
        },
        release: () => {
          if (done) return;
          done = true;
          charges = charges.filter((c) => c !== charge);
        },
      };
    },
    spentMsat: (host?: string) => sum(host, true),
    remainingMsat: (host?: string) =>
      Math.max(0, Math.min(totalMsat - sum(), host === undefined || perHostMsat === undefined ? Infinity : perHostMsat - sum(host))),
  };
}

describe('createBudget', () => {
  it('holds the total and the per-host limit, counting payments in flight', () => {
    const budget = createBudget({ totalSats: 10, perHostSats: 6 });
    const a = budget.reserve('a.example', 5_000);
    expect(() => budget.reserve('a.example', 2_000)).toThrow(expect.objectContaining({ code: 'BUDGET_EXCEEDED' }));
    const b = budget.reserve('b.example', 5_000);
    expect(() => budget.reserve('c.example', 1)).toThrow(L402ClientError);
    expect(budget.spent().totalMsat).toBe(0); // nothing settled yet
    a.commit();
    b.release(); // failed payment: given back
    expect(budget.spent()).toEqual({ totalMsat: 5_000, totalSats: 5, byHost: { 'a.example': { msat: 5_000, sats: 5 } } });
    expect(budget.remainingMsat()).toBe(5_000);
    expect(budget.remainingMsat('a.example')).toBe(1_000);
    b.commit(); // settling twice, or after release, changes nothing
    a.release();
    expect(budget.spent().totalMsat).toBe(5_000);
  });

  it('forgets spending older than its window', () => {
    let now = 1_000_000;
    const budget = createBudget({ totalSats: 2, windowSeconds: 60, now: () => now });
    budget.reserve('h', 2_000).commit();
    expect(() => budget.reserve('h', 1_000)).toThrow(expect.objectContaining({ code: 'BUDGET_EXCEEDED' }));
    now += 60_001;
    expect(budget.spent().totalMsat).toBe(0);
    budget.reserve('h', 1_000).commit();
    expect(budget.spent().totalSats).toBe(1);
  });

  it('answers as the plain rules do, whatever the sequence of charges, payments, failures and time', () => {
    const host = fc.constantFrom('a.example', 'b.example', 'c.example');
    const step = fc.oneof(
      fc.record({ kind: fc.constant('reserve' as const), host, msat: fc.integer({ min: 1, max: 4_000 }) }),
      fc.record({ kind: fc.constantFrom('commit' as const, 'release' as const), which: fc.nat() }),
      fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: 3_000 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 20 }),
        fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
        fc.array(step, { maxLength: 80 }),
        (totalSats, perHostSats, windowSeconds, steps) => {
          let clock = 1_000_000;
          const now = () => clock;
          const budget = createBudget({ totalSats, perHostSats, windowSeconds, now });
          const reference = referenceBudget(
            totalSats * 1000,
            perHostSats === undefined ? undefined : perHostSats * 1000,
            windowSeconds === undefined ? undefined : windowSeconds * 1000,
            now,
          );
          const held: [BudgetReservation, { commit(): void; release(): void }][] = [];
          for (const s of steps) {
            if (s.kind === 'wait') clock += s.ms;
            else if (s.kind === 'reserve') {
              const expected = reference.reserve(s.host, s.msat);
              let reservation: BudgetReservation | undefined;
              try {
                reservation = budget.reserve(s.host, s.msat);
              } catch (error) {
                expect(error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
              }
              expect(reservation !== undefined).toBe(expected !== undefined);
              if (reservation && expected) held.push([reservation, expected]);
            } else if (held.length > 0) {
              const [ours, theirs] = held[s.which % held.length]!;
              ours[s.kind]();
              theirs[s.kind]();
            }
            const spent = budget.spent();
            expect(spent.totalMsat).toBe(reference.spentMsat());
            for (const h of ['a.example', 'b.example', 'c.example']) {
              expect(spent.byHost[h]?.msat ?? 0).toBe(reference.spentMsat(h));
              expect(budget.remainingMsat(h)).toBe(reference.remainingMsat(h));
            }
            expect(budget.remainingMsat()).toBe(reference.remainingMsat());
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('keeps running totals: a million payments charge and report like the first', () => {
    const budget = createBudget({ totalSats: 1_000_000, perHostSats: 1_000_000 });
    for (let i = 0; i < 1_000_000; i++) budget.reserve(i % 2 ? 'a.example' : 'b.example', 1_000).commit();
    expect(budget.spent()).toEqual({
      totalMsat: 1e9,
      totalSats: 1e6,
      byHost: { 'a.example': { msat: 5e8, sats: 5e5 }, 'b.example': { msat: 5e8, sats: 5e5 } },
    });
    expect(() => budget.reserve('a.example', 1)).toThrow(expect.objectContaining({ code: 'BUDGET_EXCEEDED' }));
  });

  it('refuses nonsense options', () => {
    expect(() => createBudget({ totalSats: -1 })).toThrow(TypeError);
    expect(() => createBudget({ totalSats: 1.5 })).toThrow(TypeError);
    expect(() => createBudget({ totalSats: 1, windowSeconds: 0 })).toThrow(TypeError);
    expect(() => createBudget({ totalSats: 1 }).reserve('h', 0)).toThrow(RangeError);
  });
});

describe('createTokenStore', () => {
  it('keeps at most maxEntries tokens, dropping the one set longest ago', () => {
    const store = createTokenStore({ maxEntries: 3 });
    const credential = (n: number) => ({ authorization: `L402 t${n}:p`, usesLeft: Infinity });
    for (const n of [1, 2, 3]) store.set(`https://a.example/${n}`, credential(n));
    store.set('https://a.example/1', credential(11)); // set again: now the newest
    store.set('https://a.example/4', credential(4));
    expect(store.get('https://a.example/2')).toBeUndefined();
    expect(['1', '3', '4'].map((n) => store.get(`https://a.example/${n}`)?.authorization)).toEqual(['L402 t11:p', 'L402 t3:p', 'L402 t4:p']);
    expect(() => createTokenStore({ maxEntries: 0 })).toThrow(/maxEntries/);
  });
});
