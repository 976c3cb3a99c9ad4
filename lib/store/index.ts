// Chooses the store implementation from plain config; lib/config.ts decides
// (from the environment) whether Upstash is configured and whether running
// without it is allowed.

import { createMemoryRateLimiter, createMemoryStore } from './memory.js';
import { createUpstashBackend, type UpstashConfig } from './upstash.js';
import type { KeyValueStore, RateLimiter, RateLimiterOptions } from './types.js';

// The store's port (its interfaces and StoreUnavailable), whole.
export * from './types.js';
export type { UpstashConfig } from './upstash.js';
export { createMemoryRateLimiter, createMemoryStore } from './memory.js';
export { createUpstashBackend, createUpstashRateLimiter, createUpstashStore } from './upstash.js';

export interface StoreConfig {
  /** Without it everything lives in this process: fine for one local server only. */
  upstash?: UpstashConfig;
}

export interface StoreBackend {
  readonly store: KeyValueStore;
  rateLimiter(options: RateLimiterOptions): RateLimiter;
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
