// What local runs offer instead of a phone wallet, on the real local server:
// the dashboard's development login (the server signs the real LNURL-auth
// challenge), the dev node's Lightning Addresses showing what they received
// (so a link code can be read), and neither of them in production.
import { afterAll, describe, expect, it } from 'vitest';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';
import { loadConfig } from '../../lib/config.js';
import { createServiceContext } from '../../lib/service/context.js';
import { devLoginKey } from '../../lib/service/accounts/dev-login-key.js';
import { isAdmin } from '../../lib/service/accounts/auth.js';
import { verifyLnurlAuthSignature } from '../../lib/lightning/lnurl-auth.js';
import { useDevServer } from '../support/server.js';
import type { ChallengeBody as LoginChallenge } from '../support/lnurl-wallet.js';

const server = useDevServer(() => ({ AUTH_RATE_LIMIT_PER_MINUTE: '100000' }));

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

async function challenge(): Promise<LoginChallenge> {
  const response = await fetch(`${server.url}/api/lnurl-auth`);
  expect(response.status).toBe(200);
  return (await response.json()) as LoginChallenge;
}

async function devLogin(): Promise<{ token: string; pubkey: string; admin: boolean }> {
  const { k1, pollToken } = await challenge();
  const signed = await post('/api/dev/login', { k1 });
  expect(signed.status).toBe(200);
  expect(await signed.json()).toEqual({ status: 'OK', pubkey: devLoginKey(server.ctx)!.pubkey });
  const collected = await fetch(`${server.url}/api/lnurl-auth?k1=${k1}&pollToken=${pollToken}`);
  expect(collected.status).toBe(200);
  return (await collected.json()) as { token: string; pubkey: string; admin: boolean };
}

/** A production deployment with everything it needs (unreachable backends: nothing here calls them). */
const FULL_PRODUCTION = {
  NODE_ENV: 'production',
  L402_SECRET: 'p'.repeat(40),
  UPSTASH_REDIS_REST_URL: 'http://127.0.0.1:9',
  UPSTASH_REDIS_REST_TOKEN: 't',
  LIGHTNING_PROVIDER: 'lnbits',
  LNBITS_URL: 'http://127.0.0.1:9',
  LNBITS_API_KEY: 'k',
};
describe('the development login', () => {
  it('signs the real challenge with the dev key: the page collects an admin login with its poll token', async () => {
    const session = await devLogin();
    expect(session).toMatchObject({ status: 'ok', pubkey: devLoginKey(server.ctx)!.pubkey, admin: true });
    const me = await fetch(`${server.url}/api/login`, { headers: { authorization: `Bearer ${session.token}` } });
    expect(await me.json()).toMatchObject({ pubkey: session.pubkey, admin: true });
  });

  it('goes through the wallet callback checks: a k1 is signed once, an unknown k1 is refused, a bad body is 400', async () => {
    const { k1 } = await challenge();
    expect((await post('/api/dev/login', { k1 })).status).toBe(200);
    const again = await post('/api/dev/login', { k1 });
    expect(again.status).toBe(400);
    expect(await again.json()).toMatchObject({ status: 'ERROR', reason: expect.stringMatching(/already been used/) });
    const unknown = await post('/api/dev/login', { k1: '11'.repeat(32) });
    expect(unknown.status).toBe(400);
    expect(await unknown.json()).toMatchObject({ status: 'ERROR', reason: expect.stringMatching(/Unknown or expired k1/) });
    const bad = await post('/api/dev/login', { k1: 'nope' });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('INVALID_REQUEST');
  });

  it('the key it signs with is a real secp256k1 key whose signature a wallet check accepts', () => {
    const key = devLoginKey(server.ctx)!;
    const k1 = '42'.repeat(32);
    const sig = Buffer.from(secp256k1.sign(hexToBytes(k1), key.secretKey, { prehash: false, format: 'der' })).toString('hex');
    expect(verifyLnurlAuthSignature(k1, sig, key.pubkey)).toEqual({ ok: true });
  });
});

