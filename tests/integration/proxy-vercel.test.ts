// The proxy as a Vercel function (docs/proxy.md "On Vercel"): the example
// function of the docs (tests/fixtures/proxy-vercel/api/proxy.ts, which the
// page shows verbatim) run through its fetch handler as Vercel runs it, with
// its real clients: Phoenixd (a fake Phoenixd server) and Upstash (@upstash/redis
// against a REST stand-in on the real Redis). An unpaid request is a 402 and
// never reaches the upstream; the paid one reaches it once; the credential
// again is refused, through the shared replay store.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REDIS_URL, redisReachable } from '../../packages/l402-paywall/tests/support/redis.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';
import { FakeNode } from '../../packages/l402-paywall/tests/support/fake-backends/node.js';
import { startFakePhoenixd, type FakePhoenixd } from '../../packages/l402-paywall/tests/support/fake-backends/phoenixd.js';
import { recordingUpstream, type Upstream } from '../../packages/l402-paywall/tests/support/proxy-upstream.js';

const FIXTURE = new URL('../fixtures/proxy-vercel/api/proxy.ts', import.meta.url);
const redisUp = await redisReachable(REDIS_URL);
const withRedis = (title: string) => (redisUp ? title : `${title} [SKIPPED: no Redis at ${REDIS_URL}; set REDIS_URL]`);

let phoenixd: FakePhoenixd;
let upstash: UpstashRestServer;
let upstream: Upstream;
let fn: { fetch(request: Request): Promise<Response> };
const saved = { ...process.env };

beforeAll(async () => {
  if (!redisUp) return;
  phoenixd = await startFakePhoenixd(new FakeNode('bitcoin'));
  upstash = await startUpstashRestServer({ redisUrl: REDIS_URL, token: 'proxy-vercel-token' });
  upstream = await recordingUpstream();
  Object.assign(process.env, {
    UPSTASH_REDIS_REST_URL: upstash.url,
    UPSTASH_REDIS_REST_TOKEN: upstash.token,
    PHOENIXD_URL: phoenixd.url,
    PHOENIXD_PASSWORD: phoenixd.password,
    L402_SECRET: 'proxy-vercel-secret-0123456789abcdef0123456789',
    UPSTREAM_URL: upstream.url,
  });
  fn = (await import(FIXTURE.href)).default;
});

afterAll(async () => {
  process.env = saved;
  await Promise.all([phoenixd?.close(), upstash?.close(), upstream?.close()]);
});

describe('the proxy as a Vercel function', () => {
  it('is the function the docs show', () => {
    const docs = readFileSync(new URL('../../docs/proxy.md', import.meta.url), 'utf8');
    const source = readFileSync(FIXTURE, 'utf8').trim();
    expect(docs).toContain(source.split('\n').slice(2).join('\n'));
  });

  it.runIf(redisUp)(withRedis('sells the upstream: 402 unforwarded, paid once, the credential again refused'), async () => {
    const unpaid = await fn.fetch(new Request('https://paid.example/echo?x=1', { method: 'POST', body: 'hi' }));
    expect(unpaid.status).toBe(402);
    expect(upstream.received).toHaveLength(0);
    const { macaroon, paymentHash, priceSats } = (await unpaid.json()) as { macaroon: string; paymentHash: string; priceSats: number };
    expect(priceSats).toBe(2);
    await phoenixd.settle(paymentHash);
    const preimage = phoenixd.node.invoices.get(paymentHash)!.preimage;
    const authorization = `L402 ${macaroon}:${preimage}`;
    const paid = await fn.fetch(new Request('https://paid.example/echo?x=1', { method: 'POST', body: 'hi', headers: { authorization } }));
    expect(paid.status).toBe(201);
    const got = (await paid.json()) as { url: string; body: string; headers: Record<string, string> };
    expect(got).toMatchObject({ url: '/echo?x=1', body: 'hi' });
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-forwarded-host']).toBe('paid.example');
    expect(got.headers['x-forwarded-proto']).toBe('https');
    const again = await fn.fetch(new Request('https://paid.example/echo?x=1', { method: 'POST', body: 'hi', headers: { authorization } }));
    expect(again.status).toBe(402);
    expect(((await again.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
    expect(upstream.received).toHaveLength(1);
    const free = await fn.fetch(new Request('https://paid.example/v1/models'));
    expect(free.status).toBe(200);
    expect(upstream.received).toHaveLength(2);
  });
});
