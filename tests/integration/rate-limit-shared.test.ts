// The 20-per-minute limit on POST /api/invoice holds across function
// instances: two separate server processes (`npm start`), one real Redis
// behind the Upstash REST stand-in, one client address. A redis-server of this
// test's own keeps the limiter's keys away from every other suite.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisServerMissing, startThrowawayRedis, type ThrowawayServer } from '../support/throwaway.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

const TOKEN = 'shared-limit-rest-token';
const missing = redisServerMissing();
if (missing) console.warn(`shared rate limit tests skipped: ${missing}`);

describe.skipIf(missing !== undefined)('POST /api/invoice: 20 per minute per client address, across two server processes sharing Redis', () => {
  let redis: ThrowawayServer;
  let rest: UpstashRestServer;
  const instances: ServerProcess[] = [];
  beforeAll(async () => {
    redis = await startThrowawayRedis();
    rest = await startUpstashRestServer({ redisUrl: redis.url, token: TOKEN });
    // The default limit (INVOICE_RATE_LIMIT_PER_MINUTE unset): 20.
    const env = { UPSTASH_REDIS_REST_URL: rest.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, L402_SECRET: 'shared-limit-secret-0123456789abcdef0123456789abcdef' };
    instances.push(...(await Promise.all([startServerProcess(env), startServerProcess(env)])));
  }, 60_000);
  afterAll(async () => {
    await Promise.all(instances.map((i) => i.stop()));
    await rest?.close();
    await redis?.destroy();
  });

  it('the 21st request gets 429 + Retry-After, whichever instance it reaches', async () => {
    // Upstash's sliding window weighs the previous clock minute in: start well inside one, so 20 is exact.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 50));
    const post = (instance: ServerProcess, headers: Record<string, string> = {}) =>
      fetch(`${instance.url}/api/invoice`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ amountSats: 1 }),
      });

    // Alternating, ten on each: neither instance alone reaches 20.
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) statuses.push((await post(instances[i % 2]!)).status);
    expect(statuses).toEqual(Array(20).fill(200));

    for (const instance of instances) {
      const limited = await post(instance, { 'x-forwarded-for': '198.51.100.1', 'x-real-ip': '198.51.100.2' }); // headers a client sets do not choose the bucket
      expect(limited.status).toBe(429);
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(await limited.json()).toMatchObject({ code: 'RATE_LIMITED', retryAfter, error: expect.stringContaining('20 per minute') });
    }
  }, 90_000);
});
