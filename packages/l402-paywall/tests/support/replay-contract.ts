// The replay stores' contract (ReplayStore in l402-paywall, docs/architecture.md
// decision 3), as one list of cases run against every implementation: the
// library's in-process store (the rule itself: claimUse and releaseUse in
// packages/l402-paywall/src/core/replay.ts), the hosted service's memory store
// (which keeps its records by the same rule), and the Redis scripts (the rule
// again, in Lua) through every client, on a real redis-server.
//
// The last case runs random sequences of claims and releases on the store
// and, side by side, on the in-process implementation: the Redis scripts are
// held to it answer by answer. The in-process implementation is held to a
// reference written out here.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { memoryReplayStore } from 'l402-paywall';
import { describe, expect, it } from 'vitest';

export interface ContractStore {
  claim(paymentHash: string, maxUses: number, expiresAt: number, attempt: string): boolean | Promise<boolean>;
  release(paymentHash: string, attempt: string, expiresAt: number): Promise<void>;
  usedCount(paymentHash: string): number | Promise<number>;
}

export interface ContractOptions {
  /**
   * The in-process store takes a claim without an attempt (or with '') as
   * the paywall's own; every shared store refuses an empty attempt.
   */
  inProcess?: boolean;
  /** Random sequences to run (each a handful of round trips per step on Redis). */
  sequences?: number;
}

const hash = () => randomBytes(32).toString('hex');
const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

/** The rule as a plain model: uses held, and each attempt's state. */
function reference() {
  let held = 0;
  const attempts = new Map<string, boolean>();
  return {
    claim(maxUses: number, attempt: string): boolean {
      if (attempts.has(attempt)) return attempts.get(attempt)!;
      if (held >= maxUses) return false;
      held++;
      attempts.set(attempt, true);
      return true;
    },
    release(attempt: string): void {
      if (attempts.get(attempt) === true) held--;
      attempts.set(attempt, false);
    },
    usedCount: () => held,
  };
}

