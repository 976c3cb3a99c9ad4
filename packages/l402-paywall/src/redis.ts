// `l402-paywall/redis`: the replay store on a Redis server over a plain
// connection, for Express, Hono or Node servers outside Vercel that run more
// than one process. Works with `ioredis` and with `redis` (node-redis 4+).

import { DEFAULT_PREFIX, scriptedReplayStore, type SharedReplayStore } from './stores/replay-scripts.js';
export type { SharedReplayStore } from './stores/replay-scripts.js';

/** ioredis: `eval(script, numKeys, ...keysAndArgs)`. */
interface IoRedisLike {
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  status: string;
}

/** node-redis 4+: `eval(script, { keys, arguments })`. */
interface NodeRedisLike {
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  isOpen: boolean;
}

export type RedisClientLike = IoRedisLike | NodeRedisLike;

export interface RedisReplayStoreOptions {
  /** Key prefix; default `l402:uses:`. */
  prefix?: string;
}

/** `redisReplayStore(new Redis(url))` (ioredis) or `redisReplayStore(await createClient({ url }).connect())` (redis). */
export function redisReplayStore(client: RedisClientLike, options: RedisReplayStoreOptions = {}): SharedReplayStore {
  const prefix = options.prefix ?? DEFAULT_PREFIX;
  if (client && typeof client.eval === 'function' && 'isOpen' in client) {
    return scriptedReplayStore((script, key, args) => client.eval(script, { keys: [key], arguments: args }), prefix);
  }
  if (client && typeof client.eval === 'function' && 'status' in client) {
    return scriptedReplayStore((script, key, args) => (client as IoRedisLike).eval(script, 1, key, ...args), prefix);
  }
  throw new TypeError('redisReplayStore: pass a connected ioredis or node-redis (redis) client');
}
