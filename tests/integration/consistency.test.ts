// One API, one set of rules, as a new user meets them on the local server:
// every JSON body refuses a key it does not know and names it; /api/invoice
// refuses an `endpoint` it would otherwise drop; every 503 says when to come
// back; errors name the request a token really came from.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import { route } from '../../lib/http/route.js';
import { createLogin } from '../../lib/service/accounts/auth.js';
import { useDevServer } from '../support/server.js';

const SPLIT_SECRET = 'consistency-split-secret-0123456789abcdef';

describe('the same rules on every endpoint (local server)', () => {
  const server = useDevServer(() => ({ SPLIT_SECRET }));
  const send = (method: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('every JSON body refuses an unknown key with 400 INVALID_REQUEST naming it', async () => {
    const session = (await createLogin(server.ctx, bytesToHex(secp256k1.getPublicKey(randomBytes(32), true)))).token;
    const bearer = { authorization: `Bearer ${session}` };
    const bodies: [string, string, Record<string, unknown>, Record<string, string>?][] = [
      ['POST', '/api/invoice', { amountSats: 10 }],
      ['POST', '/api/verify', { token: 'x:y' }],
      ['POST', '/api/dev/pay', { invoice: 'lnbcrt1x' }],
      ['POST', '/api/register', { url: 'https://api.example.com/x', name: 'X', price_sats: 1, lightning_address: 'alice@example.com' }],
      ['POST', '/api/dev-token', { macaroon: 'm', preimage: 'ab'.repeat(32) }],
      ['POST', '/api/split', { amountSats: 1000, ownerAddress: 'alice@example.com' }, { 'x-split-secret': SPLIT_SECRET }],
      ['POST', '/api/links', { address: 'alice@example.com' }, bearer],
      ['DELETE', '/api/links', { address: 'alice@example.com' }, bearer],
    ];
    for (const [method, path, body, headers] of bodies) {
      const response = await send(method, path, { ...body, colour: 'blue' }, headers);
      const answer = (await response.json()) as { error: string; code: string };
      expect({ path, status: response.status, code: answer.code }).toEqual({ path, status: 400, code: 'INVALID_REQUEST' });
      expect(answer.error, path).toBe('Unrecognized key: "colour"');
    }
  });

  it('POST /api/invoice refuses `endpoint` without `ownerAddress` (it belongs to managed payments only), and takes it with one', async () => {
    const refused = await send('POST', '/api/invoice', { amountSats: 10, endpoint: '/api/x' });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      code: 'INVALID_REQUEST',
      error: 'endpoint is kept with managed-mode payments only: send ownerAddress with it',
    });
    const taken = await send('POST', '/api/invoice', { amountSats: 10, endpoint: '/api/x', ownerAddress: 'alice@example.com' });
    expect(taken.status).toBe(200);
  });

  it('names where a poll token came from: POST /api/delete-data for an erasure, GET /api/lnurl-auth for a login', async () => {
    const k1 = 'ab'.repeat(32);
    const erasure = await fetch(`${server.url}/api/delete-data?k1=${k1}&pollToken=short`);
    expect(erasure.status).toBe(400);
    expect(await erasure.json()).toMatchObject({ code: 'INVALID_REQUEST', error: 'pollToken must be the one POST /api/delete-data gave' });
    const login = await fetch(`${server.url}/api/lnurl-auth?k1=${k1}&pollToken=short`);
    expect(login.status).toBe(400);
    expect(await login.json()).toMatchObject({ code: 'INVALID_REQUEST', error: 'pollToken must be the one GET /api/lnurl-auth gave' });
  });

  it('every 503 carries Retry-After: the crons without CRON_SECRET too', async () => {
    for (const path of ['/api/cron/payouts', '/api/cron/flush-payments']) {
      const response = await fetch(`${server.url}${path}`, { headers: { authorization: 'Bearer x' } });
      expect(response.status, path).toBe(503);
      expect(Number(response.headers.get('retry-after')), path).toBeGreaterThan(0);
      expect(await response.json()).toMatchObject({ code: 'NOT_CONFIGURED', missing: ['CRON_SECRET'] });
    }
  });
});

describe('route()', () => {
  it('adds Retry-After to a 429 or 503 a handler sent without one, and leaves one it sent alone', async () => {
    const fn = route({
      GET: () => Response.json({ error: 'x', code: 'X' }, { status: 503 }),
      POST: () => Response.json({ error: 'x', code: 'X' }, { status: 429, headers: { 'Retry-After': '42' } }),
    });
    expect((await fn.fetch(new Request('http://localhost/'))).headers.get('retry-after')).toBe('5');
    expect((await fn.fetch(new Request('http://localhost/', { method: 'POST' }))).headers.get('retry-after')).toBe('42');
  });
});
