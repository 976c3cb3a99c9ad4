// The stores a paywall selling sessions needs (its session ledger and its
// replay store), in process or on the real redis-server, for the session test
// files. Each call of a Redis factory builds a fresh client object on the same
// keys: what two processes sharing Redis do.
import { randomUUID } from 'node:crypto';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { memoryReplayStore, type L402Options } from 'l402-paywall';
import { memorySessionLedger, scriptedSessionLedger, type SessionLedger } from 'l402-paywall/lightning';
import { redisReplayStore } from 'l402-paywall/redis';
import { REDIS_URL, redisReachable } from './redis.js';

export interface SessionStores {
  ledger: () => SessionLedger;
  replayStore: () => L402Options['replayStore'];
}

export const sessionRedisUp = await redisReachable();

/** `memory()` and `onRedis()` stores for one test file (its Redis client opened and closed with the file; keys under `test:<name>:`). */
export function useSessionStores(name: string): { memory: () => SessionStores; onRedis: () => SessionStores } {
  let redis: IORedis | undefined;
  beforeAll(() => {
    if (sessionRedisUp) redis = new IORedis(REDIS_URL);
  });
  afterAll(() => redis?.disconnect());
  return {
    memory() {
      const ledger = memorySessionLedger();
      const replayStore = memoryReplayStore();
      return { ledger: () => ledger, replayStore: () => replayStore };
    },
    onRedis() {
      const prefix = `test:${name}:${randomUUID()}:`;
      const run = (script: string, keys: string[], args: string[]) => redis!.eval(script, keys.length, ...keys, ...args);
      return { ledger: () => scriptedSessionLedger(run, prefix), replayStore: () => redisReplayStore(redis!, { prefix: `${prefix}use:` }) };
    },
  };
}
