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
// A slot is 16 words (64 bytes, a cache line): the hash's eight words, then
// its expiry (a float64 at word 8, unix seconds, 0 marking an empty slot) and
// its uses (word 10). Words 11-15 are padding, so a probe touches one line
// where three arrays (hashes, expiries, uses) cost three cache misses.
const SLOT_WORDS = 16;
const SLOT_SHIFT = 4;
const EXPIRY_WORD = 8;
const USES_WORD = 10;

/**
 * An open-addressing hash table in one typed array. A server keeps every hash
 * until its token expires (an hour by default): as Map entries of strings and
 * objects that cost about 360 bytes each, retained garbage the collector
 * traces again on every major collection; here a slot is 64 bytes, none of it
 * traced, and at most half the slots are in use. When half are, the table is
 * rebuilt, larger or smaller, without its expired and released entries.
 */
export class UseTable implements MemoryReplayStore {
  private slots = INITIAL_SLOTS;
  /** The slots, as words (hash), as float64s (expiry at 8 * slot + 4) and as uint32s (uses). */
  private words = new Int32Array(INITIAL_SLOTS * SLOT_WORDS);
  private expiries = new Float64Array(this.words.buffer);
  private uses = new Uint32Array(this.words.buffer);
  private filled = 0;
  private readonly key = new Int32Array(8);

  claim(paymentHash: string, maxUses: number, expiresAt: number): boolean {
    return this.claimWords(this.keyOf(paymentHash), maxUses, expiresAt);
  }

  /**
   * claim for a hash as SHA-256 words, as the verifier leaves it
   * (VerifiedToken.hashWords): key[0..7]. `now` (unix seconds) lets the
   * paywall read the clock once per request.
   */
  claimWords(key: Int32Array, maxUses: number, expiresAt: number, now = Date.now() / 1000): boolean {
    if (!(expiresAt > 0)) throw new RangeError('expiresAt must be a positive number of unix seconds'); // 0 marks an empty slot
    let at = this.find(key, 0);
    const expiry = this.expiries[(at + EXPIRY_WORD) >> 1]!;
    const used = this.uses[at + USES_WORD]!;
    if (expiry > now && used > 0) {
      if (used >= maxUses) return false;
      this.uses[at + USES_WORD] = used + 1;
      return true;
    }
    if (expiry === 0) {
      if (2 * (this.filled + 1) > this.slots) {
        this.rebuild(now);
        at = this.find(key, 0);
      }
      this.filled++;
      const words = this.words;
      for (let i = 0; i < 8; i++) words[at + i] = key[i]!;
    }
    this.expiries[(at + EXPIRY_WORD) >> 1] = expiresAt;
    this.uses[at + USES_WORD] = 1;
    return true;
  }

  async release(paymentHash: string): Promise<void> {
    const at = this.find(this.keyOf(paymentHash), 0);
    if (this.uses[at + USES_WORD]! > 0) this.uses[at + USES_WORD]!--;
  }

  private keyOf(paymentHash: string): Int32Array {
    if (!hex32Words(paymentHash, this.key)) throw new TypeError('paymentHash must be 32 bytes of lower-case hex');
    return this.key;
  }

  /**
   * Where the slot holding the hash key[from..from+7] starts (a word index),
   * or the empty slot where it belongs, probing linearly from a mix of all its
   * words (payment hashes are SHA-256 digests and spread evenly anyway; the
   * mix keeps made-up ones that share a word, as in tests, from piling up in
   * one run of slots).
   */
  private find(key: Int32Array, from: number): number {
    const mask = this.slots - 1;
    const words = this.words;
    const expiries = this.expiries;
    let mixed = 0;
    for (let i = 0; i < 8; i++) mixed = Math.imul(mixed ^ key[from + i]!, 0x9e3779b1);
    // The top bits, which the multiplications mixed best (Fibonacci hashing).
    for (let slot = mixed >>> (Math.clz32(mask) & 31); ; slot = (slot + 1) & mask) {
      const at = slot << SLOT_SHIFT;
      if (expiries[(at + EXPIRY_WORD) >> 1] === 0) return at;
      let diff = 0;
      for (let i = 0; i < 8; i++) diff |= words[at + i]! ^ key[from + i]!;
      if (diff === 0) return at;
    }
  }

  /** Keeps the live entries, in a table a quarter full at most. */
  private rebuild(now: number): void {
    const { slots, words, expiries, uses } = this;
    const end = slots << SLOT_SHIFT;
    let live = 0;
    for (let old = 0; old < end; old += SLOT_WORDS) if (expiries[(old + EXPIRY_WORD) >> 1]! > now && uses[old + USES_WORD]! > 0) live++;
    this.slots = INITIAL_SLOTS;
    while (this.slots < 4 * live) this.slots *= 2;
    this.words = new Int32Array(this.slots * SLOT_WORDS);
    this.expiries = new Float64Array(this.words.buffer);
    this.uses = new Uint32Array(this.words.buffer);
    this.filled = live;
    for (let old = 0; old < end; old += SLOT_WORDS) {
      if (!(expiries[(old + EXPIRY_WORD) >> 1]! > now && uses[old + USES_WORD]! > 0)) continue;
      const at = this.find(words, old);
      // Hash, expiry and uses: the slot's first 11 words, copied as they are.
      for (let i = 0; i <= USES_WORD; i++) this.words[at + i] = words[old + i]!;
    }
  }
}
