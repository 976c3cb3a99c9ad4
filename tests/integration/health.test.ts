// GET /api/health through the real local server. Anyone sees up or down per
// dependency (and, on a deployment lacking settings, which ones); which
// backend, store and database, their latencies and errors only an admin
// session sees (and the logs). The backend is asked at most once per
// HEALTH_PROBE_TTL_MS however many requests come, each client IP gets
// HEALTH_RATE_LIMIT_PER_MINUTE in the shared store, and nothing is cached.
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { HEALTH_PROBE_TTL_MS } from '../../lib/service/health.js';
import { startFakeLnbits, type FakeLnbits } from '../../packages/l402-paywall/tests/support/fake-backends/lnbits.js';
import { logIn, testWallet, type TestWallet } from '../support/lnurl-wallet.js';
import { rawRequest } from '../support/raw-request.js';
import { useDevServer } from '../support/server.js';
import { stackSkipReason, useStack } from '../support/stack.js';
import { startWellInsideMinute, useRealClock } from '../support/clock-minute.js';

const PUBLIC_KEYS = ['checkedAt', 'database', 'missing', 'ok', 'problems', 'provider', 'store'];

describe('with the embedded dev node (npm start defaults)', () => {
  const server = useDevServer();
  // Opened (and migrated) first: on a busy machine PGlite's start-up alone can outlast
  // the health check's 10 s, and this test is about the report, not that race.
  beforeAll(() => server.ctx.database(), 60_000);

  it('answers 200, up per dependency and nothing more, not cached', async () => {
    const response = await fetch(`${server.url}/api/health`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('retry-after')).toBeNull();
    expect(await response.json()).toEqual({
      ok: true,
      provider: { ok: true },
      store: { ok: true },
      database: { ok: true },
      problems: [],
      missing: [],
      checkedAt: expect.any(String),
    });
  });

  it('answers only GET (and OPTIONS)', async () => {
    const response = await fetch(`${server.url}/api/health`, { method: 'POST' });
    expect(response.status).toBe(405);
  });
});

describe('with LNbits answering', () => {
  let fake: FakeLnbits;
  beforeAll(async () => {
    fake = await startFakeLnbits();
  });
  afterAll(() => fake.close());
  const server = useDevServer(() => ({ LIGHTNING_PROVIDER: 'lnbits', LIGHTNING_NETWORK: 'regtest', LNBITS_URL: fake.url, LNBITS_API_KEY: fake.invoiceKey }));

  it('answers 200 after asking LNbits for the balance, and shows no key', { timeout: 60_000 }, async () => {
    await server.ctx.database(); // as above: opened first, PGlite's start-up is not what this tests
    const response = await fetch(`${server.url}/api/health`);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ ok: true, provider: { ok: true } });
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/api/v1/wallet' });
    expect(text).not.toContain(fake.invoiceKey);
    expect(text).not.toContain('lnbits');
  });

  it('POST /api/invoice gets a real invoice from LNbits', async () => {
    const response = await fetch(`${server.url}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountSats: 21 }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { paymentRequest: string; paymentHash: string };
    expect(fake.node.invoices.get(body.paymentHash)?.invoice).toBe(body.paymentRequest);
  });
});

describe('in production with settings missing', () => {
  const server = useDevServer(() => ({ NODE_ENV: 'production', LIGHTNING_PROVIDER: 'lnbits', LNBITS_URL: 'https://lnbits.example' }));

  it('answers 503 naming every missing setting, and the paywall fails closed', async () => {
    const response = await fetch(`${server.url}/api/health`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBeTruthy();
    const body = (await response.json()) as { ok: boolean; problems: string[]; missing: string[] };
    expect(body.ok).toBe(false);
    expect(body.missing.join('\n')).toMatch(/UPSTASH_REDIS_REST_URL/);
    expect(body.missing.join('\n')).toMatch(/LNBITS_API_KEY \(needed by LIGHTNING_PROVIDER=lnbits\)/);
    expect(body.problems.join('\n')).toMatch(/UPSTASH_REDIS_REST_URL.*: create an Upstash Redis database/);
    expect(body.problems.join('\n')).toMatch(/LNBITS_API_KEY \(needed by LIGHTNING_PROVIDER=lnbits\)/);
    const invoice = await fetch(`${server.url}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountSats: 1 }),
    });
    expect(invoice.status).toBe(503);
    // The health check and every refused request name the settings in the same words.
    const refused = (await invoice.json()) as { error: string; missing: string[] };
    expect(refused.missing).toEqual(body.missing);
    // problems says the same in words, with how to set each (what a fresh deployment's landing page shows).
    expect(body.problems).toHaveLength(body.missing.length);
    expect(refused.error).toBe(`Service is not configured: set ${body.missing.join('; ')}`);
  });
});

