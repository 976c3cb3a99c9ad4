// The library's replay stores: the in-process one and the shared ones
// (l402-paywall/upstash, l402-paywall/redis) against the real redis-server,
// through the contract every replay store keeps; then one payment, many racing
// requests on two instances, one served; multi-use tokens counted exactly; a
// failed handler gives its use back; a store that is down fails closed.
import { randomUUID } from 'node:crypto';
import { Redis as UpstashRedis } from '@upstash/redis';
import { Redis as IORedis } from 'ioredis';
import { createClient } from 'redis';
import { memoryReplayStore, withL402, type L402Options, type ReplayStore } from 'l402-paywall';
import { redisReplayStore, type SharedReplayStore } from 'l402-paywall/redis';
import { upstashReplayStore } from 'l402-paywall/upstash';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payChallenge, recordingProvider, type RecordingProvider } from '../support/l402.js';
import { closedPort } from '../support/ports.js';
import { REDIS_URL, redisReachable } from '../support/redis.js';
import { replayContract } from '../support/replay-contract.js';
import { startUpstashRestServer, type UpstashRestServer } from '../support/upstash-rest-server.js';

const SECRET = 'library-replay-store-secret-0123456789abcdef';
const URL_PAID = 'https://api.example/paid';
const redisUp = await redisReachable();
if (!redisUp) console.warn(`Redis unreachable at ${REDIS_URL}: the library's Redis replay store tests are skipped.`);

let upstash: UpstashRestServer | undefined;
let ioredis: IORedis | undefined;
let nodeRedis: ReturnType<typeof createClient> | undefined;
beforeAll(async () => {
  if (!redisUp) return;
  upstash = await startUpstashRestServer({ redisUrl: REDIS_URL, token: 'library-test-token' });
  ioredis = new IORedis(REDIS_URL);
  nodeRedis = createClient({ url: REDIS_URL });
  await nodeRedis.connect();
});
afterAll(async () => {
  await upstash?.close();
  ioredis?.disconnect();
  await nodeRedis?.quit();
});

// Each client builds a fresh store on its own prefix, so tests never share counters.
const freshPrefix = () => `test:lib:${randomUUID()}:`;
const stores: [string, (prefix?: string) => SharedReplayStore][] = [
  [
    'upstashReplayStore (@upstash/redis over REST)',
    (prefix = freshPrefix()) => upstashReplayStore(new UpstashRedis({ url: upstash!.url, token: upstash!.token }), { prefix }),
  ],
  ['redisReplayStore (ioredis)', (prefix = freshPrefix()) => redisReplayStore(ioredis!, { prefix })],
  ['redisReplayStore (node-redis)', (prefix = freshPrefix()) => redisReplayStore(nodeRedis!, { prefix })],
];

function paidRoute(provider: RecordingProvider, replayStore: ReplayStore, options: Partial<L402Options> = {}, handler?: () => Response | Promise<Response>) {
  let served = 0;
  const route = withL402(
    async () => {
      served++;
      await new Promise((r) => setTimeout(r, 5)); // a handler that takes time widens the race
      return handler ? handler() : Response.json({ ok: true });
    },
    { priceSats: 10, provider, secret: SECRET, replayStore, ...options },
  );
  return { route, served: () => served };
}

describe.skipIf(!redisUp).each(stores)('%s on the real redis-server', (_name, makeStore) => {
  it('one payment, 100 racing requests split over two instances sharing the store: exactly one served', async () => {
    const provider = recordingProvider();
    const store = makeStore();
    const a = paidRoute(provider, store);
    const b = paidRoute(provider, store);
    const authorization = await payChallenge(await a.route(new Request(URL_PAID)), provider);
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b).route(new Request(URL_PAID, { headers: { authorization } }))));
    const codes = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => ((await r.json()) as { code: string }).code));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    expect(codes).toEqual(Array(99).fill('TOKEN_ALREADY_USED'));
    expect(a.served() + b.served()).toBe(1);
  });

  it('a token that buys 3 uses is served exactly 3 times under a race', async () => {
    const provider = recordingProvider();
    const { route, served } = paidRoute(provider, makeStore(), { uses: 3 });
    const authorization = await payChallenge(await route(new Request(URL_PAID)), provider);
    const answers = await Promise.all(Array.from({ length: 40 }, () => route(new Request(URL_PAID, { headers: { authorization } }))));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(3);
    expect(served()).toBe(3);
  });

  it('a handler that fails gives the use back: the same token is served on the retry, then never again', async () => {
    const provider = recordingProvider();
    let fail = true;
    const { route } = paidRoute(provider, makeStore(), {}, () => (fail ? new Response('upstream down', { status: 502 }) : Response.json({ ok: true })));
    const authorization = await payChallenge(await route(new Request(URL_PAID)), provider);
    expect((await route(new Request(URL_PAID, { headers: { authorization } }))).status).toBe(502);
    fail = false;
    expect((await route(new Request(URL_PAID, { headers: { authorization } }))).status).toBe(200);
    expect((await route(new Request(URL_PAID, { headers: { authorization } }))).status).toBe(402);
  });
});

