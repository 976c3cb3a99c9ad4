// One contract for every store implementation: the replay guard and the
// counters built on it rely on exactly these behaviours, whichever store runs.
// The Upstash store is exercised through @upstash/redis against a local
// Upstash-compatible REST server backed by a real redis-server.

import { randomUUID } from 'node:crypto';
import { Redis as IORedis } from 'ioredis';
import { Redis as UpstashRedis } from '@upstash/redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createBackend, createMemoryRateLimiter, createUpstashStore, type StoreBackend } from '../../lib/store/index.js';
import { createJournaledStore } from '../../lib/store/journal.js';
import { kvReplayStore } from '../../lib/store/replay.js';
import { replayContract } from '../../packages/l402-paywall/tests/support/replay-contract.js';
import { REDIS_URL, redisReachable } from '../../packages/l402-paywall/tests/support/redis.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

// Tests in parallel (and earlier runs) share one Redis: every key lives under this.
const RUN = `test:store:${randomUUID()}`;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const redisUp = await redisReachable(REDIS_URL);
if (!redisUp) console.warn(`Redis unreachable at ${REDIS_URL}: Upstash store tests are skipped.`);
const describeWithRedis = redisUp ? describe : describe.skip;
const withRedis = (title: string) => (redisUp ? title : `${title} [SKIPPED: no Redis at ${REDIS_URL}; set REDIS_URL]`);

let keyCount = 0;
const freshKey = (label: string) => `${RUN}:${label}:${++keyCount}`;

// The sliding window counts part of the previous window: a run that straddles
// a boundary would see a different limit. Start well inside a window instead.
async function awayFromWindowEdge(windowMs: number): Promise<void> {
  const untilEdge = windowMs - (Date.now() % windowMs);
  if (untilEdge < 3_000) await sleep(untilEdge + 20);
}

