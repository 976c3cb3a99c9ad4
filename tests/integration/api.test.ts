// The hosted functions as a client meets them: the real dev server (the same
// api/ files Vercel runs), the embedded dev Lightning node and the in-memory
// store, driven with fetch the way the curl examples of README.md and docs/rest-api.md are.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { decode as thirdPartyDecode } from 'light-bolt11-decoder';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import devPayFn from '../../api/dev/pay.js';
import btcPriceFn from '../../api/demo/btc-price.js';
import invoiceFn from '../../api/invoice.js';
import verifyFn from '../../api/verify.js';
import { Keyring, decodeToken, mintToken } from 'l402-paywall';
import { decodeInvoice, encodeInvoice } from 'l402-paywall/lightning';
import type { ServiceFunction } from '../../lib/service/deployment.js';
import { useDevServer, type ChallengeBody as Challenge } from '../support/server.js';
import { startWellInsideMinute, useRealClock } from '../support/clock-minute.js';
import { unreachableProvider } from '../../packages/l402-paywall/tests/support/l402.js';

const SECRET = 'api-integration-secret-0123456789abcdef0123456789abcdef01234567'.slice(0, 64);
const MAX_INVOICE_SATS = 50_000;
const vectors = JSON.parse(readFileSync(new URL('../../packages/l402-paywall/tests/fixtures/bolt11-vectors.json', import.meta.url), 'utf8')) as {
  valid: { note: string; invoice: string }[];
};

/** The local configuration every describe starts from: fixed secret, offline price, dev node, PGlite under the server's DATA_DIR. */
const server = useDevServer(() => ({
  L402_SECRET: SECRET,
  INVOICE_RATE_LIMIT_PER_MINUTE: '100000',
  MAX_INVOICE_SATS: String(MAX_INVOICE_SATS),
  DATABASE_URL: undefined,
}));
let base: string;
beforeAll(() => {
  base = server.url;
});

/** A new deployment of those settings, as after a restart: a fresh store, rate limits and service context. */
function freshService(): void {
  server.redeploy();
}

interface ErrorBody {
  error: string;
  code: string;
  retryAfter?: number;
}

const sha256Hex = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex');

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function demoChallenge(): Promise<Challenge> {
  const response = await fetch(`${base}/api/demo/btc-price`);
  expect(response.status).toBe(402);
  return (await response.json()) as Challenge;
}

async function devPay(invoice: string): Promise<{ preimage: string; paymentHash: string }> {
  const response = await post('/api/dev/pay', { invoice });
  expect(response.status).toBe(200);
  return (await response.json()) as { preimage: string; paymentHash: string };
}

/** A paid demo credential: 402, dev-wallet payment, Authorization value. */
async function buyDemo(): Promise<{ authorization: string; token: string; challenge: Challenge; preimage: string }> {
  const challenge = await demoChallenge();
  const { preimage } = await devPay(challenge.invoice);
  return { authorization: `L402 ${challenge.macaroon}:${preimage}`, token: `${challenge.macaroon}:${preimage}`, challenge, preimage };
}

function expectErrorBody(body: unknown, code?: string): asserts body is ErrorBody {
  expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code: expect.stringMatching(/^[A-Z][A-Z0-9_]*$/) }));
  if (code) expect((body as ErrorBody).code).toBe(code);
  // No stack traces or internals leave the server.
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.ts:\d+|node_modules/);
}

const failingProvider = unreachableProvider();

