// In-process implementations of the store port, for `npm start`, tests and
// single-instance self-hosting. Every operation runs synchronously inside its
// async wrapper, so no other caller can interleave: that is what makes
// incrementBelow, decrementToZero and set-if-absent atomic here.

import { checkAttempt, claimUse, releaseUse, usesLifetimeMs, type UseRecord } from 'l402-paywall';
import type { KeyValueStore, RateLimiter, RateLimiterOptions, RateLimitResult, SetOptions } from './types.js';

// Same wording as Redis, so callers see one message whichever store runs.
const NOT_AN_INTEGER = 'ERR value is not an integer or out of range';
const INTEGER = /^-?\d+$/;

// Below this many entries a sweep is not worth its cost.
const MIN_SWEEP_INTERVAL = 1024;
// Once a key has expired, a write this long after the last sweep sweeps again:
// keys nobody reads after they expire (a 402's unpaid invoice) leave memory
// within this time of the next write, rather than only when writes double the size.
export const EXPIRED_SWEEP_INTERVAL_MS = 10_000;

interface Entry {
  value: string;
  /** Unix ms; Infinity when the key never expires. */
  expiresAt: number;
}

export function assertTtlMs(ttlMs: number): void {
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1) {
    throw new RangeError(`ttlMs must be a positive integer of milliseconds, got ${ttlMs}`);
  }
}

export function assertCounterMax(max: number): void {
  // NaN compares false with everything, which would make the cap never bite.
  if (Number.isNaN(max)) throw new RangeError('max must be a number, got NaN');
}

/** A rate limit's own settings, checked when the limiter is made (every backend's). */
export function assertLimiterOptions({ limit, windowMs }: Pick<RateLimiterOptions, 'limit' | 'windowMs'>): void {
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
  }
  if (!Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new RangeError(`windowMs must be a positive integer, got ${windowMs}`);
  }
}

export function assertDelta(delta: number): void {
  if (!Number.isSafeInteger(delta)) throw new RangeError(`delta must be a safe integer, got ${delta}`);
}

/** Unix ms until which the uses of a token that expires at `expiresAt` (unix seconds) are kept, as the Redis stores keep them. */
export function usesKeptUntil(expiresAt: number): number {
  const now = Date.now();
  return now + usesLifetimeMs(expiresAt, now);
}

/**
 * A token's uses as this store keeps them, in a string value like any other
 * (so the journal writes them as it writes the rest): {"n": uses held, "a":
 * {attempt: true while it holds one}}, or a plain counter written before
 * attempts were kept. The rule they follow is the library's (claimUse,
 * releaseUse).
 */
function parseUses(value: string): UseRecord {
  if (INTEGER.test(value)) return { held: Number(value), attempts: undefined };
  const uses = JSON.parse(value) as { n?: unknown; a?: unknown };
  if (!Number.isSafeInteger(uses?.n) || typeof uses.a !== 'object' || uses.a === null) throw new Error(`not a record of uses: ${value.slice(0, 40)}`);
  // Object.entries and fromEntries keep every attempt as an own key, whatever its name ("__proto__" included).
  return { held: uses.n as number, attempts: new Map(Object.entries(uses.a as Record<string, boolean>)) };
}

function formatUses(uses: UseRecord): string {
  return JSON.stringify({ n: uses.held, a: Object.fromEntries(uses.attempts ?? []) });
}

function parseCounter(value: string): number {
  if (!INTEGER.test(value)) throw new Error(NOT_AN_INTEGER);
  return Number(value);
}

/**
 * Runs `sweep` after as many writes as there were entries after the previous
 * sweep (at least MIN_SWEEP_INTERVAL). A sweep costs O(size) and size can at
 * most double in between, so this is O(1) per write amortised, and the map
 * holds at most about twice the live keys plus MIN_SWEEP_INTERVAL. Also, when
 * `expiredSince()` (the earliest expiry not yet swept, unix ms) has passed, at
 * most every EXPIRED_SWEEP_INTERVAL_MS: so what expired leaves memory soon
 * after, even when the store stops growing. No timer: a timer would keep the
 * process alive or need unref(), and an idle store does not grow.
 */
function amortisedSweeper(size: () => number, sweep: () => void, expiredSince: () => number = () => Infinity): () => void {
  let writesSinceSweep = 0;
  let sizeAfterSweep = 0;
  let sweptAt = Date.now();
  return () => {
    writesSinceSweep += 1;
    const now = Date.now();
    const grown = writesSinceSweep >= Math.max(MIN_SWEEP_INTERVAL, sizeAfterSweep);
    const expired = expiredSince() <= now && now - sweptAt >= EXPIRED_SWEEP_INTERVAL_MS;
    if (!grown && !expired) return;
    sweep();
    sweptAt = now;
    writesSinceSweep = 0;
    sizeAfterSweep = size();
  };
}

/** The in-process store, which can also say how many entries it holds in memory (expired ones not yet swept included). */
export interface MemoryStore extends KeyValueStore {
  size(): number;
}

