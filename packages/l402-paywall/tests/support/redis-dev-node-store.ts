// The dev node's store (DevNodeStore) on a real Redis, under a key prefix: dev
// nodes in different processes built on it form one fake network, as the
// service's dev nodes do over its shared store, so an invoice made in one
// process is paid, looked up and credited in another.
import type { Redis as IORedis } from 'ioredis';
import type { DevNodeStore } from 'l402-paywall/backends';

export function redisDevNodeStore(redis: IORedis, prefix: string): DevNodeStore {
  return {
    get: (key) => redis.get(prefix + key),
    async set(key, value, { ttlMs, ifAbsent = false } = {}) {
      const options = [...(ttlMs === undefined ? [] : ['PX', String(Math.max(1, Math.ceil(ttlMs)))]), ...(ifAbsent ? ['NX'] : [])];
      return (await redis.call('SET', prefix + key, value, ...options)) === 'OK';
    },
    incrementBy: (key, delta) => redis.incrby(prefix + key, delta),
  };
}