describe('L402 protocol flow through the dev server', () => {
  beforeAll(async () => {
    freshService();
    // The first database of the file (PGlite on disk) opens here, under the hook's timeout, not inside a test's 20 s.
    await server.ctx.database();
  });

  it('402 -> pay -> retry with L402 <macaroon>:<preimage> -> 200 with the price; replay -> 402', async () => {
    const first = await fetch(`${base}/api/demo/btc-price`);
    expect(first.status).toBe(402);
    expect(first.headers.get('content-type')).toMatch(/^application\/json/);
    expect(first.headers.get('cache-control')).toBe('no-store');
    expect(first.headers.get('access-control-allow-origin')).toBe('*');
    expect(first.headers.get('access-control-expose-headers')).toMatch(/WWW-Authenticate/i);
    const challenge = (await first.json()) as Challenge;
    expect(challenge).toMatchObject({ code: 'PAYMENT_REQUIRED', priceSats: 1 });
    const header = first.headers.get('www-authenticate')!;
    expect(header).toContain(`LSAT macaroon="${challenge.macaroon}", invoice="${challenge.invoice}"`);
    expect(header).toContain(`L402 macaroon="${challenge.macaroon}", invoice="${challenge.invoice}"`);
    expect(header).toContain(`L402 version="0", token="${challenge.macaroon}", invoice="${challenge.invoice}"`);
    // The macaroon (docs/l402-token.md): the invoice's payment hash in its identifier, an expiry about an hour ahead.
    const macaroon = decodeToken(challenge.macaroon)!;
    expect(macaroon.hash).toBe(challenge.paymentHash);
    expect(macaroon.exp - Date.now() / 1000).toBeGreaterThan(3590);
    expect(macaroon.exp - Date.now() / 1000).toBeLessThanOrEqual(3600);

    const payment = await post('/api/dev/pay', { invoice: challenge.invoice });
    expect(payment.status).toBe(200);
    const { preimage, paymentHash } = (await payment.json()) as { preimage: string; paymentHash: string };
    expect(paymentHash).toBe(challenge.paymentHash);
    expect(preimage).toMatch(/^[0-9a-f]{64}$/);
    expect(sha256Hex(preimage)).toBe(paymentHash);

    const paid = await fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: `L402 ${challenge.macaroon}:${preimage}` } });
    expect(paid.status).toBe(200);
    expect(paid.headers.get('www-authenticate')).toBeNull();
    expect(paid.headers.get('cache-control')).toBe('no-store');
    const price = (await paid.json()) as { usd: unknown; source: unknown; fetchedAt: string };
    expect(price).toEqual({ usd: expect.any(Number), source: 'simulated', fetchedAt: expect.any(String) });
    expect(price.usd as number).toBeGreaterThan(0);
    expect(new Date(price.fetchedAt).toISOString()).toBe(price.fetchedAt);
    expect(Math.abs(Date.parse(price.fetchedAt) - Date.now())).toBeLessThan(60_000);

    const replay = await fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: `L402 ${challenge.macaroon}:${preimage}` } });
    expect(replay.status).toBe(402);
    const refused = (await replay.json()) as Challenge;
    expect(refused.code).toBe('TOKEN_ALREADY_USED');
    // A fresh, different invoice to pay.
    expect(refused.paymentHash).not.toBe(challenge.paymentHash);
    expect(replay.headers.get('www-authenticate')).toContain(refused.invoice);
  });

  it('issues a real regtest BOLT11 invoice for 1000 msat that a third-party decoder accepts', async () => {
    const challenge = await demoChallenge();
    const ours = decodeInvoice(challenge.invoice);
    expect(ours.network).toBe('regtest');
    expect(ours.amountMsat).toBe(1000);
    expect(ours.paymentHash).toBe(challenge.paymentHash);
    expect(ours.description).toBe('L402 demo: live BTC price');
    expect(ours.payeeNodeKey).toBe(server.ctx.devNode!.nodeKey);
    expect(Math.abs(ours.expiresAt - Date.parse(challenge.expiresAt) / 1000)).toBeLessThanOrEqual(1);

    const theirs = thirdPartyDecode(challenge.invoice);
    const section = (name: string) => theirs.sections.find((s) => s.name === name) as { value?: unknown } | undefined;
    expect(section('amount')?.value).toBe('1000');
    expect(section('payment_hash')?.value).toBe(challenge.paymentHash);
    expect((section('coin_network')!.value as { bech32: string }).bech32).toBe('bcrt');
    expect(section('signature')).toBeDefined();
  });

  it('accepts the header spellings real clients send', async () => {
    for (const spell of [
      (m: string, p: string) => `LSAT ${m}:${p}`,
      (m: string, p: string) => `l402 ${m}:${p.toUpperCase()}`,
      (m: string, p: string) => `L402 ${Buffer.from(m, 'base64').toString('base64url')}:${p}`,
    ]) {
      const { challenge, preimage } = await buyDemo();
      const response = await fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: spell(challenge.macaroon, preimage) } });
      expect(response.status).toBe(200);
    }
  });

  it('does not open the demo with a token bought through /api/invoice', async () => {
    const issued = (await (await post('/api/invoice', { amountSats: 1 })).json()) as { paymentRequest: string; macaroon: string };
    const { preimage } = await devPay(issued.paymentRequest);
    const response = await fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: `L402 ${issued.macaroon}:${preimage}` } });
    expect(response.status).toBe(402);
    expect(((await response.json()) as Challenge).code).toBe('WRONG_ROUTE');
  });

  it('refuses an unpaid token (the preimage is unknown until payment)', async () => {
    const challenge = await demoChallenge();
    const guess = bytesToHex(randomBytes(32));
    const response = await fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: `L402 ${challenge.macaroon}:${guess}` } });
    expect(response.status).toBe(402);
    expect(((await response.json()) as Challenge).code).toBe('PREIMAGE_MISMATCH');
  });
});

