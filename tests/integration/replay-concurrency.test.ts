// One paid token, 100 concurrent requests: exactly one is served, whether uses
// are counted in memory or in a shared Redis (through the Upstash REST protocol).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { withL402, memoryReplayStore, type ReplayStore } from 'l402-paywall';
import { createMemoryStore } from '../../lib/store/memory.js';
import { createUpstashStore } from '../../lib/store/upstash.js';
import { kvReplayStore } from '../../lib/store/replay.js';
import { payChallenge, recordingProvider } from '../../packages/l402-paywall/tests/support/l402.js';
import { useDevServer } from '../support/server.js';
import { REDIS_URL, redisReachable } from '../../packages/l402-paywall/tests/support/redis.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

const SECRET = 'concurrency-test-secret-0123456789abcdef0123456789';
const redisUp = await redisReachable();
if (!redisUp) console.warn(`Redis unreachable at ${REDIS_URL}: the Redis replay tests are skipped.`);

let upstash: UpstashRestServer | undefined;
beforeAll(async () => {
  if (redisUp) upstash = await startUpstashRestServer({ redisUrl: REDIS_URL, token: 'test-token' });
});
afterAll(async () => upstash?.close());

async function oneTokenManyRequests(replayStore: ReplayStore, n = 100) {
  const provider = recordingProvider();
  let served = 0;
  const handler = withL402(
    async () => {
      served++;
      await new Promise((r) => setTimeout(r, 5)); // a handler that takes time widens the race
      return Response.json({ ok: true });
    },
    { priceSats: 10, provider, secret: SECRET, replayStore },
  );
  const url = 'https://api.example/paid';
  const authorization = await payChallenge(await handler(new Request(url)), provider);
  const answers = await Promise.all(Array.from({ length: n }, () => handler(new Request(url, { headers: { authorization } }))));
  const statuses = answers.map((a) => a.status);
  const refusals = await Promise.all(answers.filter((a) => a.status === 402).map((a) => a.json() as Promise<{ code: string }>));
  return { ok: statuses.filter((s) => s === 200).length, refused: refusals.filter((r) => r.code === 'TOKEN_ALREADY_USED').length, served };
}

describe('100 concurrent requests with one paid token', () => {
  it('in-process memory replay store: exactly one 200', async () => {
    expect(await oneTokenManyRequests(memoryReplayStore())).toEqual({ ok: 1, refused: 99, served: 1 });
  });

  it('memory key-value store: exactly one 200', async () => {
    expect(await oneTokenManyRequests(kvReplayStore(createMemoryStore()))).toEqual({ ok: 1, refused: 99, served: 1 });
  });

  it.skipIf(!redisUp)('real Redis via Upstash REST: exactly one 200', async () => {
    const store = createUpstashStore({ url: upstash!.url, token: upstash!.token });
    expect(await oneTokenManyRequests(kvReplayStore(store, `test:replay:${randomUUID()}:`))).toEqual({ ok: 1, refused: 99, served: 1 });
  });

  it.skipIf(!redisUp)('two instances sharing Redis: one token is served once across both', async () => {
    const provider = recordingProvider();
    const prefix = `test:replay:${randomUUID()}:`;
    const instance = () =>
      withL402(() => Response.json({ ok: true }), {
        priceSats: 10,
        provider,
        secret: SECRET,
        replayStore: kvReplayStore(createUpstashStore({ url: upstash!.url, token: upstash!.token }), prefix),
      });
    const [a, b] = [instance(), instance()];
    const url = 'https://api.example/paid';
    const authorization = await payChallenge(await a(new Request(url)), provider);
    const answers = await Promise.all(Array.from({ length: 100 }, (_, i) => (i % 2 ? a : b)(new Request(url, { headers: { authorization } }))));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
  });
});

describe.skipIf(!redisUp)('the hosted demo on Redis, over HTTP', () => {
  // Every refused replay gets a fresh challenge, so an invoice: beyond the per-client invoice budget they would be 429s.
  const server = useDevServer(() => ({
    UPSTASH_REDIS_REST_URL: upstash!.url,
    UPSTASH_REDIS_REST_TOKEN: upstash!.token,
    INVOICE_RATE_LIMIT_PER_MINUTE: '100000',
  }));

  it('100 concurrent paid requests with one token: exactly one 200', async () => {
    const challenge = await fetch(`${server.url}/api/demo/btc-price`);
    expect(challenge.status).toBe(402);
    const { macaroon, invoice } = (await challenge.json()) as { macaroon: string; invoice: string };
    const paid = await fetch(`${server.url}/api/dev/pay`, { method: 'POST', body: JSON.stringify({ invoice }) });
    const { preimage } = (await paid.json()) as { preimage: string };
    const headers = { authorization: `L402 ${macaroon}:${preimage}` };
    const statuses = await Promise.all(Array.from({ length: 100 }, () => fetch(`${server.url}/api/demo/btc-price`, { headers }).then((r) => r.status)));
    // Refused: 402 (used), or 503 when a loaded machine makes the shared store time out (fail closed). Never a second 200.
    expect(
      statuses.filter((s) => s !== 200 && s !== 402 && s !== 503),
      `statuses: ${JSON.stringify(statuses)}`,
    ).toEqual([]);
    const served = statuses.filter((s) => s === 200).length;
    expect(served).toBeLessThanOrEqual(1);
    if (served === 0) {
      // Every winning claim timed out (503): the paywall gives a claim whose answer was lost back, so the payer's retry is served.
      expect(statuses).toContain(503);
      let retried = 0;
      for (let i = 0; i < 40 && retried !== 200; i++) {
        retried = (await fetch(`${server.url}/api/demo/btc-price`, { headers })).status;
        if (retried !== 200) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(retried).toBe(200);
    }
    expect((await fetch(`${server.url}/api/demo/btc-price`, { headers })).status).toBe(402);
    expect(statuses.filter((s) => s === 402).length).toBeGreaterThan(0);
  });
});
