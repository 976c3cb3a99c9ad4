// Replay protection (docs/architecture.md decision 3): uses are counted per payment hash,
// claimed atomically before the handler runs and released when it fails.
import { hex32Words } from './encoding.js';

export interface ReplayStore {
  /**
   * Records one use of `paymentHash` for `attempt` unless `maxUses` uses are
   * already recorded. Must be atomic across every instance sharing the store,
   * and idempotent per attempt: the same attempt claiming again (a client
   * library resending a command whose answer was lost) answers true without
   * counting a second use. An in-process store may answer synchronously,
   * which spares the paid path an await.
   * @param expiresAt unix seconds after which the token is dead anyway
   * @param attempt unique per paid request (the paywall makes one)
   */
  claim(paymentHash: string, maxUses: number, expiresAt: number, attempt: string): boolean | Promise<boolean>;
  /**
   * Gives back the use `attempt` holds: its paid request failed, or its
   * claim's outcome is unknown (the store threw or timed out, perhaps after
   * the claim landed). Exact: never gives back another attempt's use, and an
   * attempt that holds none is barred from claiming later, so a claim still
   * on its way cannot land after its release.
   */
  release(paymentHash: string, attempt: string, expiresAt: number): Promise<void>;
}

/** The in-process store: its claims answer synchronously, and need no attempt. */
export interface MemoryReplayStore extends ReplayStore {
  claim(paymentHash: string, maxUses: number, expiresAt: number, attempt?: string): boolean;
  release(paymentHash: string, attempt?: string, expiresAt?: number): Promise<void>;
}

/**
 * One process only: fine for a single server, wrong for serverless (use a
 * shared store). Payment hashes must be 32 bytes of lower-case hex, as the
 * paywall passes them. It counts uses without keeping attempts: an
 * in-process claim always answers, so the paywall releases only attempts it
 * knows hold a use.
 */
export function memoryReplayStore(): MemoryReplayStore {
  return new UseTable();
}

const INITIAL_SLOTS = 1024;

/**
 * An open-addressing hash table in typed arrays. A server keeps every hash
 * until its token expires (an hour by default): as Map entries of strings and
 * objects that cost about 360 bytes each, retained garbage the collector
 * traces again on every major collection; here a slot is 44 bytes, none of it
 * traced, and at most half the slots are in use. When half are, the table is
 * rebuilt, larger or smaller, without its expired and released entries.
 */
export class UseTable implements MemoryReplayStore {
  private slots = INITIAL_SLOTS;
  private hashes = new Int32Array(INITIAL_SLOTS * 8);
  /** Unix seconds; 0 marks an empty slot. */
  private expiries = new Float64Array(INITIAL_SLOTS);
  private uses = new Uint32Array(INITIAL_SLOTS);
  private filled = 0;
  private readonly key = new Int32Array(8);

  claim(paymentHash: string, maxUses: number, expiresAt: number): boolean {
    return this.claimWords(this.keyOf(paymentHash), maxUses, expiresAt);
  }

  /** claim for a hash as SHA-256 words, as the verifier leaves it (VerifiedToken.hashWords). */
  claimWords(key: Int32Array, maxUses: number, expiresAt: number): boolean {
    if (!(expiresAt > 0)) throw new RangeError('expiresAt must be a positive number of unix seconds'); // 0 marks an empty slot
    const now = Date.now() / 1000;
    let slot = this.find(key);
    if (isLive(this.expiries, this.uses, slot, now)) {
      if (this.uses[slot]! >= maxUses) return false;
      this.uses[slot]!++;
      return true;
    }
    if (this.expiries[slot] === 0) {
      if (2 * (this.filled + 1) > this.slots) {
        this.rebuild(now);
        slot = this.find(key);
      }
      this.filled++;
      this.hashes.set(key, slot * 8);
    }
    this.expiries[slot] = expiresAt;
    this.uses[slot] = 1;
    return true;
  }

  async release(paymentHash: string): Promise<void> {
    const slot = this.find(this.keyOf(paymentHash));
    if (this.uses[slot]! > 0) this.uses[slot]!--;
  }

  private keyOf(paymentHash: string): Int32Array {
    if (!hex32Words(paymentHash, this.key)) throw new TypeError('paymentHash must be 32 bytes of lower-case hex');
    return this.key;
  }

  /**
   * The slot holding this hash, or the empty slot where it belongs, probing
   * linearly from a mix of all its words (payment hashes are SHA-256 digests
   * and spread evenly anyway; the mix keeps made-up ones that share a word,
   * as in tests, from piling up in one run of slots).
   */
  private find(key: Int32Array): number {
    const mask = this.slots - 1;
    let mixed = 0;
    for (let i = 0; i < 8; i++) mixed = Math.imul(mixed ^ key[i]!, 0x9e3779b1);
    // The top bits, which the multiplications mixed best (Fibonacci hashing).
    for (let slot = mixed >>> (Math.clz32(mask) & 31); ; slot = (slot + 1) & mask) {
      if (this.expiries[slot] === 0) return slot;
      const at = slot * 8;
      let diff = 0;
      for (let i = 0; i < 8; i++) diff |= this.hashes[at + i]! ^ key[i]!;
      if (diff === 0) return slot;
    }
  }

  /** Keeps the live entries, in a table a quarter full at most. */
  private rebuild(now: number): void {
    const { slots, hashes, expiries, uses } = this;
    let live = 0;
    for (let slot = 0; slot < slots; slot++) if (isLive(expiries, uses, slot, now)) live++;
    this.slots = INITIAL_SLOTS;
    while (this.slots < 4 * live) this.slots *= 2;
    this.hashes = new Int32Array(this.slots * 8);
    this.expiries = new Float64Array(this.slots);
    this.uses = new Uint32Array(this.slots);
    this.filled = live;
    for (let old = 0; old < slots; old++) {
      if (!isLive(expiries, uses, old, now)) continue;
      const key = hashes.subarray(old * 8, old * 8 + 8);
      const slot = this.find(key);
      this.hashes.set(key, slot * 8);
      this.expiries[slot] = expiries[old]!;
      this.uses[slot] = uses[old]!;
    }
  }
}

/** Counting uses: not expired, and not every use given back. */
function isLive(expiries: Float64Array, uses: Uint32Array, slot: number, now: number): boolean {
  return expiries[slot]! > now && uses[slot]! > 0;
}