describe('GET /api/demo/preimage', () => {
  beforeAll(freshService);

  it.each([
    ['zz', '?hash=zz'],
    ['63 hex characters', `?hash=${'a'.repeat(63)}`],
    ['65 hex characters', `?hash=${'a'.repeat(65)}`],
    ['a missing hash', ''],
    ['an empty hash', '?hash='],
  ])('answers 400 for %s', async (_, query) => {
    const response = await fetch(`${base}/api/demo/preimage${query}`);
    expect(response.status).toBe(400);
    expectErrorBody(await response.json());
  });

  it('answers 404 for a hash it never issued', async () => {
    const response = await fetch(`${base}/api/demo/preimage?hash=${bytesToHex(randomBytes(32))}`);
    expect(response.status).toBe(404);
    expectErrorBody(await response.json(), 'UNKNOWN_INVOICE');
  });

  it('answers 202 while the demo invoice is unpaid and the preimage once it is paid', async () => {
    const challenge = await demoChallenge();
    const pending = await fetch(`${base}/api/demo/preimage?hash=${challenge.paymentHash}`);
    expect(pending.status).toBe(202);
    expect(pending.headers.get('retry-after')).toMatch(/^\d+$/);
    const pendingBody = (await pending.json()) as Record<string, unknown>;
    expect(pendingBody.preimage).toBeUndefined();

    await devPay(challenge.invoice);
    const done = await fetch(`${base}/api/demo/preimage?hash=${challenge.paymentHash.toUpperCase()}`);
    expect(done.status).toBe(200);
    expect(done.headers.get('cache-control')).toBe('no-store');
    const { preimage } = (await done.json()) as { preimage: string };
    expect(preimage).toMatch(/^[0-9a-f]{64}$/);
    expect(sha256Hex(preimage)).toBe(challenge.paymentHash);
    // And it opens the demo.
    const paid = await fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: `L402 ${challenge.macaroon}:${preimage}` } });
    expect(paid.status).toBe(200);
  });

  it("never hands back the preimage of an invoice that is not the demo's", async () => {
    const issued = (await (await post('/api/invoice', { amountSats: 5 })).json()) as { paymentRequest: string; paymentHash: string };
    await devPay(issued.paymentRequest);
    const response = await fetch(`${base}/api/demo/preimage?hash=${issued.paymentHash}`);
    expect(response.status).toBe(404);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body.preimage).toBeUndefined();
  });

  it('answers 503 when the provider cannot be asked', async () => {
    const challenge = await demoChallenge();
    // Same store (so the demo invoice is known), provider down.
    server.redeploy(server.config(), { store: server.ctx.store, provider: failingProvider });
    try {
      const response = await fetch(`${base}/api/demo/preimage?hash=${challenge.paymentHash}`);
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expectErrorBody(await response.json(), 'PROVIDER_UNAVAILABLE');
    } finally {
      freshService();
    }
  });
});

describe('POST /api/dev/pay', () => {
  beforeAll(freshService);

  it.each([
    ['not an invoice', 'hello'],
    ['a broken checksum', 'lnbcrt10n1pjqqqqqqqqqqqqqqqq'],
  ])('answers 400 INVALID_INVOICE for %s', async (_, invoice) => {
    const response = await post('/api/dev/pay', { invoice });
    expect(response.status).toBe(400);
    expectErrorBody(await response.json(), 'INVALID_INVOICE');
  });

  it('answers 400 for a body without an invoice', async () => {
    for (const body of [{}, { invoice: 42 }, { invoice: '' }, [], 'null', '{']) {
      const response = await post('/api/dev/pay', body);
      expect(response.status).toBe(400);
      expectErrorBody(await response.json());
    }
  });

  it('answers 400 NOT_DEV_INVOICE for a valid invoice from another node', async () => {
    const foreign = vectors.valid.find((v) => v.note === '2500u, expiry 60')!.invoice;
    expect(decodeInvoice(foreign).amountMsat).toBe(250_000_000); // a real, valid invoice
    const response = await post('/api/dev/pay', { invoice: foreign });
    expect(response.status).toBe(400);
    expectErrorBody(await response.json(), 'NOT_DEV_INVOICE');
  });

  it('answers 404 UNKNOWN_INVOICE for an invoice signed with the dev key that it never issued', async () => {
    const key = readFileSync(join(server.dataDir, 'dev-node-key'), 'utf8').trim();
    const invoice = encodeInvoice(
      {
        network: 'regtest',
        amountMsat: 1000,
        timestamp: Math.floor(Date.now() / 1000),
        paymentHash: bytesToHex(randomBytes(32)),
        paymentSecret: bytesToHex(randomBytes(32)),
        description: 'forged',
        expirySeconds: 600,
      },
      key,
    );
    expect(decodeInvoice(invoice).payeeNodeKey).toBe(server.ctx.devNode!.nodeKey);
    const response = await post('/api/dev/pay', { invoice });
    expect(response.status).toBe(404);
    expectErrorBody(await response.json(), 'UNKNOWN_INVOICE');
  });

  it('pays once: 409 ALREADY_PAID the second time, with no preimage', async () => {
    const challenge = await demoChallenge();
    const first = await devPay(challenge.invoice);
    expect(sha256Hex(first.preimage)).toBe(challenge.paymentHash);
    const second = await post('/api/dev/pay', { invoice: challenge.invoice });
    expect(second.status).toBe(409);
    const body = (await second.json()) as Record<string, unknown>;
    expectErrorBody(body, 'ALREADY_PAID');
    expect(body.preimage).toBeUndefined();
  });

  it('settles exactly one of 20 concurrent payments of one invoice', async () => {
    const challenge = await demoChallenge();
    const responses = await Promise.all(Array.from({ length: 20 }, () => post('/api/dev/pay', { invoice: challenge.invoice })));
    const statuses = responses.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(19);
    await Promise.all(responses.map((r) => r.text()));
  });
});