export function createMemoryStore(): MemoryStore {
  const entries = new Map<string, Entry>();
  /** The earliest expiry among the entries (Infinity: none expires), as of the last sweep and the writes since. */
  let nextExpiry = Infinity;

  const noteWrite = amortisedSweeper(
    () => entries.size,
    () => {
      const now = Date.now();
      nextExpiry = Infinity;
      for (const [key, entry] of entries) {
        if (entry.expiresAt <= now) entries.delete(key);
        else if (entry.expiresAt < nextExpiry) nextExpiry = entry.expiresAt;
      }
    },
    () => nextExpiry,
  );

  // Expired keys are dropped when read, so every operation sees what Redis would.
  function live(key: string): Entry | undefined {
    const entry = entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt <= Date.now()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  }

  function write(key: string, entry: Entry): void {
    entries.set(key, entry);
    if (entry.expiresAt < nextExpiry) nextExpiry = entry.expiresAt;
    noteWrite();
  }

  /** Reads a token's uses (none yet: a fresh record kept until usesKeptUntil), changes them, writes them back. */
  function changeUses<T>(key: string, attempt: string, expiresAt: number, change: (uses: UseRecord) => T): T {
    checkAttempt(attempt);
    const until = usesKeptUntil(expiresAt);
    const entry = live(key);
    const uses = entry ? parseUses(entry.value) : { held: 0, attempts: undefined };
    const result = change(uses);
    if (entry) entry.value = formatUses(uses);
    else write(key, { value: formatUses(uses), expiresAt: until });
    return result;
  }

  return {
    kind: 'memory',
    size: () => entries.size,

    async get(key) {
      return live(key)?.value ?? null;
    },

    async set(key: string, value: string, options: SetOptions = {}) {
      const { ttlMs, ifAbsent = false } = options;
      if (ttlMs !== undefined) assertTtlMs(ttlMs);
      if (ifAbsent && live(key) !== undefined) return false;
      write(key, { value, expiresAt: ttlMs === undefined ? Infinity : Date.now() + ttlMs });
      return true;
    },

    async del(key) {
      return live(key) !== undefined && entries.delete(key) ? 1 : 0;
    },

    async incrementBelow(key, max, ttlMs) {
      assertCounterMax(max);
      assertTtlMs(ttlMs);
      const entry = live(key);
      if (entry === undefined) {
        if (max <= 0) return null;
        write(key, { value: '1', expiresAt: Date.now() + ttlMs });
        return 1;
      }
      const current = parseCounter(entry.value);
      if (current >= max) return null;
      entry.value = String(current + 1);
      return current + 1;
    },

    async decrementToZero(key) {
      const entry = live(key);
      if (entry === undefined) return 0;
      const current = parseCounter(entry.value);
      if (current <= 0) return 0;
      entry.value = String(current - 1);
      return current - 1;
    },

    async incrementBy(key, delta) {
      assertDelta(delta);
      const entry = live(key);
      const next = (entry === undefined ? 0 : parseCounter(entry.value)) + delta;
      if (!Number.isSafeInteger(next)) throw new Error(NOT_AN_INTEGER);
      if (entry === undefined) write(key, { value: String(next), expiresAt: Infinity });
      else entry.value = String(next);
      return next;
    },

    async claimUse(key, maxUses, expiresAt, attempt) {
      return changeUses(key, attempt, expiresAt, (uses) => claimUse(uses, maxUses, attempt));
    },

    async releaseUse(key, attempt, expiresAt) {
      changeUses(key, attempt, expiresAt, (uses) => releaseUse(uses, attempt));
    },

    async usesHeld(key) {
      const entry = live(key);
      return entry ? parseUses(entry.value).held : 0;
    },
  };
}

interface WindowCounts {
  /** Index of the window `current` counts, i.e. floor(ms / windowMs). */
  window: number;
  current: number;
  previous: number;
}

/**
 * Sliding window with the same arithmetic as @upstash/ratelimit's
 * `slidingWindow` (the previous window's count, weighted by how much of it
 * still overlaps, plus the current window's count), so a limit behaves the
 * same in development and on Upstash. As there, `reset` is the end of the
 * current fixed window. Limiters do not share state: the prefix is not needed.
 */
export function createMemoryRateLimiter(options: Pick<RateLimiterOptions, 'limit' | 'windowMs'>): RateLimiter {
  assertLimiterOptions(options);
  const { limit, windowMs } = options;

  const counts = new Map<string, WindowCounts>();
  const noteWrite = amortisedSweeper(
    () => counts.size,
    () => {
      const window = Math.floor(Date.now() / windowMs);
      // Counts older than the previous window no longer weigh on anything.
      for (const [identifier, c] of counts) {
        if (c.window < window - 1) counts.delete(identifier);
      }
    },
  );

  return {
    async limit(identifier): Promise<RateLimitResult> {
      const now = Date.now();
      const window = Math.floor(now / windowMs);
      const known = counts.get(identifier);
      let current = 0;
      let previous = 0;
      if (known?.window === window) {
        current = known.current;
        previous = known.previous;
      } else if (known?.window === window - 1) {
        previous = known.current;
      }
      const weightedPrevious = Math.floor((1 - (now % windowMs) / windowMs) * previous);
      const reset = (window + 1) * windowMs;

      const success = weightedPrevious + current < limit;
      if (success) current += 1;
      counts.set(identifier, { window, current, previous });
      noteWrite();
      if (!success) return { success, limit, remaining: 0, reset };
      return {
        success: true,
        limit,
        remaining: Math.max(0, limit - current - weightedPrevious),
        reset,
      };
    },
  };
}
