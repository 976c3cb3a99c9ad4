// GET /api/health: which provider, store and database are in use, whether each
// answers, and the production settings that are missing; no secrets; never cached.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLnbits, type FakeLnbits } from '../support/fake-backends/lnbits.js';
import { useDevServer } from '../support/server.js';

describe('with the embedded dev node (npm start defaults)', () => {
  const server = useDevServer();
  // Opened (and migrated) first: on a busy machine PGlite's start-up alone can outlast
  // the health check's 10 s, and this test is about the report, not that race.
  beforeAll(() => server.ctx.database(), 60_000);

  it('answers 200 naming the dev node, the memory store and the in-memory database, not cached', async () => {
    const response = await fetch(`${server.url}/api/health`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('retry-after')).toBeNull();
    expect(await response.json()).toMatchObject({
      ok: true,
      provider: { name: 'dev', network: 'regtest', ok: true },
      store: { kind: 'memory', ok: true },
      database: { kind: 'PGlite in memory', configured: true, ok: true },
      events: { configured: false },
      problems: [],
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

  it('answers 200 after asking LNbits for the balance, and shows no key', async () => {
    const response = await fetch(`${server.url}/api/health`);
    const text = await response.text();
    expect(response.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ ok: true, provider: { name: 'lnbits', network: 'regtest', ok: true, latencyMs: expect.any(Number) } });
    expect(fake.requests.at(-1)).toMatchObject({ method: 'GET', path: '/api/v1/wallet' });
    expect(text).not.toContain(fake.invoiceKey);
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