describe('POST /api/invoice', () => {
  beforeAll(freshService);

  it('answers 200 with a payable invoice and a token bound to its hash', async () => {
    const before = Date.now();
    const response = await post('/api/invoice', { amountSats: 1234, ownerAddress: 'Alice@Example.com' });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const body = (await response.json()) as { paymentRequest: string; paymentHash: string; macaroon: string; expiresAt: string };
    expect(Object.keys(body).sort()).toEqual(['expiresAt', 'macaroon', 'paymentHash', 'paymentRequest']);
    const invoice = decodeInvoice(body.paymentRequest);
    expect(invoice.amountMsat).toBe(1_234_000);
    expect(invoice.paymentHash).toBe(body.paymentHash);
    const token = decodeToken(body.macaroon)!;
    expect(token.hash).toBe(body.paymentHash);
    expect(token.caveats).toContain('price_msat=1234000');
    expect(token.caveats).toContain('owner=alice@example.com');
    const expiresAt = Date.parse(body.expiresAt);
    expect(new Date(expiresAt).toISOString()).toBe(body.expiresAt);
    expect(expiresAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000);
    expect(expiresAt).toBeLessThanOrEqual(Date.now() + 3600_000);
    // Paying it yields a token /api/verify accepts.
    const { preimage } = await devPay(body.paymentRequest);
    const verified = await post('/api/verify', { token: `${body.macaroon}:${preimage}` });
    expect(await verified.json()).toMatchObject({ valid: true });
  });

  it('accepts amountSats at the configured maximum', async () => {
    expect((await post('/api/invoice', { amountSats: MAX_INVOICE_SATS })).status).toBe(200);
  });

  it.each([
    ['missing amountSats', {}],
    ['amountSats 0', { amountSats: 0 }],
    ['amountSats -1', { amountSats: -1 }],
    ['amountSats 1.5', { amountSats: 1.5 }],
    ['amountSats "10"', { amountSats: '10' }],
    ['amountSats null', { amountSats: null }],
    ['amountSats true', { amountSats: true }],
    ['an array body', [{ amountSats: 10 }]],
    ['a null body', null],
    ['a string body', '"amountSats"'],
    ['amountSats above the maximum', { amountSats: MAX_INVOICE_SATS + 1 }],
    ['an absurd amountSats', { amountSats: 1e300 }],
    ['malformed JSON', '{"amountSats": 10'],
    ['an empty body', ''],
    ['an invalid ownerAddress', { amountSats: 10, ownerAddress: 'not an address' }],
    ['an ownerAddress of the wrong type', { amountSats: 10, ownerAddress: 42 }],
  ])('answers 400 {error, code} for %s', async (_, body) => {
    const response = await post('/api/invoice', typeof body === 'string' ? body : JSON.stringify(body));
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expectErrorBody(await response.json());
  });

  it('answers 400 for a body that is not UTF-8', async () => {
    const response = await fetch(`${base}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
    });
    expect(response.status).toBe(400);
    expectErrorBody(await response.json());
  });

  it('answers 413 for a body over 16 KiB, declared or streamed', async () => {
    const big = JSON.stringify({ amountSats: 10, memo: 'x'.repeat(17 * 1024) });
    const declared = await post('/api/invoice', big);
    expect(declared.status).toBe(413);
    expectErrorBody(await declared.json(), 'BODY_TOO_LARGE');

    const chunk = new TextEncoder().encode('x'.repeat(4096));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 6) controller.close();
        else {
          sent++;
          controller.enqueue(chunk);
        }
      },
    });
    const streamed = await fetch(`${base}/api/invoice`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(streamed.status).toBe(413);
    expectErrorBody(await streamed.json(), 'BODY_TOO_LARGE');
  });

  it('answers 405 with Allow for GET', async () => {
    const response = await fetch(`${base}/api/invoice`);
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe('POST, OPTIONS');
    expectErrorBody(await response.json(), 'METHOD_NOT_ALLOWED');
  });
});

describe('POST /api/invoice rate limit (20 per minute per IP)', () => {
  beforeAll(async () => {
    server.redeploy(server.config({ INVOICE_RATE_LIMIT_PER_MINUTE: '20' }));
    // The limiter's window is the clock minute; start well inside one so the count is exact.
    startWellInsideMinute(50_000);
  });
  afterAll(async () => {
    useRealClock();
    await freshService();
  });

  it('answers 429 with Retry-After on the 21st request, per IP', async () => {
    for (let i = 0; i < 20; i++) {
      const ok = await post('/api/invoice', { amountSats: 1 });
      expect(ok.status).toBe(200);
    }
    const limited = await post('/api/invoice', { amountSats: 1 });
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    const body = (await limited.json()) as ErrorBody;
    expectErrorBody(body, 'RATE_LIMITED');
    expect(body.retryAfter).toBe(retryAfter);

    // The function itself, with the platform's x-real-ip: the server's caller is spent, another is not.
    const direct = (ip: string) =>
      invoiceFn.fetchWith(
        new Request('http://localhost/api/invoice', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-real-ip': ip },
          body: JSON.stringify({ amountSats: 1 }),
        }),
        server.deployment,
      );
    expect((await direct('127.0.0.1')).status).toBe(429);
    expect((await direct('203.0.113.7')).status).toBe(200);
    expect((await direct('2001:db8::7')).status).toBe(200);
  });

  it('cannot be dodged by sending x-forwarded-for or x-real-ip through the server', async () => {
    const response = await post('/api/invoice', { amountSats: 1 }, { 'x-forwarded-for': '198.51.100.1', 'x-real-ip': '198.51.100.2' });
    expect(response.status).toBe(429);
  });
});

describe('Lightning provider down', () => {
  beforeAll(() => {
    server.redeploy(server.config(), { provider: failingProvider });
  });
  afterAll(freshService);

  it('POST /api/invoice answers 503 PROVIDER_UNAVAILABLE with Retry-After', async () => {
    const response = await post('/api/invoice', { amountSats: 10 });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    const body = (await response.json()) as ErrorBody;
    expectErrorBody(body, 'PROVIDER_UNAVAILABLE');
    expect(body.error).not.toContain('connection refused');
  });

  it('GET /api/demo/btc-price answers 503 PROVIDER_UNAVAILABLE without a challenge', async () => {
    const response = await fetch(`${base}/api/demo/btc-price`);
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(response.headers.get('www-authenticate')).toBeNull();
    expectErrorBody(await response.json(), 'PROVIDER_UNAVAILABLE');
  });
});

describe('POST /api/verify', () => {
  beforeAll(freshService);

  const verify = async (body: unknown) => {
    const response = await post('/api/verify', body);
    expect(response.status).toBe(200);
    return (await response.json()) as { valid: boolean; error?: string; code?: string };
  };
  const demo = (authorization: string) => fetch(`${base}/api/demo/btc-price`, { headers: { Authorization: authorization } });

  it('says valid for a paid token without using it up', async () => {
    const { token, authorization, challenge } = await buyDemo();
    expect(await verify({ token })).toMatchObject({ valid: true, paymentHash: challenge.paymentHash });
    expect(await verify({ token, consume: false })).toMatchObject({ valid: true });
    expect(await verify({ token: authorization })).toMatchObject({ valid: true }); // the whole header value works too
    expect((await demo(authorization)).status).toBe(200);
    // Used by the route now.
    expect(await verify({ token })).toMatchObject({ valid: false, code: 'TOKEN_ALREADY_USED' });
  });

  it('uses the token up with consume: true', async () => {
    const { token, authorization } = await buyDemo();
    expect(await verify({ token, consume: true })).toMatchObject({ valid: true });
    const response = await demo(authorization);
    expect(response.status).toBe(402);
    expect(((await response.json()) as Challenge).code).toBe('TOKEN_ALREADY_USED');
    expect(await verify({ token })).toMatchObject({ valid: false });
    expect(await verify({ token, consume: true })).toMatchObject({ valid: false, code: 'TOKEN_ALREADY_USED' });
  });

  it('says "Token expired" for a paid token past its exp', async () => {
    const issued = (await (await post('/api/invoice', { amountSats: 3 })).json()) as { paymentRequest: string; paymentHash: string };
    const { preimage } = await devPay(issued.paymentRequest);
    const expired = mintToken(new Keyring([SECRET]), {
      paymentHash: issued.paymentHash,
      expiresAt: Math.floor(Date.now() / 1000) - 5,
      caveats: { price_msat: 3000 },
    });
    expect(await verify({ token: `${expired}:${preimage}` })).toEqual({ valid: false, error: 'Token expired', code: 'TOKEN_EXPIRED' });
    // The same token with a future exp is fine, so it is the expiry that was refused.
    const fresh = mintToken(new Keyring([SECRET]), {
      paymentHash: issued.paymentHash,
      expiresAt: Math.floor(Date.now() / 1000) + 60,
      caveats: { price_msat: 3000 },
    });
    expect(await verify({ token: `${fresh}:${preimage}` })).toMatchObject({ valid: true });
  });

  it('says invalid for a wrong preimage, a forged token and garbage', async () => {
    const { challenge } = await buyDemo();
    const wrong = await verify({ token: `${challenge.macaroon}:${bytesToHex(randomBytes(32))}` });
    expect(wrong).toMatchObject({ valid: false, code: 'PREIMAGE_MISMATCH' });
    expect(wrong.error).toEqual(expect.any(String));

    const preimage = bytesToHex(randomBytes(32));
    const unsigned = Buffer.from(JSON.stringify({ hash: sha256Hex(preimage), exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url');
    expect(await verify({ token: `${unsigned}:${preimage}` })).toMatchObject({ valid: false });
    const otherSecret = mintToken(new Keyring(['another-secret-0123456789abcdef0123456789']), {
      paymentHash: sha256Hex(preimage),
      expiresAt: Math.floor(Date.now() / 1000) + 3600,
    });
    expect(await verify({ token: `${otherSecret}:${preimage}` })).toMatchObject({ valid: false });

    for (const token of ['garbage', ':', 'abc:', `:${preimage}`, `${challenge.macaroon}`, `${challenge.macaroon}:xyz`, '💥:💥']) {
      const answer = await verify({ token });
      expect(answer.valid).toBe(false);
      expect(answer.error).toEqual(expect.any(String));
    }
  });

  it.each([
    ['a missing token', {}],
    ['a numeric token', { token: 123 }],
    ['an empty token', { token: '' }],
    ['a non-boolean consume', { token: 'a:b', consume: 'yes' }],
    ['an array body', ['a:b']],
    ['malformed JSON', '{"token":'],
  ])('answers 400 for %s', async (_, body) => {
    const response = await post('/api/verify', typeof body === 'string' ? body : JSON.stringify(body));
    expect(response.status).toBe(400);
    expectErrorBody(await response.json());
  });
});

describe('every function: CORS, methods, unknown paths', () => {
  beforeAll(freshService);

  const functions: [string, string][] = [
    ['/api/invoice', 'POST'],
    ['/api/verify', 'POST'],
    ['/api/dev/pay', 'POST'],
    ['/api/demo', 'GET'],
    ['/api/demo/btc-price', 'GET'],
    ['/api/demo/preimage', 'GET'],
  ];

  it.each(functions)('%s answers OPTIONS with 204 and CORS headers', async (path, method) => {
    const response = await fetch(base + path, { method: 'OPTIONS', headers: { Origin: 'https://elsewhere.example', 'Access-Control-Request-Method': method } });
    expect(response.status).toBe(204);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const allowHeaders = (response.headers.get('access-control-allow-headers') ?? '').toLowerCase().split(/\s*,\s*/);
    expect(allowHeaders).toContain('authorization');
    expect(allowHeaders).toContain('content-type');
    expect(allowHeaders).toContain('accept-authenticate');
    // What fetchWithL402 sends with audit events on (a trace, the declared agent and session).
    expect(allowHeaders).toEqual(expect.arrayContaining(['traceparent', 'l402-agent-id', 'l402-session-id']));
    expect(response.headers.get('access-control-allow-methods')).toContain(method);
    expect(await response.text()).toBe('');
  });

  it.each(['/api/health', '/api/demo', '/api/demo/btc-price', '/api/apis.json'])(
    'HEAD %s answers as GET does, without a body (uptime monitors)',
    async (path) => {
      const get = await fetch(base + path);
      const head = await fetch(base + path, { method: 'HEAD' });
      expect(head.status).toBe(get.status);
      expect(head.headers.get('content-type')).toBe(get.headers.get('content-type'));
      expect(head.headers.get('access-control-allow-origin')).toBe('*');
      expect(await head.text()).toBe('');
      expect((await get.text()).length).toBeGreaterThan(0);
    },
  );

  it.each(functions)('%s answers a wrong method with 405 JSON and Allow', async (path, method) => {
    const wrong = method === 'GET' ? 'POST' : 'GET';
    const response = await fetch(base + path, { method: wrong, ...(wrong === 'POST' ? { body: '{}' } : {}) });
    expect(response.status).toBe(405);
    expect(response.headers.get('allow')).toBe(method === 'GET' ? 'GET, HEAD, OPTIONS' : `${method}, OPTIONS`);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    expectErrorBody(await response.json(), 'METHOD_NOT_ALLOWED');
    const del = await fetch(base + path, { method: 'DELETE' });
    expect(del.status).toBe(405);
    await del.text();
  });

  it.each(['/api/nope', '/api/demo/nope', '/api/invoice/extra', '/api'])(
    'answers 404 JSON for %s, with the CORS headers of every other answer',
    async (path) => {
      const response = await fetch(base + path);
      expect(response.status).toBe(404);
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
      expect(response.headers.get('access-control-expose-headers')).toBe('WWW-Authenticate, Retry-After, Payment-Receipt');
      expect(response.headers.get('content-type')).toMatch(/^application\/json/);
      expectErrorBody(await response.json(), 'NOT_FOUND');
    },
  );

  it('describes the demo at GET /api/demo', async () => {
    const response = await fetch(`${base}/api/demo`);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { endpoints: { path: string; priceSats: number }[]; devWallet: unknown };
    expect(body.endpoints).toContainEqual(expect.objectContaining({ path: '/api/demo/btc-price', priceSats: 1 }));
    expect(body.devWallet).toMatchObject({ path: '/api/dev/pay' });
  });
});

describe('property-based: hostile input never produces a 5xx', () => {
  // Characters a Headers value may hold (no CR, LF or NUL; Latin-1 only).
  const headerChar = fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({ min: 0x80, max: 0xff })).map((c) => String.fromCharCode(c));
  const headerText = fc.string({ unit: headerChar, maxLength: 200 });
  const hex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), minLength: n, maxLength: n });

  let realMacaroon: string;
  let realInvoice: string;
  beforeAll(async () => {
    freshService();
    const challenge = await demoChallenge();
    realMacaroon = challenge.macaroon;
    realInvoice = challenge.invoice;
  });

  const mutate = (text: string) =>
    fc.tuple(fc.nat(), fc.constantFrom('delete', 'replace', 'insert'), fc.constantFrom(...'aZ09-_+/=:. ')).map(([i, op, ch]) => {
      const at = i % (text.length + 1);
      if (op === 'delete') return text.slice(0, at) + text.slice(at + 1);
      if (op === 'replace') return text.slice(0, at) + ch + text.slice(at + 1);
      return text.slice(0, at) + ch + text.slice(at);
    });

  const authorizationHeaders = () =>
    fc.oneof(
      headerText,
      fc
        .tuple(
          fc.constantFrom('L402', 'LSAT', 'l402', 'lsat', 'Bearer', 'L402L402', ''),
          fc.constantFrom(' ', '  ', '\t', ''),
          headerText,
          fc.constantFrom(':', '::', ''),
          fc.oneof(headerText, hex(64), hex(63)),
        )
        .map(([scheme, gap, token, colon, preimage]) => `${scheme}${gap}${token}${colon}${preimage}`),
      fc.tuple(mutate(realMacaroon), hex(64)).map(([token, preimage]) => `L402 ${token}:${preimage}`),
      hex(64).map((preimage) => `L402 ${realMacaroon}:${preimage}`),
    );

  async function expectChallengeAnswer(response: Response): Promise<void> {
    expect(response.status).toBe(402);
    const body = (await response.json()) as Challenge;
    expect(body.code).toMatch(/^[A-Z][A-Z_]+$/);
    expect(body.macaroon).toEqual(expect.any(String));
    expect(body.invoice).toEqual(expect.any(String));
  }

  it('random Authorization headers on /api/demo/btc-price always get a 402 challenge', async () => {
    await fc.assert(
      fc.asyncProperty(authorizationHeaders(), async (authorization) => {
        // Every generated value is one a client can send (no CR, LF or NUL, Latin-1): a throw here is a generator bug, and fails.
        await expectChallengeAnswer(
          await btcPriceFn.fetchWith(new Request('http://localhost/api/demo/btc-price', { headers: { authorization } }), server.deployment),
        );
      }),
      { numRuns: 200 },
    );
  });

  it('random Authorization headers through the server always get a 402 challenge', async () => {
    await fc.assert(
      fc.asyncProperty(authorizationHeaders(), async (authorization) => {
        await expectChallengeAnswer(await fetch(`${base}/api/demo/btc-price`, { headers: { authorization } }));
      }),
      { numRuns: 25 },
    );
  });

  const jsonValue = fc.jsonValue({ maxDepth: 3 });
  const rawBody = fc.oneof(
    jsonValue.map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
    fc.string({ unit: 'binary', maxLength: 100 }),
  );

  /** 2xx, or 4xx with {error, code}; never 5xx. */
  async function expectHandled(response: Response): Promise<number> {
    const status = response.status;
    expect(status).toBeGreaterThanOrEqual(200);
    expect(status).toBeLessThan(500);
    expect(status === 200 || status >= 400).toBe(true);
    const body = (await response.json()) as unknown;
    if (status >= 400) expectErrorBody(body);
    return status;
  }

  const call = (fn: ServiceFunction, path: string, body: string) =>
    fn.fetchWith(
      new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-real-ip': '192.0.2.1' }, body }),
      server.deployment,
    );

  it('/api/invoice: random bodies get 2xx or 4xx {error, code}', async () => {
    const amounts = fc.oneof(
      fc.integer({ min: -10, max: MAX_INVOICE_SATS + 10 }),
      fc.double(),
      fc.string(),
      fc.constant(null),
      fc.boolean(),
      fc.constant(Number.MAX_SAFE_INTEGER),
      fc.array(fc.nat()),
    );
    const structured = fc
      .record(
        { amountSats: amounts, ownerAddress: fc.oneof(fc.string(), fc.emailAddress(), fc.nat()), memo: fc.oneof(fc.string({ maxLength: 300 }), fc.nat()) },
        { requiredKeys: [] },
      )
      .map((v) => JSON.stringify(v));
    const valid = fc.integer({ min: 1, max: MAX_INVOICE_SATS }).map((amountSats) => JSON.stringify({ amountSats }));
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(rawBody, structured, valid), async (body) => {
        statuses.add(await expectHandled(await call(invoiceFn, '/api/invoice', body)));
      }),
      { numRuns: 200 },
    );
    // The generators reach both outcomes.
    expect(statuses.has(200)).toBe(true);
    expect(statuses.has(400)).toBe(true);
  });

  it('/api/verify: random bodies get 200 {valid} or 4xx {error, code}', async () => {
    const { token: paid } = await buyDemo();
    const tokens = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.tuple(mutate(realMacaroon), hex(64)).map(([m, p]) => `${m}:${p}`),
      mutate(paid),
      fc.constant(paid),
    );
    const structured = fc
      .record({ token: fc.oneof(tokens, fc.nat(), fc.constant(null)), consume: fc.oneof(fc.boolean(), fc.string(), fc.constant(null)) }, { requiredKeys: [] })
      .map((v) => JSON.stringify(v));
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(rawBody, structured), async (body) => {
        const response = await call(verifyFn, '/api/verify', body);
        const status = response.status;
        if (status === 200) {
          const answer = (await response.clone().json()) as { valid: unknown };
          expect(typeof answer.valid).toBe('boolean');
        }
        statuses.add(await expectHandled(response));
      }),
      { numRuns: 200 },
    );
    expect(statuses.has(200)).toBe(true);
    expect(statuses.has(400)).toBe(true);
  });

  it('/api/dev/pay: random bodies get 2xx or 4xx {error, code}', async () => {
    const invoices = fc.oneof(
      fc.string({ maxLength: 300 }),
      mutate(realInvoice),
      fc.constantFrom(realInvoice, realInvoice.toUpperCase(), ` ${realInvoice} `, ...vectors.valid.map((v) => v.invoice)),
      fc.string({ unit: fc.constantFrom(...'qpzry9x8gf2tvdw0s3jn54khce6mua7l'), maxLength: 400 }).map((data) => `lnbcrt1${data}`),
    );
    const structured = fc.record({ invoice: fc.oneof(invoices, fc.nat(), fc.constant(null)) }, { requiredKeys: [] }).map((v) => JSON.stringify(v));
    const statuses = new Set<number>();
    await fc.assert(
      fc.asyncProperty(fc.oneof(rawBody, structured), async (body) => {
        statuses.add(await expectHandled(await call(devPayFn, '/api/dev/pay', body)));
      }),
      { numRuns: 200 },
    );
    expect(statuses.has(400)).toBe(true);
  });

  it('random bodies through the server get 2xx or 4xx {error, code}', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/api/invoice', '/api/verify', '/api/dev/pay'), rawBody, async (path, body) => {
        await expectHandled(await post(path, body));
      }),
      { numRuns: 30 },
    );
  });
});

// Last: NODE_ENV changes how the whole service configures itself.
describe('in production (NODE_ENV=production)', () => {
  afterAll(freshService);

  it.each([
    ['with L402_SECRET but no shared store', { L402_SECRET: SECRET }],
    ['with nothing configured', { L402_SECRET: undefined }],
  ])('has no dev wallet: /api/dev/pay answers 404 %s', async (_, env) => {
    freshService();
    const challenge = await demoChallenge(); // an invoice the dev node really issued
    server.redeploy(server.config({ NODE_ENV: 'production', ...env }));
    const response = await post('/api/dev/pay', { invoice: challenge.invoice });
    expect(response.status).toBe(404);
    expectErrorBody(await response.json(), 'NOT_FOUND');
  });

  it('fails closed with 503 NOT_CONFIGURED naming what is missing', async () => {
    server.redeploy(server.config({ NODE_ENV: 'production', L402_SECRET: undefined }));
    for (const response of [await fetch(`${base}/api/demo/btc-price`), await post('/api/invoice', { amountSats: 10 })]) {
      expect(response.status).toBe(503);
      expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
      expect(response.headers.get('www-authenticate')).toBeNull();
      const body = (await response.json()) as ErrorBody;
      expectErrorBody(body, 'NOT_CONFIGURED');
      expect(body.error).toContain('L402_SECRET');
      expect(body.error).toContain('UPSTASH_REDIS_REST_URL');
    }
  });
});
