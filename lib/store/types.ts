// The key-value port. Values are strings (callers JSON-encode); every
// operation that decides something is atomic in each implementation, so any
// number of function instances can share one store.

export interface SetOptions {
  /** Expire the key after this many milliseconds (a positive integer). */
  ttlMs?: number;
  /** Only set when the key does not exist (SET NX). */
  ifAbsent?: boolean;
}

export interface KeyValueStore {
  readonly kind: 'memory' | 'upstash';
  get(key: string): Promise<string | null>;
  /** Returns false when `ifAbsent` was set and the key existed. */
  set(key: string, value: string, options?: SetOptions): Promise<boolean>;
  /** Returns the number of keys removed (0 or 1). */
  del(key: string): Promise<number>;
  /**
   * Atomically increments the counter at `key` if its value is below `max`,
   * giving a fresh key the expiry `ttlMs`. Returns the new value, or null when
   * the counter had already reached `max` (nothing changed). An existing key
   * keeps its expiry. A value that is not an integer is an error.
   */
  incrementBelow(key: string, max: number, ttlMs: number): Promise<number | null>;
  /**
   * Atomically decrements the counter at `key` (never below zero); returns the
   * new value. The key keeps its expiry; a missing key stays missing (0), so a
   * release after expiry cannot create a key that never expires.
   */
  decrementToZero(key: string): Promise<number>;
  /**
   * Atomically adds `delta` (a safe integer, may be negative) to the counter at
   * `key`, creating it at 0 without expiry; returns the new value (INCRBY).
   */
  incrementBy(key: string, delta: number): Promise<number>;
  /**
   * The uses of one paid token, kept at `key` with the attempts that hold
   * them: the replay store's contract (ReplayStore in l402-paywall). Claims
   * one use for `attempt` unless `maxUses` are held; idempotent per attempt.
   * The key lives until `expiresAt` (unix seconds) and a few minutes more.
   */
  claimUse(key: string, maxUses: number, expiresAt: number, attempt: string): Promise<boolean>;
  /** Gives back the use `attempt` holds, or bars it from claiming later when it holds none. */
  releaseUse(key: string, attempt: string, expiresAt: number): Promise<void>;
  /** Uses held now, without claiming one. */
  usesHeld(key: string): Promise<number>;
}

export interface RateLimitResult {
  success: boolean;
  limit: number;
  remaining: number;
  /** Unix milliseconds when the window resets. */
  reset: number;
}

export interface RateLimiter {
  /** Counts one request for `identifier` and says whether it may proceed. */
  limit(identifier: string): Promise<RateLimitResult>;
}

export interface RateLimiterOptions {
  /** Requests allowed per window. */
  limit: number;
  windowMs: number;
  /**
   * Namespace of this limiter's keys. Limiters sharing one Redis must use
   * different prefixes, or their counters mix. The memory limiter keeps its
   * own map per limiter and ignores it.
   */
  prefix: string;
}

/**
 * The shared store did not answer (unreachable, erroring or too slow). Callers
 * fail closed: the hosted API answers 503 STORE_UNAVAILABLE with Retry-After.
 */
export class StoreUnavailable extends Error {
  override readonly name = 'StoreUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
