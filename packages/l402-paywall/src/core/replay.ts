// Replay protection (docs/architecture.md decision 3): uses are counted per payment hash,
// claimed atomically before the handler runs and released when it fails.
import { hex32Words, wordsHex } from '../crypto/encoding.js';

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
  /**
   * Optional, for a store that answers in process and with certainty (the
   * built-in one): claims one use synchronously and without an attempt, a
   * use no attempt holds, which `release(paymentHash, '', expiresAt)` gives
   * back. Declaring it spares the paid path a promise and an attempt name.
   * @param hashWords the payment hash as eight big-endian SHA-256 words, as the verifiers leave it
   * @param nowSeconds the clock reading the credential was checked at (unix seconds)
   */
  claimSync?(hashWords: Int32Array, maxUses: number, expiresAt: number, nowSeconds: number): boolean;
}

// ---------------------------------------------------------------------------
// The rule, once for every store in a process.

/**
 * One payment hash's uses: how many are held, and what each attempt did
 * (true while it holds a use, false once it gave it back or was barred).
 */
export interface UseRecord {
  held: number;
  attempts: Map<string, boolean> | undefined;
}

/**
 * Claims one use for `attempt`, unless `maxUses` are held: whether the attempt
 * holds one now. An attempt that claimed before gets the same answer again
 * and counts once; one that was released or barred never claims. Without an
 * attempt the claim counts a use no attempt holds: the in-process paywall's,
 * whose claims always answer, so it never has to undo one it cannot name.
 *
 * This and releaseUse are the replay rule for the in-process stores (this
 * file's UseTable, the hosted service's memory store); the Redis scripts
 * (stores/replay-scripts.ts) keep the same rule inside Redis, and one contract
 * (tests/support/replay-contract.ts) runs the same cases against all of them.
 */
export function claimUse(record: UseRecord, maxUses: number, attempt?: string): boolean {
  if (attempt !== undefined) {
    const state = record.attempts?.get(attempt);
    if (state !== undefined) return state;
  }
  if (record.held >= maxUses) return false;
  record.held += 1;
  if (attempt !== undefined) (record.attempts ??= new Map()).set(attempt, true);
  return true;
}

/**
 * Gives back the use `attempt` holds, if it holds one, and bars it from
 * claiming later either way. Without an attempt, gives back one use that no
 * attempt holds, if any is held (the in-process paywall's own, see claimUse).
 */
export function releaseUse(record: UseRecord, attempt?: string): void {
  if (attempt === undefined) {
    let heldByAttempts = 0;
    for (const holds of record.attempts?.values() ?? []) if (holds) heldByAttempts += 1;
    if (record.held > heldByAttempts) record.held -= 1;
    return;
  }
  const attempts = (record.attempts ??= new Map());
  if (attempts.get(attempt) === true) record.held -= 1;
  attempts.set(attempt, false);
}

/** A token's expiry as the stores take it: a positive number of unix seconds. */
function checkExpiry(expiresAt: number | undefined): number {
  if (!(expiresAt !== undefined && expiresAt > 0)) throw new RangeError(`expiresAt must be a positive number of unix seconds, got ${expiresAt}`);
  return expiresAt;
}

/** An attempt as the stores keep it: a string of 1 to 128 characters (without one, claims could not be told apart and a release would not be exact). */
export function checkAttempt(attempt: string): string {
  if (typeof attempt !== 'string' || attempt.length === 0 || attempt.length > 128) throw new TypeError('attempt must be a string of 1 to 128 characters');
  return attempt;
}

// Kept past token expiry so clock skew between instances cannot reopen a token.
const SKEW_MS = 5 * 60_000;

/**
 * How long a shared store keeps a payment hash's uses, in ms from `nowMs`:
 * until its token expires (`expiresAt`, unix seconds; at least a second from
 * now), and five minutes more for clock skew between instances.
 */
export function usesLifetimeMs(expiresAt: number, nowMs = Date.now()): number {
  checkExpiry(expiresAt);
  return Math.max(1000, Math.ceil(expiresAt * 1000 - nowMs)) + SKEW_MS;
}

// ---------------------------------------------------------------------------
// The in-process store.

