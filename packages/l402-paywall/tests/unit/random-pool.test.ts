// RandomPool: random bytes drawn a kilobyte at a time, each handed out once.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RandomPool } from '../../src/crypto/random-pool.js';

describe('RandomPool', () => {
  afterEach(() => vi.restoreAllMocks());

  it('hands out each drawn byte once, in draws of a kilobyte, larger ones whole, and never the same value twice', () => {
    const draws = vi.spyOn(crypto, 'getRandomValues');
    const pool = new RandomPool();
    const seen = new Set<string>();
    for (let i = 0; i < 64; i++) {
      const bytes = pool.take(28);
      expect(bytes).toHaveLength(28);
      seen.add(Buffer.from(bytes).toString('hex'));
    }
    expect(seen.size).toBe(64);
    // 64 x 28 bytes: two kilobyte draws, not 64.
    expect(draws).toHaveBeenCalledTimes(2);
    expect(pool.take(3000)).toHaveLength(3000);
    expect(draws).toHaveBeenCalledTimes(3);
  });

  it('gives the caller its own bytes: changing them changes nothing the pool gives next, and the pool keeps no copy', () => {
    let drawn: Uint8Array | undefined;
    const real = crypto.getRandomValues.bind(crypto);
    vi.spyOn(crypto, 'getRandomValues').mockImplementation(<T extends ArrayBufferView | null>(array: T): T => {
      drawn = real(array as Uint8Array) as Uint8Array;
      return array;
    });
    const pool = new RandomPool();
    const first = pool.take(32);
    const kept = Uint8Array.from(first);
    first.fill(0);
    const second = pool.take(32);
    expect(Buffer.from(second).equals(Buffer.from(kept))).toBe(false);
    // What was handed out is wiped from the pool's buffer.
    expect([...drawn!.subarray(0, 64)].every((b) => b === 0)).toBe(true);
  });
});