// The store's own contract (what makes a lost answer safe to undo, the service's tests/integration/lost-answers.test.ts):
// the same cases on the library's in-process store and on the Redis scripts through each client,
// which are held to the in-process store answer by answer.
replayContract('memoryReplayStore (in process)', memoryReplayStore, { inProcess: true });
for (const [name, makeStore] of stores) replayContract(`${name}, real redis-server`, () => makeStore(), { sequences: 60 }, redisUp ? describe : describe.skip);

// What only Redis has: the key's expiry, and counters written before attempts were kept.
describe.skipIf(!redisUp).each(stores)('%s: the key in Redis', (_name, makeStore) => {
  const hash = () => randomUUID().replaceAll('-', '').padEnd(64, '0');
  const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

  it('an attempt released before its claim arrives never claims, and the key it leaves expires', async () => {
    const prefix = freshPrefix();
    const store = makeStore(prefix);
    const paid = hash();
    await store.release(paid, 'late', Math.floor(Date.now() / 1000) + 60);
    expect(await store.claim(paid, 1, inAnHour(), 'late')).toBe(false);
    expect(await store.usedCount(paid)).toBe(0);
    const ttl = await ioredis!.pttl(prefix + paid);
    expect(ttl).toBeGreaterThan(60_000);
    expect(ttl).toBeLessThanOrEqual(60_000 + 5 * 60_000);
    expect(await store.claim(paid, 1, inAnHour(), 'next')).toBe(true);
  });

  it('a plain counter written before attempts were kept keeps its count and its expiry', async () => {
    const prefix = freshPrefix();
    const store = makeStore(prefix);
    const paid = hash();
    await ioredis!.set(prefix + paid, '1', 'PX', 90_000);
    expect(await store.usedCount(paid)).toBe(1);
    expect(await store.claim(paid, 1, inAnHour(), 'a')).toBe(false);
    expect(await store.claim(paid, 2, inAnHour(), 'a')).toBe(true);
    expect(await store.usedCount(paid)).toBe(2);
    expect(await ioredis!.type(prefix + paid)).toBe('hash');
    const ttl = await ioredis!.pttl(prefix + paid);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(90_000);
  });
});

describe('a shared store that cannot be reached fails closed', () => {
  it('ioredis pointed at a closed port: 503 with Retry-After, the handler never runs', async () => {
    const port = await closedPort();
    const client = new IORedis(`redis://127.0.0.1:${port}`, {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
      retryStrategy: () => null,
    });
    client.on('error', () => {});
    const provider = recordingProvider();
    const { route, served } = paidRoute(provider, redisReplayStore(client), { onError: () => {} });
    const authorization = await payChallenge(await route(new Request(URL_PAID)), provider);
    const answer = await route(new Request(URL_PAID, { headers: { authorization } }));
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(((await answer.json()) as { code: string }).code).toBe('STORE_UNAVAILABLE');
    expect(served()).toBe(0);
    client.disconnect();
  });
});

describe('the stores refuse what is not a client, naming it', () => {
  it('upstashReplayStore and redisReplayStore', () => {
    expect(() => upstashReplayStore({} as never)).toThrow(/@upstash\/redis client/);
    expect(() => redisReplayStore({} as never)).toThrow(/ioredis or node-redis/);
  });
});