describe.skipIf((await stackSkipReason()) !== undefined)('on real PostgreSQL and Redis, with LNbits', () => {
  let fake: FakeLnbits;
  beforeAll(async () => {
    fake = await startFakeLnbits();
  });
  afterAll(() => fake.close());
  const admin = testWallet();
  const PER_MINUTE = 20;
  const stack = useStack(() => ({
    LIGHTNING_PROVIDER: 'lnbits',
    LIGHTNING_NETWORK: 'regtest',
    LNBITS_URL: fake.url,
    LNBITS_API_KEY: fake.invoiceKey,
    ADMIN_PUBKEYS: admin.pubkey,
    AUTH_RATE_LIMIT_PER_MINUTE: '1000',
    HEALTH_RATE_LIMIT_PER_MINUTE: String(PER_MINUTE),
  }));
  const health = (headers: Record<string, string> = {}) => fetch(`${stack.url}/api/health`, { headers });
  const balanceCalls = () => fake.requests.filter((r) => r.path === '/api/v1/wallet').length;

  const login = (wallet: TestWallet) => logIn(stack.url, wallet);

  it('anyone sees up or down per dependency: no backend, store or database named, no host, no latency, no error text', async () => {
    const response = await health();
    const text = await response.text();
    expect(response.status, text).toBe(200);
    const body = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(PUBLIC_KEYS);
    expect(body).toMatchObject({ ok: true, provider: { ok: true }, store: { ok: true }, database: { ok: true } });
    for (const detail of ['lnbits', 'upstash', 'PostgreSQL', '127.0.0.1', 'latencyMs', 'regtest', new URL(fake.url).host]) expect(text).not.toContain(detail);
  });

  it('an admin session sees which backend, store and database answer, and how fast; other keys get 403, no session 401', async () => {
    const details = await health({ authorization: `Bearer ${await login(admin)}` });
    expect(details.status).toBe(200);
    expect(await details.json()).toMatchObject({
      ok: true,
      provider: { name: 'lnbits', network: 'regtest', ok: true, latencyMs: expect.any(Number) },
      store: { kind: 'upstash', ok: true, latencyMs: expect.any(Number) },
      database: { kind: expect.stringContaining('127.0.0.1'), configured: true, ok: true },
      events: { configured: false },
    });
    const owner = await health({ authorization: `Bearer ${await login(testWallet())}` });
    expect(owner.status).toBe(403);
    expect(await owner.json()).toMatchObject({ code: 'ADMIN_REQUIRED' });
    const stranger = await health({ authorization: `Bearer ${'x'.repeat(43)}` });
    expect(stranger.status).toBe(401);
    expect(await stranger.json()).toMatchObject({ code: 'SESSION_INVALID' });
  });

  it(`asks the backend at most once per HEALTH_PROBE_TTL_MS (${HEALTH_PROBE_TTL_MS} ms), however many requests come at once`, async () => {
    const before = balanceCalls();
    const answers = await Promise.all(Array.from({ length: 8 }, () => health()));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    // None when the tests above probed less than that ago, else one.
    expect(balanceCalls() - before).toBeLessThanOrEqual(1);
  });

  it(`limits each client IP to HEALTH_RATE_LIMIT_PER_MINUTE (${PER_MINUTE}) in the shared store: then 429 with Retry-After, other clients unaffected`, async () => {
    // A fixed window per clock minute: start well inside one, so the count is exact.
    startWellInsideMinute(45_000);
    onTestFinished(useRealClock);
    const other = '127.0.0.2';
    for (let i = 0; i < PER_MINUTE; i++) expect((await rawRequest(`${stack.url}/api/health`, { from: other })).status).toBe(200);
    const limited = await rawRequest(`${stack.url}/api/health`, { from: other });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.body).toMatchObject({ code: 'RATE_LIMITED', error: expect.stringContaining(`${PER_MINUTE} per minute`) });
    // Counted in Redis, where every instance counts.
    expect(await stack.redis.keys('ratelimit:health:127.0.0.2:*')).toHaveLength(1);
    expect((await health()).status).toBe(200);
  }, 90_000);
});
