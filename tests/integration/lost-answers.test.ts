// A claim that lands in Redis but whose answer never comes back (a reply
// lost on the way, a timeout after the fact) must not cost the payer their
// request. The Upstash REST stand-in, in front of a real redis-server, runs
// the claim and then cuts the connection: the client's own retry must be
// answered "this attempt holds the use" (not TOKEN_ALREADY_USED), and when
// the client gives up, the paywall must give that exact use back so the
// payer's retry with the same token is served, once.
import { Redis as UpstashRedis } from '@upstash/redis';
import { withL402 } from 'l402-paywall';
import { upstashReplayStore } from 'l402-paywall/upstash';
import { devWallet, fetchWithL402, getL402Receipt, type PayInvoiceArgs } from 'l402-paywall/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payChallenge, recordingProvider } from '../../packages/l402-paywall/tests/support/l402.js';
import { payDemoChallenge, useDevServer } from '../support/server.js';
import { redisServerMissing, startThrowawayRedis, type ThrowawayServer } from '../support/throwaway.js';
import { isReplayClaim as isClaim, startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

const TOKEN = 'lost-answers-rest-token';
const SECRET = 'lost-answers-secret-0123456789abcdef0123456789';
const PAID_URL = 'https://api.example/paid';
const missing = redisServerMissing();
if (missing) console.warn(`lost-answer tests skipped: ${missing}`);

/** Polls until `check` passes (the paywall gives a use back after it answered). */
async function eventually(check: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`never happened: ${what}`);
}

describe.skipIf(missing !== undefined)('claims whose answer is lost (own redis-server behind the Upstash REST stand-in)', () => {
  let redis: ThrowawayServer;
  let rest: UpstashRestServer;
  beforeAll(async () => {
    redis = await startThrowawayRedis();
    rest = await startUpstashRestServer({ redisUrl: redis.url, token: TOKEN });
  });
  afterAll(async () => {
    await rest?.close();
    await redis?.destroy();
  });

  function paidRoute(client: UpstashRedis) {
    const provider = recordingProvider();
    const errors: string[] = [];
    let served = 0;
    const store = upstashReplayStore(client, { prefix: `lost:${Math.random()}:` });
    const route = withL402(
      () => {
        served += 1;
        return Response.json({ ok: true });
      },
      { priceSats: 10, provider, secret: SECRET, replayStore: store, onError: (_error, context) => errors.push(context) },
    );
    const call = (authorization: string) => route(new Request(PAID_URL, { headers: { authorization } }));
    return { provider, store, route, call, errors, served: () => served };
  }

  it('the client resends a claim that landed: the attempt holds its use, the request is served once', async () => {
    const { provider, route, call, served } = paidRoute(new UpstashRedis({ url: rest.url, token: TOKEN }));
    const authorization = await payChallenge(await route(new Request(PAID_URL)), provider);
    const lostBefore = rest.answersLost;
    rest.loseAnswers(isClaim, 1);

    expect((await call(authorization)).status).toBe(200);
    expect(rest.answersLost - lostBefore).toBe(1); // the claim ran, its answer was lost, the client sent it again
    expect(served()).toBe(1);
    expect(await (await call(authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
    expect(served()).toBe(1);
  });

  it('the client gives up on a claim that landed: 503 + Retry-After, the use is given back, the retry is served once', async () => {
    const { provider, store, route, call, served, errors } = paidRoute(new UpstashRedis({ url: rest.url, token: TOKEN, retry: false }));
    const authorization = await payChallenge(await route(new Request(PAID_URL)), provider);
    const paymentHash = provider.preimages.keys().next().value!;
    // Every try lost: Node's fetch itself resends a request whose connection was cut, once.
    rest.loseAnswers(isClaim, 10);
    const lostBefore = rest.answersLost;
    const refused = await call(authorization);
    expect(rest.answersLost - lostBefore).toBeGreaterThan(0);
    rest.loseAnswers(isClaim, 0);
    expect(refused.status).toBe(503);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await refused.json()).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(served()).toBe(0);
    expect(errors).toContain('replay store unavailable');
    await eventually(async () => (await store.usedCount(paymentHash)) === 0, 'the lost claim given back');

    expect((await call(authorization)).status).toBe(200);
    expect(served()).toBe(1);
    expect(await (await call(authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
    expect(await store.usedCount(paymentHash)).toBe(1);
  });

  describe('the hosted service over HTTP', () => {
    const server = useDevServer(() => ({ UPSTASH_REDIS_REST_URL: rest.url, UPSTASH_REDIS_REST_TOKEN: TOKEN, INVOICE_RATE_LIMIT_PER_MINUTE: '1000' }));
    const demo = (authorization: string) => fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization } });
    const logged = async (paymentHash: string) => {
      const db = await server.ctx.database();
      const rows = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments WHERE payment_hash = $1', [paymentHash]);
      return rows[0]!.n;
    };

    it('one lost answer: the client resends, the demo is served once and logged once', async () => {
      const { authorization, paymentHash } = await payDemoChallenge(server.url);
      rest.loseAnswers(isClaim, 1);
      expect((await demo(authorization)).status).toBe(200);
      expect(await (await demo(authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
      await eventually(async () => (await logged(paymentHash)) === 1, 'the payment logged');
      expect(await logged(paymentHash)).toBe(1);
    });

    it('every answer lost until the client gives up: 503, then the same token is served once and logged once', async () => {
      const { authorization, paymentHash } = await payDemoChallenge(server.url);
      // More than the client's retries (5): it gives up with the claim landed and held by this attempt.
      rest.loseAnswers(isClaim, 10);
      const refused = await demo(authorization);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      rest.loseAnswers(isClaim, 0);
      await eventually(async () => (await server.ctx.replay.usedCount(paymentHash)) === 0, 'the lost claim given back');

      expect((await demo(authorization)).status).toBe(200);
      expect(await (await demo(authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
      await eventually(async () => (await logged(paymentHash)) === 1, 'the payment logged');
      expect(await logged(paymentHash)).toBe(1);
    }, 30_000);

    it('a store that takes the claim and never answers: 503 within the store timeout, then the same token is served once', async () => {
      const { authorization, paymentHash } = await payDemoChallenge(server.url);
      rest.loseAnswers(isClaim, 1, 'stall');
      const refused = await demo(authorization);
      expect(refused.status).toBe(503);
      expect(await refused.json()).toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await eventually(async () => (await server.ctx.replay.usedCount(paymentHash)) === 0, 'the stalled claim given back');
      expect((await demo(authorization)).status).toBe(200);
      expect(await (await demo(authorization)).json()).toMatchObject({ code: 'TOKEN_ALREADY_USED' });
    }, 30_000);

    it('fetchWithL402 paying the demo while the claim\u2019s answers are lost: waits the Retry-After, is served with the same payment', async () => {
      const wallet = devWallet({ serviceUrl: server.url });
      let payments = 0;
      const counting = { network: wallet.network, payInvoice: (args: PayInvoiceArgs) => (payments++, wallet.payInvoice(args)) };
      rest.loseAnswers(isClaim, 10);
      const response = await fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, { wallet: counting, maxPriceSats: 5, tokens: false });
      rest.loseAnswers(isClaim, 0);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ usd: expect.any(Number) });
      expect(payments).toBe(1);
      const receipt = getL402Receipt(response)!;
      await eventually(async () => (await logged(receipt.paymentHash)) === 1, 'the payment logged');
    }, 30_000);
  });
});
