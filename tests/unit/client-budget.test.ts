import { describe, expect, it } from 'vitest';
import { createBudget, L402ClientError } from 'l402-paywall/client';

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

  it('refuses nonsense options', () => {
    expect(() => createBudget({ totalSats: -1 })).toThrow(TypeError);
    expect(() => createBudget({ totalSats: 1.5 })).toThrow(TypeError);
    expect(() => createBudget({ totalSats: 1, windowSeconds: 0 })).toThrow(TypeError);
    expect(() => createBudget({ totalSats: 1 }).reserve('h', 0)).toThrow(RangeError);
  });
});
