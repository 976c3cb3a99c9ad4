// The store port on Upstash Redis over its REST API: what every Vercel
// function instance shares. Decisions that must hold across instances
// (counters, set-if-absent) run inside Redis as one command or one Lua script.

import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from '@upstash/redis';
import { upstashReplayStore } from 'l402-paywall/upstash';
import { assertCounterMax, assertDelta, assertLimiterOptions, assertTtlMs } from './memory.js';
import { StoreUnavailable, type KeyValueStore, type RateLimiter, type RateLimiterOptions, type RateLimitResult, type SetOptions } from './types.js';

export interface UpstashConfig {
  /** REST URL, e.g. https://<name>.upstash.io */
  url: string;
  token: string;
}

/** One Upstash client shared by a store and any number of rate limiters. */
export interface UpstashBackend {
  readonly store: KeyValueStore;
  rateLimiter(options: RateLimiterOptions): RateLimiter;
  /** Runs a Lua script atomically in Redis (EVALSHA, EVAL when Redis does not know it yet): the session ledger's steps. */
  runScript: ScriptRunner;
}

export type ScriptRunner = (script: string, keys: string[], args: string[]) => Promise<unknown>;

// A missing key is created with the expiry; an existing one keeps its own.
// Lua numbers are doubles, so a value like "1.5" must be refused by hand
// before it is compared, as INCR would refuse it.
const INCREMENT_BELOW = `
local current = redis.call('GET', KEYS[1])
local max = tonumber(ARGV[1])
if current == false then
  if max <= 0 then return nil end
  redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
  return 1
end
local n = tonumber(current)
if n == nil or n ~= math.floor(n) then
  return redis.error_reply('ERR value is not an integer or out of range')
end
if n >= max then return nil end
return redis.call('INCR', KEYS[1])
`;

// GET first so a release on an expired key does not recreate it without expiry.
const DECREMENT_TO_ZERO = `
local current = redis.call('GET', KEYS[1])
if current == false then return 0 end
local n = tonumber(current)
if n == nil or n ~= math.floor(n) then
  return redis.error_reply('ERR value is not an integer or out of range')
end
if n <= 0 then return 0 end
return redis.call('DECR', KEYS[1])
`;

// The rate limiter remembers blocked identifiers in process so it can refuse
// them without a round trip. @upstash/ratelimit only forgets an entry when the
// same identifier comes back, so on a long-lived server a stream of distinct
// abusers would grow the map for ever; this caps it.
const MAX_REMEMBERED_BLOCKS = 10_000;

/** Longer than the client's own retries of a refused connection (about 4.3 s), so a store that is down fails as an error. */
const LIMITER_TIMEOUT_MS = 5_000;
/** The most a call to the store may take, its retries included; just above the limiter's, which reports its own timeout. */
const STORE_TIMEOUT_MS = 5_500;

class BoundedBlockCache extends Map<string, number> {
  override set(identifier: string, resetMs: number): this {
    if (this.size >= MAX_REMEMBERED_BLOCKS && !this.has(identifier)) {
      const now = Date.now();
      for (const [key, reset] of this) if (reset < now) this.delete(key);
      // Forgetting blocks only costs round trips; Redis still holds the counts.
      if (this.size >= MAX_REMEMBERED_BLOCKS) this.clear();
    }
    return super.set(identifier, resetMs);
  }
}

function counterFrom(reply: unknown): number {
  if (typeof reply === 'number') return reply;
  if (typeof reply === 'string' && /^-?\d+$/.test(reply)) return Number(reply);
  throw new Error(`Upstash returned ${JSON.stringify(reply)} where a counter was expected`);
}

/**
 * A Redis call whose failure (the REST endpoint unreachable, an error answer,
 * Redis behind it down) is StoreUnavailable. The client has already retried
 * connection failures (5 times, about 4 s in all) by then.
 */