/** The in-process store: its claims answer synchronously; the paywall's own need no attempt. */
export interface MemoryReplayStore extends ReplayStore {
  /** Without an attempt (or with ''), a use no attempt holds (claimUse). */
  claim(paymentHash: string, maxUses: number, expiresAt: number, attempt?: string): boolean;
  /** With an attempt, `expiresAt` is needed: a release can bar an attempt that has not claimed yet. */
  release(paymentHash: string, attempt?: string, expiresAt?: number): Promise<void>;
  /** Uses held now, without claiming one. */
  usedCount(paymentHash: string): number;
  claimSync(hashWords: Int32Array, maxUses: number, expiresAt: number, nowSeconds: number): boolean;
}

/**
 * One process only: fine for a single server, wrong for serverless (use a
 * shared store). Payment hashes must be 32 bytes of lower-case hex, as the
 * paywall passes them. The paywall claims without attempts (an in-process
 * claim always answers, so it releases only uses it knows it holds); a
 * caller that names attempts gets the shared stores' rule (claimUse).
 */
export function memoryReplayStore(): MemoryReplayStore {
  return new UseTable();
}

const INITIAL_SLOTS = 1024;
// A slot is 16 words (64 bytes, a cache line): the hash's eight words, then
// its expiry (a float64 at word 8, unix seconds, 0 marking an empty slot), its
// uses (word 10) and whether `attempts` holds its attempts (word 11, 0 or 1).
// Words 12-15 are padding, so a probe touches one line where separate arrays
// (hashes, expiries, uses) cost a cache miss each.
const SLOT_WORDS = 16;
const SLOT_SHIFT = 4;
const EXPIRY_WORD = 8;
const USES_WORD = 10;
const ATTEMPTS_WORD = 11;

/**
 * An open-addressing hash table in one typed array. A server keeps every hash
 * until its token expires (an hour by default): as Map entries of strings and
 * objects that cost about 360 bytes each, retained garbage the collector
 * traces again on every major collection; here a slot is 64 bytes, none of it
 * traced, and at most half the slots are in use. When half are, the table is
 * rebuilt, larger or smaller, without its expired and released entries. The
 * attempts of hashes claimed with attempts sit beside it, in a Map by hash.
 */
export class UseTable implements MemoryReplayStore {
  private slots = INITIAL_SLOTS;
  /** The slots, as words (hash), as float64s (expiry at 8 * slot + 4) and as uint32s (uses). */
  private words = new Int32Array(INITIAL_SLOTS * SLOT_WORDS);
  private expiries = new Float64Array(this.words.buffer);
  private uses = new Uint32Array(this.words.buffer);
  private filled = 0;
  /** The attempts of each hash whose slot has word 11 set, by its hex. */
  private readonly attempts = new Map<string, Map<string, boolean>>();
  // Scratch: a hash given as hex, as words; the record claimUse and releaseUse work on.
  private readonly key = new Int32Array(8);
  private readonly record: UseRecord = { held: 0, attempts: undefined };

  claim(paymentHash: string, maxUses: number, expiresAt: number, attempt?: string): boolean {
    return this.claimWords(this.keyOf(paymentHash), maxUses, expiresAt, Date.now() / 1000, attempt || undefined);
  }

  claimSync(hashWords: Int32Array, maxUses: number, expiresAt: number, nowSeconds: number): boolean {
    return this.claimWords(hashWords, maxUses, expiresAt, nowSeconds);
  }

  /**
   * claim for a hash as SHA-256 words, as the verifier leaves it
   * (VerifiedToken.hashWords): key[0..7]. `now` (unix seconds) lets the
   * paywall read the clock once per request.
   */
  claimWords(key: Int32Array, maxUses: number, expiresAt: number, now = Date.now() / 1000, attempt?: string): boolean {
    checkExpiry(expiresAt);
    if (attempt !== undefined) checkAttempt(attempt);
    const at = this.entry(key, expiresAt, now);
    const record = this.recordAt(at, attempt !== undefined);
    const claimed = claimUse(record, maxUses, attempt);
    this.uses[at + USES_WORD] = record.held;
    // A refused attempt records nothing: an entry marked as holding attempts with none would stay live, and a
    // later claim after its uses were given back would keep the old expiry instead of its own.
    if (record.attempts?.size === 0) this.forgetAttempts(at);
    return claimed;
  }

