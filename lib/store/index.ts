// Chooses the store implementation from plain config; lib/config.ts decides
// (from the environment) whether Upstash is configured and whether running
// without it is allowed.
//
// Upstash's clients (@upstash/redis, @upstash/ratelimit, lib/store/upstash.ts)
// are imported on the first call to a store or limiter built for Upstash, not
// when this module loads: a function instance configured without Upstash never
// loads them, and one configured with it loads them on its first store call.

import { assertLimiterOptions, createMemoryRateLimiter, createMemoryStore } from './memory.js';
import type { ScriptRunner, UpstashConfig } from './upstash.js';
import type { KeyValueStore, RateLimiter, RateLimiterOptions } from './types.js';
import { loadOnce } from '../util/load-once.js';

// The store's port (its interfaces and StoreUnavailable), whole.
export * from './types.js';
export type { ScriptRunner, UpstashConfig } from './upstash.js';
export { createMemoryRateLimiter, createMemoryStore } from './memory.js';

export interface StoreConfig {
  /** Without it everything lives in this process: fine for one local server only. */
  upstash?: UpstashConfig;
}

export interface StoreBackend {
  readonly store: KeyValueStore;
  rateLimiter(options: RateLimiterOptions): RateLimiter;
  /** Lua scripts run atomically in Redis; absent in memory, where one process needs none. */
  runScript?: ScriptRunner;
}

/** A store and rate limiters over one connection. */
export function createBackend(config: StoreConfig): StoreBackend {
  if (config.upstash) return createUpstashBackend(config.upstash);
  return { store: createMemoryStore(), rateLimiter: createMemoryRateLimiter };
}

export function createStore(config: StoreConfig): KeyValueStore {
  return createBackend(config).store;
}

export function createRateLimiter(config: StoreConfig, options: RateLimiterOptions): RateLimiter {
  return createBackend(config).rateLimiter(options);
}

/**
 * lib/store/upstash.ts's backend, the module imported on first use: every
 * operation waits for it once, then calls straight through. Settings that the
 * eager backend refuses when a limiter is made (a limit that is not a whole
 * number) are refused here at the same moment.
 */
export function createUpstashBackend(config: UpstashConfig): StoreBackend {
  const backend = loadOnce(async () => (await import('./upstash.js')).createUpstashBackend(config));
  const call =
    <K extends Exclude<keyof KeyValueStore, 'kind'>>(name: K) =>
    async (...args: Parameters<KeyValueStore[K]>): Promise<Awaited<ReturnType<KeyValueStore[K]>>> => {
      const { store } = await backend();
      return (store[name] as (...a: Parameters<KeyValueStore[K]>) => Promise<Awaited<ReturnType<KeyValueStore[K]>>>)(...args);
    };
  const store: KeyValueStore = {
    kind: 'upstash',
    get: call('get'),
    set: call('set'),
    del: call('del'),
    incrementBelow: call('incrementBelow'),
    decrementToZero: call('decrementToZero'),
    incrementBy: call('incrementBy'),
    claimUse: call('claimUse'),
    releaseUse: call('releaseUse'),
    usesHeld: call('usesHeld'),
  };
  return {
    store,
    runScript: async (script, keys, args) => (await backend()).runScript(script, keys, args),
    rateLimiter(options) {
      assertLimiterOptions(options);
      let limiter: RateLimiter | undefined;
      return {
        async limit(identifier) {
          const loaded = await backend();
          limiter ??= loaded.rateLimiter(options);
          return limiter.limit(identifier);
        },
      };
    },
  };
}

export function createUpstashStore(config: UpstashConfig): KeyValueStore {
  return createUpstashBackend(config).store;
}

export function createUpstashRateLimiter(config: UpstashConfig, options: RateLimiterOptions): RateLimiter {
  return createUpstashBackend(config).rateLimiter(options);
}