export function replayContract(
  title: string,
  makeStore: () => ContractStore,
  options: ContractOptions = {},
  describeFn: (name: string, body: () => void) => void = describe,
): void {
  describeFn(`${title}: the replay store contract`, () => {
    it('counts attempts up to maxUses; the same attempt claiming again keeps its one use', async () => {
      const store = makeStore();
      const paid = hash();
      expect(await store.claim(paid, 2, inAnHour(), 'a')).toBe(true);
      expect(await store.claim(paid, 2, inAnHour(), 'a')).toBe(true);
      expect(await store.usedCount(paid)).toBe(1);
      expect(await store.claim(paid, 2, inAnHour(), 'b')).toBe(true);
      expect(await store.claim(paid, 2, inAnHour(), 'c')).toBe(false);
      expect(await store.usedCount(paid)).toBe(2);
      expect(await store.usedCount(hash())).toBe(0);
    });

    it('a release gives back exactly its attempt\u2019s use, once; an attempt that holds none gives nothing back', async () => {
      const store = makeStore();
      const paid = hash();
      await store.claim(paid, 2, inAnHour(), 'a');
      await store.claim(paid, 2, inAnHour(), 'b');
      await store.release(paid, 'a', inAnHour());
      await store.release(paid, 'a', inAnHour());
      await store.release(paid, 'never-claimed', inAnHour());
      expect(await store.usedCount(paid)).toBe(1); // b's use is still held
      // a was released: it stays refused, while a new attempt takes the use it gave back.
      expect(await store.claim(paid, 2, inAnHour(), 'a')).toBe(false);
      expect(await store.claim(paid, 2, inAnHour(), 'c')).toBe(true);
      expect(await store.claim(paid, 2, inAnHour(), 'd')).toBe(false);
      expect(await store.usedCount(paid)).toBe(2);
    });

    it('an attempt released before its claim arrives can never claim', async () => {
      const store = makeStore();
      const paid = hash();
      await store.release(paid, 'late', inAnHour());
      expect(await store.claim(paid, 1, inAnHour(), 'late')).toBe(false);
      expect(await store.usedCount(paid)).toBe(0);
      expect(await store.claim(paid, 1, inAnHour(), 'next')).toBe(true);
    });

    it('lets exactly one of 100 concurrent attempts claim a single use; one attempt sent 20 times at once counts once', async () => {
      const store = makeStore();
      const paid = hash();
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => store.claim(paid, 1, inAnHour(), `attempt-${i}`)));
      expect(results.filter(Boolean)).toHaveLength(1);
      const again = hash();
      const same = await Promise.all(Array.from({ length: 20 }, () => store.claim(again, 3, inAnHour(), 'resent')));
      expect(same).toEqual(Array(20).fill(true));
      expect(await store.usedCount(again)).toBe(1);
    });

    it('takes attempts named like Object.prototype\u2019s properties as attempts like any other', async () => {
      const store = makeStore();
      const paid = hash();
      expect(await store.claim(paid, 1, inAnHour(), 'a')).toBe(true);
      for (const attempt of ['constructor', '__proto__', 'toString', 'hasOwnProperty']) {
        expect(await store.claim(paid, 1, inAnHour(), attempt), attempt).toBe(false);
        await store.release(paid, attempt, inAnHour());
        expect(await store.usedCount(paid), attempt).toBe(1);
      }
      const other = hash();
      expect(await store.claim(other, 1, inAnHour(), '__proto__')).toBe(true);
      expect(await store.claim(other, 1, inAnHour(), '__proto__')).toBe(true);
      await store.release(other, '__proto__', inAnHour());
      expect(await store.usedCount(other)).toBe(0);
      expect(await store.claim(other, 1, inAnHour(), '__proto__')).toBe(false);
    });

    it('refuses an attempt that is too long, or empty (but in process), and an expiry that is not a positive number', async () => {
      const store = makeStore();
      const paid = hash();
      const refused = async (call: () => unknown, error: RegExp) => {
        // A refusal may be thrown or answered as a rejected promise, as long as nothing is counted.
        await expect((async () => call())()).rejects.toThrow(error);
      };
      await refused(() => store.claim(paid, 1, inAnHour(), 'x'.repeat(129)), /attempt/);
      await refused(() => store.release(paid, 'x'.repeat(129), inAnHour()), /attempt/);
      if (!options.inProcess) await refused(() => store.claim(paid, 1, inAnHour(), ''), /attempt/);
      for (const expiresAt of [0, -1, Number.NaN]) {
        await refused(() => store.claim(paid, 1, expiresAt, 'a'), /expiresAt/);
        await refused(() => store.release(paid, 'a', expiresAt), /expiresAt/);
      }
      expect(await store.usedCount(paid)).toBe(0);
      expect(await store.claim(paid, 1, inAnHour(), 'a')).toBe(true);
    });

    it(`answers random sequences of claims and releases as ${options.inProcess ? 'the rule written out' : 'the in-process implementation'}, answer by answer`, async () => {
      const operation = fc.oneof(
        fc.record({ kind: fc.constant('claim' as const), attempt: fc.nat(4), maxUses: fc.integer({ min: 1, max: 3 }) }),
        fc.record({ kind: fc.constant('release' as const), attempt: fc.nat(4) }),
      );
      await fc.assert(
        fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 12 }), async (operations) => {
          const store = makeStore();
          const paid = hash();
          const expiresAt = inAnHour();
          // The oracle: for a shared store, the library's in-process store; for that one, the reference above.
          const oracle = options.inProcess ? reference() : inProcessOracle(paid, expiresAt);
          for (const op of operations) {
            const attempt = `attempt-${op.attempt}`;
            if (op.kind === 'claim')
              expect(await store.claim(paid, op.maxUses, expiresAt, attempt), JSON.stringify(operations)).toBe(oracle.claim(op.maxUses, attempt));
            else {
              await store.release(paid, attempt, expiresAt);
              oracle.release(attempt);
            }
            expect(await store.usedCount(paid), JSON.stringify(operations)).toBe(oracle.usedCount());
          }
        }),
        { seed: 9, numRuns: options.sequences ?? 200 },
      );
    }, 120_000);
  });
}

/** The library's in-process store, on one payment hash, shaped like the reference. */
function inProcessOracle(paid: string, expiresAt: number) {
  const store = memoryReplayStore();
  return {
    claim: (maxUses: number, attempt: string) => store.claim(paid, maxUses, expiresAt, attempt),
    release: (attempt: string) => void store.release(paid, attempt, expiresAt),
    usedCount: () => store.usedCount(paid),
  };
}
