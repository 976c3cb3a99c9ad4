// `l402-paywall/upstash`: the replay store on Upstash Redis (REST), what a
// Vercel deployment with more than one function instance needs: a token's
// uses are counted in one place, so one payment opens one request wherever it lands.

import { DEFAULT_PREFIX, scriptedReplayStore, type SharedReplayStore } from './stores/replay-scripts.js';
export type { SharedReplayStore } from './stores/replay-scripts.js';

/** The part of an `@upstash/redis` client this store uses (structural: any version with `eval` fits). */
export interface UpstashRedisLike {
  eval(script: string, keys: string[], args: string[]): Promise<unknown>;
}

export interface UpstashReplayStoreOptions {
  /** Key prefix; default `l402:uses:`. */
  prefix?: string;
}

/** `upstashReplayStore(Redis.fromEnv())`: uses counted atomically in Upstash. */
export function upstashReplayStore(redis: UpstashRedisLike, options: UpstashReplayStoreOptions = {}): SharedReplayStore {
  if (!redis || typeof redis.eval !== 'function')
    throw new TypeError('upstashReplayStore: pass an @upstash/redis client (new Redis({ url, token }) or Redis.fromEnv())');
  return scriptedReplayStore((script, key, args) => redis.eval(script, [key], args), options.prefix ?? DEFAULT_PREFIX);
}
