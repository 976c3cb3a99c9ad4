// The store port on Upstash Redis over its REST API: what every Vercel
// function instance shares. Decisions that must hold across instances
// (counters, set-if-absent) run inside Redis as one command or one Lua script.

import { Ratelimit } from '@upstash/ratelimit';
import { Redis } from '@upstash/redis';
import { assertCounterMax, assertDelta, assertTtlMs } from './memory.js';
import type {
  KeyValueStore,
  RateLimiter,
  RateLimiterOptions,
  RateLimitResult,
  SetOptions,
} from './types.js';

export interface UpstashConfig {
  /** REST URL, e.g. https://<name>.upstash.io */
  url: string;
  token: string;
}

/** One Upstash client shared by a store and any number of rate limiters. */
export interface UpstashBackend {
  readonly store: KeyValueStore;
  rateLimiter(options: RateLimiterOptions): RateLimiter;
}

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

function storeOn(redis: Redis): KeyValueStore {
  const incrementBelow = redis.createScript<unknown>(INCREMENT_BELOW);
  const decrementToZero = redis.createScript<unknown>(DECREMENT_TO_ZERO);

  return {
    kind: 'upstash',

    async get(key) {
      const value = await redis.get<string>(key);
      return value ?? null;
    },

    async set(key: string, value: string, options: SetOptions = {}) {
      const { ttlMs, ifAbsent = false } = options;
      if (ttlMs !== undefined) assertTtlMs(ttlMs);
      let reply: unknown;
      if (ifAbsent) {
        reply = ttlMs === undefined
          ? await redis.set(key, value, { nx: true })
          : await redis.set(key, value, { nx: true, px: ttlMs });
      } else {
        reply = ttlMs === undefined
          ? await redis.set(key, value)
          : await redis.set(key, value, { px: ttlMs });
      }
      // SET NX answers nil when the key existed; anything else is "OK".
      return reply !== null;
    },

    async del(key) {
      return await redis.del(key);
    },

    async incrementBelow(key, max, ttlMs) {
      assertCounterMax(max);
      assertTtlMs(ttlMs);
      // EVALSHA first, EVAL when Redis does not know the script yet.
      const reply = await incrementBelow.exec([key], [String(max), String(ttlMs)]);
      return reply === null ? null : counterFrom(reply);
    },

    async decrementToZero(key) {
      return counterFrom(await decrementToZero.exec([key], []));
    },

    async incrementBy(key, delta) {
      assertDelta(delta);
      return await redis.incrby(key, delta);
    },
  };
}

function rateLimiterOn(redis: Redis, options: RateLimiterOptions): RateLimiter {
  const { limit, windowMs, prefix } = options;
  if (!Number.isSafeInteger(limit) || limit < 0) {
    throw new RangeError(`limit must be a non-negative integer, got ${limit}`);
  }
  if (!Number.isSafeInteger(windowMs) || windowMs < 1) {
    throw new RangeError(`windowMs must be a positive integer, got ${windowMs}`);
  }
  const ratelimit = new Ratelimit({
    redis,
    limiter: Ratelimit.slidingWindow(limit, `${windowMs} ms`),
    prefix,
    analytics: false,
    ephemeralCache: new BoundedBlockCache(),
    // Kept at the library's default on purpose: when Upstash has not answered
    // in 5 s the request passes (reason "timeout"). Rate limiting is abuse
    // protection, not what guards payment, and a stalled limiter should not
    // take every paid endpoint down with it.
    timeout: 5_000,
  });

  return {
    async limit(identifier): Promise<RateLimitResult> {
      const result = await ratelimit.limit(identifier);
      // Resolved already without analytics or multi-region sync; awaited so no
      // work can outlive the serverless invocation if those are ever enabled.
      await result.pending;
      if (result.reason === 'timeout') {
        // The library reports limit 0 and reset 0 here, which callers would
        // turn into nonsense headers.
        return { success: true, limit, remaining: 0, reset: Date.now() };
      }
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
  const redis = new Redis({ url: config.url, token: config.token, automaticDeserialization: false });
  return {
    store: storeOn(redis),
    rateLimiter: (options) => rateLimiterOn(redis, options),
  };
}

export function createUpstashStore(config: UpstashConfig): KeyValueStore {
  return createUpstashBackend(config).store;
}

export function createUpstashRateLimiter(
  config: UpstashConfig,
  options: RateLimiterOptions,
): RateLimiter {
  return createUpstashBackend(config).rateLimiter(options);
}
