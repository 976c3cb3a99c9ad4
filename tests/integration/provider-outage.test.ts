// The proof: with a real provider configured and its backend down
// (closed port) or stuck (accepts, never answers), the hosted API answers 503
// with Retry-After (ended by LIGHTNING_TIMEOUT_MS: a hang would run into the
// test's own timeout), and keeps serving everything else. Run through the
// real local server with the environment a user sets.
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeLnbits, type FakeLnbits } from '../../packages/l402-paywall/tests/support/fake-backends/lnbits.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import { createLogin } from '../../lib/service/accounts/auth.js';
import { useDevServer, type TestServer } from '../support/server.js';

const TIMEOUT_MS = 800;

async function expectUnavailable(response: Response, code: string): Promise<void> {
  expect(response.status).toBe(503);
  expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(await response.json()).toMatchObject({ code });
}

// The operator's key: its session sees why a part of /api/health is down; anyone else sees only that it is.
const ADMIN_PUBKEY = `02${'11'.repeat(32)}`;
// A session opens the database first: PGlite's start-up takes seconds on a busy machine.
const SESSION_TIMEOUT = { timeout: 60_000 };

/** GET /api/health as the operator sees it (an admin session) and as anyone does. */
async function healthOf(server: TestServer): Promise<{ details: Response; anyone: Response }> {
  const { token } = await createLogin(server.ctx, ADMIN_PUBKEY);
  return {
    details: await fetch(`${server.url}/api/health`, { headers: { authorization: `Bearer ${token}` } }),
    anyone: await fetch(`${server.url}/api/health`),
  };
}

const lnbitsEnv = (url: string, extra: Record<string, string> = {}) => ({
  ADMIN_PUBKEYS: ADMIN_PUBKEY,
  LIGHTNING_PROVIDER: 'lnbits',
  LIGHTNING_NETWORK: 'regtest',
  LIGHTNING_TIMEOUT_MS: String(TIMEOUT_MS),
  LNBITS_URL: url,
  LNBITS_API_KEY: 'invoice-key-of-a-dead-backend',
  ...extra,
});

const closed = await closedPort();

describe('LNbits on a closed port', () => {
  const server = useDevServer(() => lnbitsEnv(`http://127.0.0.1:${closed}`));

  it('POST /api/invoice answers 503 PROVIDER_UNAVAILABLE with Retry-After', async () => {
    const response = await fetch(`${server.url}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountSats: 10 }),
    });
    await expectUnavailable(response, 'PROVIDER_UNAVAILABLE');
  });

  it('the paywalled demo answers 503 with Retry-After instead of a challenge', async () => {
    await expectUnavailable(await fetch(`${server.url}/api/demo/btc-price`), 'PROVIDER_UNAVAILABLE');
  });

  it('keeps serving: GET /api/demo answers, and /api/health says which part is down (and, to the operator, why)', SESSION_TIMEOUT, async () => {
    expect((await fetch(`${server.url}/api/demo`)).status).toBe(200);
    const { details, anyone } = await healthOf(server);
    for (const health of [details, anyone]) {
      expect(health.status).toBe(503);
      expect(health.headers.get('retry-after')).toBeTruthy();
    }
    const text = await details.text();
    expect(JSON.parse(text)).toMatchObject({
      ok: false,
      provider: { name: 'lnbits', network: 'regtest', ok: false, error: expect.stringMatching(/LNbits is unreachable \(ECONNREFUSED\)/) },
      store: { kind: 'memory', ok: true },
      database: { ok: true },
    });
    expect(text).not.toContain('invoice-key-of-a-dead-backend');
    expect(await anyone.json()).toMatchObject({ ok: false, provider: { ok: false }, store: { ok: true }, database: { ok: true } });
  });
});

describe('a backend that accepts the connection and never answers', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let port = 0;
  beforeAll(async () => {
    silent = createServer((socket) => void sockets.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    port = (silent.address() as AddressInfo).port;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  const server = useDevServer(() => lnbitsEnv(`http://127.0.0.1:${port}`));

  it('POST /api/invoice and the paywall answer 503 within LIGHTNING_TIMEOUT_MS', async () => {
    const invoice = await fetch(`${server.url}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountSats: 10 }),
    });
    await expectUnavailable(invoice, 'PROVIDER_UNAVAILABLE');
    expect(sockets.size).toBeGreaterThan(0); // it did ask the backend, which never answered
    await expectUnavailable(await fetch(`${server.url}/api/demo/btc-price`), 'PROVIDER_UNAVAILABLE');
    expect((await fetch(`${server.url}/api/demo`)).status).toBe(200);
  });
});

describe('a backend that refuses the API key', () => {
  let fake: FakeLnbits;
  beforeAll(async () => {
    fake = await startFakeLnbits();
  });
  afterAll(() => fake.close());
  const server = useDevServer(() => lnbitsEnv(fake.url));

  it('answers 503 (not 500) naming the setting to fix, and /api/health names it to the operator too', SESSION_TIMEOUT, async () => {
    const response = await fetch(`${server.url}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ amountSats: 10 }),
    });
    await expectUnavailable(response.clone(), 'PROVIDER_MISCONFIGURED');
    const body = await response.json();
    expect(body).toMatchObject({ setting: 'LNBITS_API_KEY' });
    expect(JSON.stringify(body)).not.toContain(lnbitsEnv(fake.url).LNBITS_API_KEY);
    // The paywall (the library's core, which knows no provider types) says only that the provider is unavailable.
    await expectUnavailable(await fetch(`${server.url}/api/demo/btc-price`), 'PROVIDER_UNAVAILABLE');
    const { details } = await healthOf(server);
    expect(details.status).toBe(503);
    expect(await details.json()).toMatchObject({ provider: { ok: false, error: 'LNBITS_API_KEY was refused by LNbits (HTTP 401)' } });
  });
});
