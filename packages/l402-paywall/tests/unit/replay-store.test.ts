// memoryReplayStore, the paywall's default replay store: a hash table in typed
// arrays, checked against a plain Map through rebuilds and expiries, with the
// paywall's claims (no attempt) and named attempts mixed. The contract every
// replay store keeps runs on it in ../integration/library-replay-stores.test.ts.
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { memoryReplayStore } from 'l402-paywall';
import { hex32Words } from '../../src/crypto/encoding.js';
import type { UseTable } from '../../src/core/replay.js';
import { newPreimage } from '../support/l402.js';

/**
 * The reference: uses per hash in a Map, with the attempts that hold them. An
 * entry counts until it expires, or until it holds no use and no attempt's
 * mark; then the next claim starts it afresh.
 */
function referenceStore(now: () => number) {
  const uses = new Map<string, { count: number; expiresAt: number; attempts: Map<string, boolean> }>();
  const live = (hash: string) => {
    const entry = uses.get(hash);
    return entry && entry.expiresAt > now() && (entry.count > 0 || entry.attempts.size > 0) ? entry : undefined;
  };
  const entry = (hash: string, expiresAt: number) => {
    const found = live(hash);
    if (found) return found;
    const fresh = { count: 0, expiresAt, attempts: new Map<string, boolean>() };
    uses.set(hash, fresh);
    return fresh;
  };
  return {
    claim(hash: string, maxUses: number, expiresAt: number, attempt?: string): boolean {
      const e = entry(hash, expiresAt);
      if (attempt !== undefined && e.attempts.has(attempt)) return e.attempts.get(attempt)!;
      if (e.count >= maxUses) return false;
      e.count++;
      if (attempt !== undefined) e.attempts.set(attempt, true);
      return true;
    },
    release(hash: string, attempt?: string, expiresAt?: number): void {
      if (attempt === undefined) {
        // The paywall's own use: never one an attempt holds.
        const e = live(hash);
        if (e && e.count > [...e.attempts.values()].filter(Boolean).length) e.count--;
        return;
      }
      const e = entry(hash, expiresAt!);
      if (e.attempts.get(attempt) === true) e.count--;
      e.attempts.set(attempt, false);
    },
    usedCount: (hash: string) => live(hash)?.count ?? 0,
  };
}