  async release(paymentHash: string, attempt?: string, expiresAt?: number): Promise<void> {
    const key = this.keyOf(paymentHash);
    const now = Date.now() / 1000;
    if (!attempt) {
      const at = this.find(key, 0);
      if (!this.isLive(at, now)) return;
      const record = this.recordAt(at, false);
      releaseUse(record);
      this.uses[at + USES_WORD] = record.held;
      return;
    }
    checkAttempt(attempt);
    // A release bars its attempt even before it claimed: the entry is made if missing, and kept until the token expires.
    const at = this.entry(key, checkExpiry(expiresAt), now);
    const record = this.recordAt(at, true);
    releaseUse(record, attempt);
    this.uses[at + USES_WORD] = record.held;
  }

  usedCount(paymentHash: string): number {
    const at = this.find(this.keyOf(paymentHash), 0);
    return this.isLive(at, Date.now() / 1000) ? this.uses[at + USES_WORD]! : 0;
  }

  private keyOf(paymentHash: string): Int32Array {
    if (!hex32Words(paymentHash, this.key)) throw new TypeError('paymentHash must be 32 bytes of lower-case hex');
    return this.key;
  }

  /** A slot in use whose token has not expired, holding a use or an attempt's mark. */
  private isLive(at: number, now: number): boolean {
    return this.expiries[(at + EXPIRY_WORD) >> 1]! > now && (this.uses[at + USES_WORD]! > 0 || this.words[at + ATTEMPTS_WORD] !== 0);
  }

  /** Where the hash key[0..7] has a live entry; one started afresh there (no uses, no attempts, until `expiresAt`) when it has none. */
  private entry(key: Int32Array, expiresAt: number, now: number): number {
    let at = this.find(key, 0);
    if (this.isLive(at, now)) return at;
    if (this.expiries[(at + EXPIRY_WORD) >> 1] === 0) {
      if (2 * (this.filled + 1) > this.slots) {
        this.rebuild(now);
        at = this.find(key, 0);
      }
      this.filled++;
      const words = this.words;
      for (let i = 0; i < 8; i++) words[at + i] = key[i]!;
    } else {
      this.forgetAttempts(at);
    }
    this.expiries[(at + EXPIRY_WORD) >> 1] = expiresAt;
    this.uses[at + USES_WORD] = 0;
    return at;
  }

  /** The record of the entry at `at`, for claimUse and releaseUse: its uses, and its attempts if it has any (made when `makeAttempts`). */
  private recordAt(at: number, makeAttempts: boolean): UseRecord {
    const record = this.record;
    record.held = this.uses[at + USES_WORD]!;
    record.attempts = undefined;
    if (makeAttempts || this.words[at + ATTEMPTS_WORD] !== 0) {
      const hex = this.hexAt(at);
      let attempts = this.attempts.get(hex);
      if (!attempts) this.attempts.set(hex, (attempts = new Map()));
      this.words[at + ATTEMPTS_WORD] = 1;
      record.attempts = attempts;
    }
    return record;
  }

  private forgetAttempts(at: number): void {
    if (this.words[at + ATTEMPTS_WORD] === 0) return;
    this.attempts.delete(this.hexAt(at));
    this.words[at + ATTEMPTS_WORD] = 0;
  }

  private hexAt(at: number): string {
    return wordsHex(this.words.subarray(at, at + 8));
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
    const { slots, words } = this;
    const end = slots << SLOT_SHIFT;
    const live: number[] = [];
    for (let old = 0; old < end; old += SLOT_WORDS) {
      if (this.isLive(old, now)) live.push(old);
      else if (this.expiries[(old + EXPIRY_WORD) >> 1] !== 0) this.forgetAttempts(old);
    }
    this.slots = INITIAL_SLOTS;
    while (this.slots < 4 * live.length) this.slots *= 2;
    this.words = new Int32Array(this.slots * SLOT_WORDS);
    this.expiries = new Float64Array(this.words.buffer);
    this.uses = new Uint32Array(this.words.buffer);
    this.filled = live.length;
    for (const old of live) {
      const at = this.find(words, old);
      // Hash, expiry, uses and the attempts mark: the slot's first 12 words, copied as they are.
      for (let i = 0; i <= ATTEMPTS_WORD; i++) this.words[at + i] = words[old + i]!;
    }
  }
}