function storeContract(title: string, describeFn: typeof describe, backend: () => StoreBackend) {
  describeFn(title, () => {
    it('gets what was set, overwrites, and deletes', async () => {
      const { store } = backend();
      const key = freshKey('basic');
      expect(await store.get(key)).toBeNull();
      expect(await store.set(key, 'one')).toBe(true);
      expect(await store.get(key)).toBe('one');
      expect(await store.set(key, 'two')).toBe(true);
      expect(await store.get(key)).toBe('two');
      expect(await store.del(key)).toBe(1);
      expect(await store.del(key)).toBe(0);
      expect(await store.get(key)).toBeNull();
    });

    it('returns values verbatim, never parsed', async () => {
      const { store } = backend();
      for (const value of ['123', 'true', 'null', 'OK', '{"a":1}', '', 'ünïcødé ⚡ 🙂', 'a\nb']) {
        const key = freshKey('verbatim');
        await store.set(key, value);
        expect(await store.get(key)).toBe(value);
      }
    });

    it('expires keys after ttlMs', async () => {
      const { store } = backend();
      const key = freshKey('ttl');
      await store.set(key, 'v', { ttlMs: 100 });
      expect(await store.get(key)).toBe('v');
      await sleep(250);
      expect(await store.get(key)).toBeNull();
      expect(await store.del(key)).toBe(0);
    });

    it('drops the expiry when a key is set again without ttlMs', async () => {
      const { store } = backend();
      const key = freshKey('persist');
      await store.set(key, 'short', { ttlMs: 100 });
      await store.set(key, 'lasting');
      await sleep(250);
      expect(await store.get(key)).toBe('lasting');
    });

    it('sets ifAbsent only when the key is missing or expired', async () => {
      const { store } = backend();
      const key = freshKey('nx');
      // Long enough that a loaded machine reads it back before it expires.
      expect(await store.set(key, 'first', { ifAbsent: true, ttlMs: 1_000 })).toBe(true);
      expect(await store.set(key, 'second', { ifAbsent: true })).toBe(false);
      expect(await store.get(key)).toBe('first');
      await sleep(1_100);
      expect(await store.set(key, 'third', { ifAbsent: true })).toBe(true);
      expect(await store.get(key)).toBe('third');
    });

    it('refuses a ttlMs that is not a positive integer', async () => {
      const { store } = backend();
      const key = freshKey('badttl');
      await expect(store.set(key, 'v', { ttlMs: 0 })).rejects.toThrow(RangeError);
      await expect(store.set(key, 'v', { ttlMs: 1.5 })).rejects.toThrow(RangeError);
      await expect(store.incrementBelow(key, 5, -1)).rejects.toThrow(RangeError);
      expect(await store.get(key)).toBeNull();
    });

    it('incrementBelow counts up to max, then returns null and changes nothing', async () => {
      const { store } = backend();
      const key = freshKey('incr');
      expect(await store.incrementBelow(key, 3, 10_000)).toBe(1);
      expect(await store.incrementBelow(key, 3, 10_000)).toBe(2);
      expect(await store.incrementBelow(key, 3, 10_000)).toBe(3);
      expect(await store.incrementBelow(key, 3, 10_000)).toBeNull();
      expect(await store.get(key)).toBe('3');
      // A higher cap lets the same counter go on.
      expect(await store.incrementBelow(key, 4, 10_000)).toBe(4);
    });

    it('incrementBelow with max 0 creates nothing', async () => {
      const { store } = backend();
      const key = freshKey('max0');
      expect(await store.incrementBelow(key, 0, 10_000)).toBeNull();
      expect(await store.get(key)).toBeNull();
    });

    it('incrementBelow gives a fresh key the ttl and leaves an existing expiry alone', async () => {
      const { store } = backend();
      const key = freshKey('incrttl');
      expect(await store.incrementBelow(key, 5, 150)).toBe(1);
      // A later, longer ttl must not extend the counter's life.
      expect(await store.incrementBelow(key, 5, 60_000)).toBe(2);
      await sleep(300);
      expect(await store.get(key)).toBeNull();
      expect(await store.incrementBelow(key, 5, 150)).toBe(1);
    });

    it('incrementBy adds signed amounts atomically and refuses non-integers', async () => {
      const { store } = backend();
      const key = freshKey('incrby');
      expect(await store.incrementBy(key, 1500)).toBe(1500);
      expect(await store.incrementBy(key, -2000)).toBe(-500);
      await Promise.all(Array.from({ length: 50 }, () => store.incrementBy(key, 10)));
      expect(await store.get(key)).toBe('0');
      await expect(store.incrementBy(key, 0.5)).rejects.toThrow(RangeError);
      await store.set(key, 'not a number');
      await expect(store.incrementBy(key, 1)).rejects.toThrow(/not an integer/);
    });

    it('decrementToZero never goes below zero and does not create keys', async () => {
      const { store } = backend();
      const key = freshKey('decr');
      expect(await store.decrementToZero(key)).toBe(0);
      expect(await store.get(key)).toBeNull();
      await store.incrementBelow(key, 10, 10_000);
      await store.incrementBelow(key, 10, 10_000);
      expect(await store.decrementToZero(key)).toBe(1);
      expect(await store.decrementToZero(key)).toBe(0);
      expect(await store.decrementToZero(key)).toBe(0);
      expect(await store.get(key)).toBe('0');
      // The freed slot can be taken again.
      expect(await store.incrementBelow(key, 1, 10_000)).toBe(1);
    });

    it('decrementToZero keeps the key expiry', async () => {
      const { store } = backend();
      const key = freshKey('decrttl');
      await store.incrementBelow(key, 10, 150);
      await store.incrementBelow(key, 10, 150);
      expect(await store.decrementToZero(key)).toBe(1);
      await sleep(300);
      expect(await store.get(key)).toBeNull();
    });

    it('refuses to count a value that is not an integer', async () => {
      const { store } = backend();
      const key = freshKey('nan');
      await store.set(key, 'abc');
      await expect(store.incrementBelow(key, 5, 10_000)).rejects.toThrow(/not an integer/);
      await expect(store.decrementToZero(key)).rejects.toThrow(/not an integer/);
      await store.set(key, '1.5');
      await expect(store.incrementBelow(key, 5, 10_000)).rejects.toThrow(/not an integer/);
      expect(await store.get(key)).toBe('1.5');
    });

    it('lets exactly one of 200 concurrent incrementBelow(max 1) through', async () => {
      const { store } = backend();
      const key = freshKey('race1');
      const results = await Promise.all(Array.from({ length: 200 }, () => store.incrementBelow(key, 1, 10_000)));
      expect(results.filter((r) => r !== null)).toEqual([1]);
      expect(await store.get(key)).toBe('1');
    });

    it('hands out each count below max exactly once under concurrency', async () => {
      const { store } = backend();
      const key = freshKey('race50');
      const results = await Promise.all(Array.from({ length: 200 }, () => store.incrementBelow(key, 50, 10_000)));
      const granted = results.filter((r): r is number => r !== null).sort((a, b) => a - b);
      expect(granted).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(await store.get(key)).toBe('50');
    });

    it('stops concurrent decrements at zero', async () => {
      const { store } = backend();
      const key = freshKey('racedecr');
      for (let i = 0; i < 10; i++) await store.incrementBelow(key, 10, 10_000);
      const results = await Promise.all(Array.from({ length: 50 }, () => store.decrementToZero(key)));
      expect(results.filter((r) => r > 0).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(results.filter((r) => r === 0)).toHaveLength(41);
      expect(await store.get(key)).toBe('0');
    });

    // The replay store's contract runs on the port through kvReplayStore (tests/support/replay-contract.ts, below);
    // what only the port has: counters written before attempts were kept.
    const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

    it('carries a plain counter written before attempts were kept over, with its count', async () => {
      const { store } = backend();
      const key = freshKey('legacy');
      expect(await store.incrementBelow(key, 5, 60_000)).toBe(1);
      expect(await store.usesHeld(key)).toBe(1);
      expect(await store.claimUse(key, 1, inAnHour(), 'a')).toBe(false);
      expect(await store.claimUse(key, 2, inAnHour(), 'a')).toBe(true);
      expect(await store.usesHeld(key)).toBe(2);
    });

    it('lets exactly one of 100 concurrent set-if-absent win', async () => {
      const { store } = backend();
      const key = freshKey('racenx');
      const results = await Promise.all(Array.from({ length: 100 }, (_, i) => store.set(key, `writer-${i}`, { ifAbsent: true, ttlMs: 10_000 })));
      expect(results.filter(Boolean)).toHaveLength(1);
      expect(await store.get(key)).toBe(`writer-${results.indexOf(true)}`);
    });

    it('rate limits 20 per minute, then refuses until a reset in the future', async () => {
      const windowMs = 60_000;
      await awayFromWindowEdge(windowMs);
      const limiter = backend().rateLimiter({ limit: 20, windowMs, prefix: `${RUN}:rl:${++keyCount}` });
      const client = 'client-a';

      for (let i = 0; i < 20; i++) {
        const result = await limiter.limit(client);
        expect(result).toMatchObject({ success: true, limit: 20, remaining: 19 - i });
      }
      const before = Date.now();
      const refused = await limiter.limit(client);
      expect(refused.success).toBe(false);
      expect(refused.remaining).toBe(0);
      expect(refused.reset).toBeGreaterThan(before);
      expect(refused.reset).toBeLessThanOrEqual(before + windowMs);
      expect((await limiter.limit(client)).success).toBe(false);

      // Another identifier has its own budget.
      expect(await limiter.limit('client-b')).toMatchObject({ success: true, remaining: 19 });
    });

    it('keeps separately prefixed limiters apart', async () => {
      const windowMs = 60_000;
      await awayFromWindowEdge(windowMs);
      const strict = backend().rateLimiter({ limit: 1, windowMs, prefix: `${RUN}:rl:${++keyCount}` });
      const loose = backend().rateLimiter({ limit: 5, windowMs, prefix: `${RUN}:rl:${++keyCount}` });
      expect((await strict.limit('same-client')).success).toBe(true);
      expect((await strict.limit('same-client')).success).toBe(false);
      expect(await loose.limit('same-client')).toMatchObject({ success: true, remaining: 4 });
    });
  });
}

let server: UpstashRestServer | undefined;
let upstashBackend: StoreBackend | undefined;
const memoryBackend = createBackend({});

storeContract('memory store', describe, () => memoryBackend);
// Journaled: what `npm start` keeps its replay marks in.
const journaledBackend = {
  store: createJournaledStore(join(mkdtempSync(join(tmpdir(), 'store-journal-')), 'journal.jsonl')),
  rateLimiter: createMemoryRateLimiter,
};
storeContract('journaled memory store', describe, () => journaledBackend);
// The replay rule on the port, each store against the library's in-process implementation.
replayContract('memory store (kvReplayStore)', () => kvReplayStore(memoryBackend.store, `${RUN}:uses:`));
replayContract('journaled memory store (kvReplayStore)', () => kvReplayStore(journaledBackend.store, `${RUN}:uses:`));

describeWithRedis(withRedis('upstash store (REST server -> redis)'), () => {
  beforeAll(async () => {
    server = await startUpstashRestServer({ redisUrl: REDIS_URL, token: `token-${randomUUID()}` });
    upstashBackend = createBackend({ upstash: { url: server.url, token: server.token } });
    expect(upstashBackend.store.kind).toBe('upstash');
  });

  storeContract('contract', describe, () => {
    if (!upstashBackend) throw new Error('Upstash backend not started');
    return upstashBackend;
  });

  replayContract(
    'upstash store (kvReplayStore)',
    () => {
      if (!upstashBackend) throw new Error('Upstash backend not started');
      return kvReplayStore(upstashBackend.store, `${RUN}:uses:`);
    },
    { sequences: 60 },
  );

  describe('REST server protocol', () => {
    const client = () => {
      if (!server) throw new Error('server not started');
      return new UpstashRedis({ url: server.url, token: server.token, automaticDeserialization: false });
    };

    it('refuses a wrong token with 401', async () => {
      if (!server) throw new Error('server not started');
      const store = createUpstashStore({ url: server.url, token: 'wrong' });
      await expect(store.get(freshKey('auth'))).rejects.toThrow(/Unauthorized/);
      const response = await fetch(server.url, {
        method: 'POST',
        headers: { authorization: 'Bearer wrong' },
        body: JSON.stringify(['PING']),
      });
      expect(response.status).toBe(401);
    });

    it('answers NOSCRIPT for an unknown sha, like Redis', async () => {
      await expect(client().evalsha('0'.repeat(40), [], [])).rejects.toThrow(/NOSCRIPT/);
    });

    it('runs shebang scripts by EVAL, then by the sha the client computed', async () => {
      const redis = client();
      const script = `#!lua flags=allow-key-locking\nreturn {ARGV[1], 7, redis.call('GET', KEYS[1])}`;
      const key = freshKey('script');
      await redis.set(key, 'stored ⚡');
      expect(await redis.eval(script, [key], ['arg'])).toEqual(['arg', 7, 'stored ⚡']);
      const { createHash } = await import('node:crypto');
      const clientSha = createHash('sha1').update(script).digest('hex');
      expect(await redis.evalsha(clientSha, [key], ['again'])).toEqual(['again', 7, 'stored ⚡']);
      expect(await redis.scriptExists(clientSha)).toEqual([1]);
    });

    it('runs multi-exec transactions', async () => {
      const key = freshKey('multi');
      const results = await client().multi().set(key, 'a').get(key).del(key).exec();
      expect(results).toEqual(['OK', 'a', 1]);
    });
  });

  afterAll(async () => {
    // Keys without expiry would otherwise pile up in a shared Redis.
    const redis = new IORedis(REDIS_URL);
    try {
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${RUN}:*`, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    } finally {
      redis.disconnect();
    }
    await server?.close();
  });
});