const START_SECONDS = 1_800_000_000;
// More hashes than the first table (1024 slots, half of them used) holds, so runs rebuild it.
const POOL = Array.from({ length: 1500 }, () => newPreimage().hash);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('memoryReplayStore', () => {
  it('answers claims synchronously, counts uses and gives one back on release', async () => {
    const store = memoryReplayStore();
    const hash = 'a'.repeat(64);
    const expiresAt = Math.floor(Date.now() / 1000) + 60;
    expect(store.claim(hash, 2, expiresAt)).toBe(true);
    expect(store.claim(hash, 2, expiresAt)).toBe(true);
    expect(store.claim(hash, 2, expiresAt)).toBe(false);
    await store.release(hash);
    expect(store.claim(hash, 2, expiresAt)).toBe(true);
    expect(store.claim('b'.repeat(64), 1, expiresAt)).toBe(true);
  });

  it('counts a hash claimed as the verifier\u2019s words and as hex as one hash', async () => {
    const store = memoryReplayStore() as UseTable;
    const hash = newPreimage().hash;
    const words = new Int32Array(8);
    expect(hex32Words(hash, words)).toBe(true);
    const expiresAt = Math.floor(Date.now() / 1000) + 60;
    expect(store.claimWords(words, 2, expiresAt)).toBe(true);
    expect(store.claim(hash, 2, expiresAt)).toBe(true);
    expect(store.claimWords(words, 2, expiresAt)).toBe(false);
    await store.release(hash);
    expect(store.claimWords(words, 2, expiresAt)).toBe(true);
    expect(store.claim(hash, 2, expiresAt)).toBe(false);
  });

  it('refuses a hash that is not 32 bytes of lower-case hex', async () => {
    const store = memoryReplayStore();
    for (const hash of ['', 'a'.repeat(63), 'A'.repeat(64), `${'a'.repeat(63)}g`, `${'a'.repeat(63)}é`]) {
      expect(() => store.claim(hash, 1, START_SECONDS), hash).toThrow(TypeError);
      await expect(store.release(hash), hash).rejects.toThrow(TypeError);
    }
  });

  it('refuses an expiry that is not a positive number of seconds', () => {
    const store = memoryReplayStore();
    for (const expiresAt of [0, -1, Number.NaN]) expect(() => store.claim('a'.repeat(64), 1, expiresAt), String(expiresAt)).toThrow(RangeError);
  });

  it('keeps every use of a hundred thousand hashes until they expire, then forgets them', { timeout: 120_000 }, () => {
    let seconds = START_SECONDS;
    vi.spyOn(Date, 'now').mockImplementation(() => seconds * 1000);
    const store = memoryReplayStore();
    const hashes = Array.from({ length: 100_000 }, (_, i) => i.toString(16).padStart(64, '0'));
    // Every first claim is taken (one expect for the hundred thousand: an expect each cost seconds).
    expect(hashes.filter((hash) => store.claim(hash, 1, seconds + 60) !== true)).toEqual([]);
    expect(hashes.filter((hash) => store.claim(hash, 1, seconds + 60))).toEqual([]);
    seconds += 60;
    // Expired: each may be claimed again (its token is dead anyway), through more rebuilds.
    expect(hashes.filter((hash) => !store.claim(hash, 1, seconds + 60))).toEqual([]);
    expect(hashes.filter((hash) => store.claim(hash, 1, seconds + 60))).toEqual([]);
  });

  it('answers every sequence of claims, releases and passing time as the Map it replaced, with and without attempts', async () => {
    // A few hashes used again and again, by the paywall (no attempt) and by
    // named attempts, while batches of others fill the table so that it is
    // rebuilt (and grows) with those few still counted.
    const few = fc.nat(3);
    const attempt = fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined });
    const operation = fc.oneof(
      fc.record({ kind: fc.constant('claim' as const), hash: few, maxUses: fc.integer({ min: 1, max: 3 }), ttl: fc.integer({ min: 1, max: 120 }), attempt }),
      fc.record({ kind: fc.constant('release' as const), hash: few, ttl: fc.integer({ min: 1, max: 120 }), attempt }),
      fc.record({ kind: fc.constant('wait' as const), seconds: fc.integer({ min: 1, max: 20 }) }),
      fc.record({ kind: fc.constant('fill' as const), count: fc.integer({ min: 1, max: 400 }), ttl: fc.integer({ min: 1, max: 120 }) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 20, maxLength: 200 }), async (operations) => {
        let seconds = START_SECONDS;
        vi.spyOn(Date, 'now').mockImplementation(() => seconds * 1000);
        const store = memoryReplayStore();
        const reference = referenceStore(() => seconds);
        const claim = (hash: string, maxUses: number, ttl: number, attempt?: string) => {
          const expected = reference.claim(hash, maxUses, seconds + ttl, attempt);
          expect(store.claim(hash, maxUses, seconds + ttl, attempt), hash).toBe(expected);
        };
        let filled = 0;
        for (const op of operations) {
          if (op.kind === 'wait') seconds += op.seconds;
          else if (op.kind === 'release') {
            reference.release(POOL[op.hash]!, op.attempt, seconds + op.ttl);
            await store.release(POOL[op.hash]!, op.attempt, seconds + op.ttl);
          } else if (op.kind === 'claim') claim(POOL[op.hash]!, op.maxUses, op.ttl, op.attempt);
          else for (let i = 0; i < op.count; i++) claim(POOL[4 + (filled++ % (POOL.length - 4))]!, 1, op.ttl);
          for (const hash of POOL.slice(0, 4)) expect(store.usedCount(hash), hash).toBe(reference.usedCount(hash));
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});

describe('memoryReplayStore, an attempt refused before any was recorded', () => {
  it('leaves no mark: a use given back and claimed again lasts until the new expiry, not the first one', async () => {
    let seconds = START_SECONDS;
    vi.spyOn(Date, 'now').mockImplementation(() => seconds * 1000);
    const store = memoryReplayStore();
    const hash = POOL[0]!;
    expect(store.claim(hash, 1, seconds + 1)).toBe(true);
    expect(store.claim(hash, 1, seconds + 1, 'a')).toBe(false); // refused: records nothing
    await store.release(hash);
    // Claimed again by a credential that lives longer: held until its own expiry.
    expect(store.claim(hash, 1, seconds + 2)).toBe(true);
    seconds += 1;
    expect(store.usedCount(hash)).toBe(1);
    expect(store.claim(hash, 1, seconds + 1)).toBe(false);
  });
});
