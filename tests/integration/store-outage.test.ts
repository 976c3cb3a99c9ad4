// The shared key-value store down for real: a redis-server of this test's own
// behind the Upstash REST stand-in, killed mid-test (and the REST endpoint
// itself closed), with the real local server in front. Paid routes fail
// closed (503 + Retry-After, the handler never runs, nothing is served free)
// and recover by themselves when the store is back; the invoice rate limiter
// fails closed too (lib/store/upstash.ts says why).
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { createUpstashBackend } from '../../lib/store/upstash.js';
import { kvReplayStore } from '../../lib/store/replay.js';
import { payChallenge, recordingProvider } from '../../packages/l402-paywall/tests/support/l402.js';
import { payDemoChallenge, useDevServer } from '../support/server.js';
import { redisServerMissing, startThrowawayRedis, type ThrowawayServer } from '../support/throwaway.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

const TOKEN = 'store-outage-rest-token';
const missing = redisServerMissing();
if (missing) console.warn(`store outage tests skipped: ${missing}`);

describe.skipIf(missing !== undefined)('the shared store down for real (own redis-server behind the Upstash REST stand-in)', () => {
  let redis: ThrowawayServer;
  let rest: UpstashRestServer;
  let restPort = 0;
  beforeAll(async () => {
    redis = await startThrowawayRedis();
    rest = await startUpstashRestServer({ redisUrl: redis.url, token: TOKEN });
    restPort = Number(new URL(rest.url).port);
  });
  afterAll(async () => {
    await rest?.close();
    await redis?.destroy();
  });
  const server = useDevServer(() => ({ UPSTASH_REDIS_REST_URL: rest.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, INVOICE_RATE_LIMIT_PER_MINUTE: '1000' }));

  const paidCredential = () => payDemoChallenge(server.url);

  const demo = (authorization: string) => fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization } });
  const invoice = () =>
    fetch(`${server.url}/api/invoice`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountSats: 5 }) });

  async function expectStoreUnavailable(response: Response): Promise<void> {
    expect(response.status).toBe(503);
    expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(response.headers.get('www-authenticate')).toBeNull();
    const body = (await response.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ code: 'STORE_UNAVAILABLE', error: expect.any(String) });
    expect(body).not.toHaveProperty('usd'); // nothing of the paid answer
  }

  // Each case runs once with Redis killed behind a working REST endpoint, and
  // once with the REST endpoint itself gone (connection refused).
  const outages = [
    {
      name: 'redis-server killed',
      down: () => redis.stop(),
      up: () => redis.start(),
    },
    {
      name: 'REST endpoint closed',
      down: () => rest.close(),
      up: async () => {
        rest = await startUpstashRestServer({ redisUrl: redis.url, token: TOKEN, port: restPort });
      },
    },
  ];

  for (const outage of outages) {
    it(`${outage.name}: paid requests answer 503 + Retry-After and are served once the store is back; a token used before stays used`, async () => {
      const used = await paidCredential();
      expect((await demo(used.authorization)).status).toBe(200);
      const waiting = await paidCredential();
      const payments = () =>
        server.ctx.database().then((db) => db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE payment_hash = $1', [waiting.paymentHash]));

      await outage.down();
      await expectStoreUnavailable(await demo(waiting.authorization));
      await expectStoreUnavailable(await demo(used.authorization));
      expect((await payments())[0]!.n).toBe(0);

      await outage.up();
      const served = await demo(waiting.authorization);
      expect(served.status).toBe(200);
      expect(await served.json()).toMatchObject({ usd: expect.any(Number) });
      // Once, and the token used before the outage is still used (Redis kept it: appendfsync always).
      expect(await (await demo(waiting.authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
      expect(await (await demo(used.authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
    }, 60_000); // the Upstash client retries a refused connection for about 4 s per call before giving up

    it(`${outage.name}: POST /api/invoice fails closed (503 STORE_UNAVAILABLE + Retry-After, no invoice), then works again`, async () => {
      expect((await invoice()).status).toBe(200);
      await outage.down();
      const refused = await invoice();
      await expectStoreUnavailable(refused);
      await outage.up();
      const again = await invoice();
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ paymentRequest: expect.stringMatching(/^lnbcrt/) });
    }, 60_000);
  }

  it('withL402 over the Upstash store: the handler never runs while the store is down', async () => {
    const backend = createUpstashBackend({ url: rest.url, token: TOKEN });
    const provider = recordingProvider();
    let served = 0;
    const handler = withL402(
      () => {
        served += 1;
        return Response.json({ secret: 'paid content' });
      },
      {
        priceSats: 10,
        provider,
        secret: 'store-outage-secret-0123456789abcdef0123456789',
        replayStore: kvReplayStore(backend.store, `test:outage:${randomUUID()}:`),
        onError: () => {},
      },
    );
    const url = 'https://api.example/paid';
    const authorization = await payChallenge(await handler(new Request(url)), provider);

    await redis.stop();
    const answers = await Promise.all(Array.from({ length: 5 }, () => handler(new Request(url, { headers: { authorization } }))));
    expect(answers.map((a) => a.status)).toEqual(Array(5).fill(503));
    for (const answer of answers) expect(answer.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(served).toBe(0);

    await redis.start();
    const after = await Promise.all(Array.from({ length: 5 }, () => handler(new Request(url, { headers: { authorization } }))));
    expect(after.map((a) => a.status).sort()).toEqual([200, 402, 402, 402, 402]);
    expect(served).toBe(1);
  });
});