async function reach<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw new StoreUnavailable(`Upstash Redis did not answer: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
}

function storeOn(redis: Redis): KeyValueStore {
  const incrementBelow = redis.createScript<unknown>(INCREMENT_BELOW);
  const decrementToZero = redis.createScript<unknown>(DECREMENT_TO_ZERO);
  const uses = upstashReplayStore(redis, { prefix: '' });

  return {
    kind: 'upstash',

    async get(key) {
      const value = await reach(() => redis.get<string>(key));
      return value ?? null;
    },

    async set(key: string, value: string, options: SetOptions = {}) {
      const { ttlMs, ifAbsent = false } = options;
      if (ttlMs !== undefined) assertTtlMs(ttlMs);
      const reply: unknown = await reach(() => {
        if (ifAbsent) return ttlMs === undefined ? redis.set(key, value, { nx: true }) : redis.set(key, value, { nx: true, px: ttlMs });
        return ttlMs === undefined ? redis.set(key, value) : redis.set(key, value, { px: ttlMs });
      });
      // SET NX answers nil when the key existed; anything else is "OK".
      return reply !== null;
    },

    async del(key) {
      return await reach(() => redis.del(key));
    },

    async incrementBelow(key, max, ttlMs) {
      assertCounterMax(max);
      assertTtlMs(ttlMs);
      // EVALSHA first, EVAL when Redis does not know the script yet.
      const reply = await reach(() => incrementBelow.exec([key], [String(max), String(ttlMs)]));
      return reply === null ? null : counterFrom(reply);
    },

    async decrementToZero(key) {
      return counterFrom(await reach(() => decrementToZero.exec([key], [])));
    },

    async incrementBy(key, delta) {
      assertDelta(delta);
      return await reach(() => redis.incrby(key, delta));
    },

    // The library's replay store on this client, keyed by the whole key: one set of scripts for both.
    claimUse: (key, maxUses, expiresAt, attempt) => reach(() => uses.claim(key, maxUses, expiresAt, attempt)),
    releaseUse: (key, attempt, expiresAt) => reach(() => uses.release(key, attempt, expiresAt)),
    usesHeld: (key) => reach(() => uses.usedCount(key)),
  };
}

function rateLimiterOn(redis: Redis, options: RateLimiterOptions): RateLimiter {
  assertLimiterOptions(options);
  const { limit, windowMs, prefix } = options;
  const ratelimit = new Ratelimit({
    redis,
    limiter: Ratelimit.slidingWindow(limit, `${windowMs} ms`),
    prefix,
    analytics: false,
    ephemeralCache: new BoundedBlockCache(),
    // A limiter whose store fails or has not answered in 5 s fails closed
    // (StoreUnavailable: 503 with Retry-After), not open. The limited routes
    // create invoices and directory entries: without their limit one client
    // could make any number of them. And while the store is down the paywall
    // refuses every paid request anyway (the replay check fails closed), so a
    // token sold now could not be used now. The library's own behaviour on a
    // timeout, letting the request pass, is overridden here.
    timeout: LIMITER_TIMEOUT_MS,
  });

  return {
    async limit(identifier): Promise<RateLimitResult> {
      const result = await reach(() => ratelimit.limit(identifier));
      // Resolved already without analytics or multi-region sync; awaited so no
      // work can outlive the serverless invocation if those are ever enabled.
      await result.pending;
      if (result.reason === 'timeout') throw new StoreUnavailable(`the rate limiter's store did not answer within ${LIMITER_TIMEOUT_MS} ms`);
      return {
        success: result.success,
        limit: result.limit,
        remaining: result.remaining,
        reset: result.reset,
      };
    },
  };
}

export function createUpstashBackend(config: UpstashConfig): UpstashBackend {
  // Values are our own strings: the client must hand them back verbatim, not
  // JSON.parse them (a stored "123" would come back as a number).
  // Every call is bounded (its own retries included): a store that takes connections and never
  // answers must not hold a paid request until the platform kills the function. A call cut short
  // is StoreUnavailable, like one refused; a replay claim that ran meanwhile is given back by its attempt.
  const redis = new Redis({
    url: config.url,
    token: config.token,
    automaticDeserialization: false,
    signal: () => AbortSignal.timeout(STORE_TIMEOUT_MS),
  });
  return {
    store: storeOn(redis),
    rateLimiter: (options) => rateLimiterOn(redis, options),
    runScript: scriptRunnerOn(redis),
  };
}

function scriptRunnerOn(redis: Redis): ScriptRunner {
  // One loaded script per text: a few fixed scripts, sent whole only when Redis does not know their hash.
  const scripts = new Map<string, ReturnType<Redis['createScript']>>();
  return (script, keys, args) => {
    let loaded = scripts.get(script);
    if (!loaded) scripts.set(script, (loaded = redis.createScript<unknown>(script)));
    return reach(() => loaded.exec(keys, args));
  };
}

export function createUpstashStore(config: UpstashConfig): KeyValueStore {
  return createUpstashBackend(config).store;
}

export function createUpstashRateLimiter(config: UpstashConfig, options: RateLimiterOptions): RateLimiter {
  return createUpstashBackend(config).rateLimiter(options);
}