describe("the dev node's Lightning Addresses keep what they receive", () => {
  it('a link code sent by POST /api/links is read from GET /api/dev/inbox and links the address, on a fresh server (no balance needed)', async () => {
    const { token } = await devLogin();
    const auth = { authorization: `Bearer ${token}` };
    const address = `bob@${new URL(server.url).host}`;
    const started = await post('/api/links', { address }, auth);
    expect(started.status).toBe(200);
    expect(await started.json()).toMatchObject({ address, status: 'code-sent' });

    const inbox = await fetch(`${server.url}/api/dev/inbox?address=${encodeURIComponent(address)}`);
    expect(inbox.status).toBe(200);
    const { received } = (await inbox.json()) as { received: Array<{ amountMsat: number; comment: string | null }> };
    expect(received).toHaveLength(1);
    expect(received[0]!.amountMsat).toBe(1000);
    const code = /^L402 link code ([0-9A-Z]{4}-[0-9A-Z]{4})$/.exec(received[0]!.comment ?? '')?.[1];
    expect(code, `the comment carries the code: ${received[0]!.comment}`).toBeTruthy();

    const linked = await post('/api/links', { address, code }, auth);
    expect(linked.status).toBe(200);
    expect(await linked.json()).toEqual({ address, status: 'linked' });
  });

  it('lists paid invoices only, and answers 400 for a missing or malformed address', async () => {
    const address = `carol@${new URL(server.url).host}`;
    // An invoice asked for but never paid does not show.
    const asked = await fetch(`${server.url}/.well-known/lnurlp/carol?amount=5000&comment=unpaid`);
    expect(asked.status).toBe(200);
    expect(await (await fetch(`${server.url}/api/dev/inbox?address=${address}`)).json()).toEqual({ address, received: [] });
    expect((await fetch(`${server.url}/api/dev/inbox`)).status).toBe(400);
    expect((await fetch(`${server.url}/api/dev/inbox?address=not-an-address`)).status).toBe(400);
  });
});

// Last: these change how the service configures itself.
describe('never in production', () => {
  afterAll(() => server.restore());
  /** A configuration of these settings alone (not the file's), on the server's DATA_DIR. */
  const configOf = (env: Record<string, string>) => loadConfig({ DATA_DIR: server.dataDir, ...env });

  it.each([
    ['with nothing configured', { NODE_ENV: 'production' }],
    ['fully configured', FULL_PRODUCTION],
    ['with a real backend outside production', { LIGHTNING_PROVIDER: 'lnbits', LNBITS_URL: 'http://127.0.0.1:9', LNBITS_API_KEY: 'k' }],
  ])('POST /api/dev/login and GET /api/dev/inbox answer 404 %s', async (_, env) => {
    server.redeploy(configOf(env));
    const login = await post('/api/dev/login', { k1: '11'.repeat(32) });
    expect(login.status).toBe(404);
    expect(((await login.json()) as { code: string }).code).toBe('NOT_FOUND');
    const inbox = await fetch(`${server.url}/api/dev/inbox?address=alice@127.0.0.1`);
    expect(inbox.status).toBe(404);
    await inbox.body?.cancel();
  });

  // Fail closed: only an unset NODE_ENV, development or test runs locally; a misspelt production is production.
  it.each(['Production', 'prod', 'production ', 'staging'])('NODE_ENV=%j is production: no dev wallet, no dev login, no generated secret', async (nodeEnv) => {
    const config = configOf({ NODE_ENV: nodeEnv });
    expect(config).toMatchObject({
      production: true,
      modeReason: `NODE_ENV=${JSON.stringify(nodeEnv)}; only an unset NODE_ENV, development or test runs locally`,
    });
    server.redeploy(config);
    for (const path of ['/api/dev/pay', '/api/dev/login']) {
      const refused = await post(path, path === '/api/dev/pay' ? { invoice: 'lnbcrt1' } : { k1: '11'.repeat(32) });
      expect(refused.status, path).toBe(404);
      expect(((await refused.json()) as { code: string }).code).toBe('NOT_FOUND');
    }
    // The paywall refuses to sell tokens under a secret it made up or replay marks kept in this process.
    const paid = await fetch(`${server.url}/api/demo/btc-price`);
    expect(paid.status).toBe(503);
    expect(await paid.json()).toMatchObject({ code: 'NOT_CONFIGURED', missing: expect.arrayContaining(['L402_SECRET']) });
  });

  it('in production no key is the development admin', () => {
    const ctx = createServiceContext(configOf(FULL_PRODUCTION));
    expect(devLoginKey(ctx)).toBeUndefined();
    expect(isAdmin(ctx, '02' + '11'.repeat(32))).toBe(false);
  });
});
