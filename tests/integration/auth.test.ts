// Dashboard login with LNURL-auth (LUD-04) through the real local server:
// real secp256k1 keys sign real challenges, the page polls with its pollToken,
// the login token opens GET /api/login (and its first path, /api/session) until it
// expires or is revoked.
// On PGlite and on real PostgreSQL (when reachable).
import { createHash } from 'node:crypto';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import QRCode from 'qrcode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../lib/db/index.js';
import { decodeLnurl } from '../../lib/lightning/lnurl.js';
import type { ServiceContext } from '../../lib/service/context.js';
import { callBack, testWallet, type ChallengeBody } from '../support/lnurl-wallet.js';
import { databaseBackends } from '../support/postgres.js';
import { rawRequest } from '../support/raw-request.js';
import { useDevServerOn } from '../support/server.js';

const backends = await databaseBackends();
const admin = testWallet();

interface ErrorBody {
  error: string;
  code: string;
}

interface LoginBody {
  status: 'ok';
  token: string;
  pubkey: string;
  admin: boolean;
  expiresAt: string;
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`LNURL-auth login on ${backend.name}${backend.skip ? ` [SKIPPED: ${backend.skip}]` : ''}`, () => {
    const running = useDevServerOn(backend, () => ({
      ADMIN_PUBKEYS: `${testWallet().pubkey}, ${admin.pubkey.toUpperCase()}`,
      AUTH_RATE_LIMIT_PER_MINUTE: '100000',
    }));
    let url = '';
    let db: Database;
    beforeAll(() => {
      url = running.url;
      db = running.db;
    });

    /** A fresh service context that keeps the test database, with config changes; running.restore() goes back. */
    function reconfigure(auth: Partial<ServiceContext['config']['auth']>): void {
      running.redeploy(running.config(), { database: () => Promise.resolve(db) });
      const ctx = running.ctx;
      running.use({ ...ctx, config: { ...ctx.config, auth: { ...ctx.config.auth, ...auth } } });
    }

    async function challenge(): Promise<ChallengeBody> {
      const response = await fetch(`${url}/api/lnurl-auth`);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      return (await response.json()) as ChallengeBody;
    }

    function poll(k1: string, pollToken?: string): Promise<Response> {
      const query = new URLSearchParams({ k1, ...(pollToken !== undefined ? { pollToken } : {}) });
      return fetch(`${url}/api/lnurl-auth?${query}`);
    }

    async function expectError(response: Response, status: number, code: string): Promise<ErrorBody> {
      const body = (await response.json()) as ErrorBody;
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code }));
      return body;
    }

    /** The whole login as a person does it: page asks, wallet scans and signs, page collects. */
    async function login(wallet = testWallet()): Promise<LoginBody> {
      const c = await challenge();
      expect(await wallet.scan(c.lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
      const response = await poll(c.k1, c.pollToken);
      const body = (await response.json()) as LoginBody;
      expect(response.status, JSON.stringify(body)).toBe(200);
      return body;
    }

    function me(token: string | null): Promise<Response> {
      return fetch(`${url}/api/login`, { headers: token === null ? {} : { authorization: `Bearer ${token}` } });
    }

    describe('GET /api/lnurl-auth: the challenge', () => {
      it('answers {k1, lnurl, expiresAt, pollToken, qr}: k1 32 random bytes, lnurl the LUD-01 bech32 of the callback with tag=login and k1, 5 minutes of life', async () => {
        const before = Date.now();
        const c = await challenge();
        expect(Object.keys(c).sort()).toEqual(['expiresAt', 'k1', 'lnurl', 'pollToken', 'qr']);
        // The QR code is the upper-case lnurl and nothing else (no pollToken), as an SVG document.
        expect(c.qr).toBe(await QRCode.toString(c.lnurl, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 }));
        expect(c.qr).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]*>/);
        expect(c.k1).toMatch(/^[0-9a-f]{64}$/);
        expect(c.lnurl).toMatch(/^LNURL1[02-9AC-HJ-NP-Z]+$/);
        const callback = new URL(decodeLnurl(c.lnurl));
        expect(callback.origin + callback.pathname).toBe(`${url}/api/lnurl-auth`);
        expect(Object.fromEntries(callback.searchParams)).toEqual({ tag: 'login', k1: c.k1, action: 'login' });
        // The pollToken is for the page only: the QR code does not carry it.
        expect(decodeLnurl(c.lnurl)).not.toContain(c.pollToken);
        expect(Date.parse(c.expiresAt) - before).toBeGreaterThan(295_000);
        expect(Date.parse(c.expiresAt) - before).toBeLessThan(305_000);
        const other = await challenge();
        expect(other.k1).not.toBe(c.k1);
        expect(other.pollToken).not.toBe(c.pollToken);
      });

      describe('in production, the callback comes from configuration, never from the Host a request names', () => {
        afterAll(() => running.restore());
        /** The server's handlers in production, with `publicUrl` (PUBLIC_URL) as given; the test database is kept. */
        const production = (publicUrl: string | undefined) => {
          const ctx = running.ctx;
          running.use({ ...ctx, config: { ...ctx.config, production: true, publicUrl } });
        };
        const withHost = (method: string, path: string, host: string) => rawRequest(`${url}${path}`, { method, headers: { host } });

        it('with PUBLIC_URL: the wallet calls back there, whatever Host and scheme the request arrived with', async () => {
          production('https://pay.example.com');
          const { status, body } = await withHost('GET', '/api/lnurl-auth', 'attacker.example');
          expect(status).toBe(200);
          expect(decodeLnurl(body.lnurl as string)).toBe(`https://pay.example.com/api/lnurl-auth?tag=login&k1=${body.k1}&action=login`);
        });

        it.each([
          ['GET', '/api/lnurl-auth'],
          ['POST', '/api/delete-data'],
        ])('without PUBLIC_URL: %s %s answers 503 NOT_CONFIGURED naming PUBLIC_URL, and makes no challenge', async (method, path) => {
          production(undefined);
          const { status, headers, body } = await withHost(method, path, 'attacker.example');
          expect(status).toBe(503);
          expect(Number(headers['retry-after'])).toBeGreaterThan(0);
          expect(body).toEqual({ error: expect.stringContaining('PUBLIC_URL'), code: 'NOT_CONFIGURED', missing: ['PUBLIC_URL'] });
          expect(JSON.stringify(body)).not.toContain('attacker.example');
        });
      });

      it('is pending (202) until the wallet signs', async () => {
        const c = await challenge();
        const response = await poll(c.k1, c.pollToken);
        expect(response.status).toBe(202);
        expect(await response.json()).toEqual({ status: 'pending', expiresAt: c.expiresAt });
      });
    });

    describe('login', () => {
      it('a real key signs the k1, the wallet hears OK, the page receives a login for that key once', async () => {
        const wallet = testWallet();
        const c = await challenge();
        expect(await wallet.scan(c.lnurl)).toEqual({ status: 200, body: { status: 'OK' } });
        const response = await poll(c.k1, c.pollToken);
        expect(response.status).toBe(200);
        const body = (await response.json()) as LoginBody;
        expect(body).toEqual({
          status: 'ok',
          token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
          pubkey: wallet.pubkey,
          admin: false,
          expiresAt: expect.any(String),
        });
        expect(Math.abs(Date.parse(body.expiresAt) - Date.now() - 24 * 3600_000)).toBeLessThan(60_000);
        // Once: a second poll (another tab, a replayed request) gets nothing.
        await expectError(await poll(c.k1, c.pollToken), 410, 'ALREADY_COLLECTED');

        const who = await me(body.token);
        expect(who.status).toBe(200);
        expect(await who.json()).toEqual({ pubkey: wallet.pubkey, admin: false, addresses: [], expiresAt: body.expiresAt });
      });

      it('keeps only the SHA-256 of the login token', async () => {
        const wallet = testWallet();
        const { token } = await login(wallet);
        const rows = await db.query('SELECT * FROM auth_sessions WHERE pubkey = $1', [wallet.pubkey]);
        expect(rows).toHaveLength(1);
        expect(rows[0]!.token_hash).toBe(sha256Hex(token));
        expect(JSON.stringify(rows)).not.toContain(token);
      });

      it('ADMIN_PUBKEYS log in as admins (any case in the setting); others do not', async () => {
        expect((await login(admin)).admin).toBe(true);
        const { token } = await login(admin);
        expect(await (await me(token)).json()).toEqual(expect.objectContaining({ pubkey: admin.pubkey, admin: true }));
        expect((await login()).admin).toBe(false);
      });

      it('two pages polling at once: exactly one receives the login', async () => {
        const c = await challenge();
        await testWallet().scan(c.lnurl);
        const answers = await Promise.all(Array.from({ length: 8 }, () => poll(c.k1, c.pollToken)));
        expect(answers.map((r) => r.status).sort()).toEqual([200, 410, 410, 410, 410, 410, 410, 410]);
      });
    });

    describe('refused signatures: the wallet hears {status: "ERROR", reason} and no login exists', () => {
      async function expectRefused(answer: { status: number; body: { status: string; reason?: string } }, reason: RegExp) {
        expect(answer.status).toBe(200);
        expect(answer.body).toEqual({ status: 'ERROR', reason: expect.stringMatching(reason) });
      }

      it('a forged signature: signed by one key, presented as another', async () => {
        const c = await challenge();
        const [mallory, victim] = [testWallet(), testWallet()];
        const callback = new URL(decodeLnurl(c.lnurl));
        await expectRefused(await callBack(callback, { sig: mallory.sign(c.k1), key: victim.pubkey }), /does not verify/);
        expect((await poll(c.k1, c.pollToken)).status).toBe(202);
        // The k1 is still good for the real owner.
        expect((await victim.scan(c.lnurl)).body).toEqual({ status: 'OK' });
      });

      it('a signature over another k1', async () => {
        const [c, other] = [await challenge(), await challenge()];
        const wallet = testWallet();
        await expectRefused(await callBack(new URL(decodeLnurl(c.lnurl)), { sig: wallet.sign(other.k1), key: wallet.pubkey }), /does not verify/);
        expect((await poll(c.k1, c.pollToken)).status).toBe(202);
      });

      it('a reused k1, by the same key or another', async () => {
        const c = await challenge();
        const wallet = testWallet();
        expect((await wallet.scan(c.lnurl)).body).toEqual({ status: 'OK' });
        await expectRefused(await wallet.scan(c.lnurl), /already been used/);
        await expectRefused(await testWallet().scan(c.lnurl), /already been used/);
        // The page still gets the login of the first, valid signature, and only that one.
        const body = (await (await poll(c.k1, c.pollToken)).json()) as LoginBody;
        expect(body.pubkey).toBe(wallet.pubkey);
        await expectRefused(await testWallet().scan(c.lnurl), /already been used/);
      });

      it('ten wallets racing to sign one k1: exactly one OK', async () => {
        const c = await challenge();
        const answers = await Promise.all(Array.from({ length: 10 }, () => testWallet().scan(c.lnurl)));
        expect(answers.filter((a) => a.body.status === 'OK')).toHaveLength(1);
      });

      it('a k1 the service never issued', async () => {
        const wallet = testWallet();
        const k1 = bytesToHex(randomBytes(32));
        await expectRefused(
          await callBack(`${url}/api/lnurl-auth?tag=login&action=login&k1=${k1}`, { sig: wallet.sign(k1), key: wallet.pubkey }),
          /Unknown or expired k1/,
        );
      });

      it.each([
        ['no sig or key', () => ({})],
        ['a malformed key', (k1: string, w: ReturnType<typeof testWallet>) => ({ sig: w.sign(k1), key: 'zz' })],
        ['an uncompressed key', (k1: string, w: ReturnType<typeof testWallet>) => ({ sig: w.sign(k1), key: '04' + 'ab'.repeat(64) })],
        ['a malformed sig', (_k1: string, w: ReturnType<typeof testWallet>) => ({ sig: 'not-der', key: w.pubkey })],
      ])('%s', async (_name, params) => {
        const c = await challenge();
        await expectRefused(await callBack(new URL(decodeLnurl(c.lnurl)), params(c.k1, testWallet())), /\w/);
        expect((await poll(c.k1, c.pollToken)).status).toBe(202);
      });

      it('a malformed k1', async () => {
        const wallet = testWallet();
        await expectRefused(
          await callBack(`${url}/api/lnurl-auth?tag=login&k1=1234`, { sig: wallet.sign('ab'.repeat(32)), key: wallet.pubkey }),
          /k1 must be 32 bytes/,
        );
      });
    });

    describe('an expired k1', () => {
      afterAll(() => running.restore());

      it('is refused to the wallet and unknown to the page', async () => {
        reconfigure({ challengeTtlSeconds: 1 });
        const c = await challenge();
        expect(Date.parse(c.expiresAt) - Date.now()).toBeLessThanOrEqual(1000);
        await new Promise((resolve) => setTimeout(resolve, 1100));
        const wallet = testWallet();
        expect(await wallet.scan(c.lnurl)).toEqual({ status: 200, body: { status: 'ERROR', reason: expect.stringMatching(/expired/) } });
        await expectError(await poll(c.k1, c.pollToken), 404, 'CHALLENGE_NOT_FOUND');
      });
    });

    describe('a stolen k1 (someone saw the QR code)', () => {
      it('cannot collect the login: without the pollToken nothing, with a wrong one a 401, and the real page still logs in', async () => {
        const c = await challenge();
        const wallet = testWallet();
        await wallet.scan(c.lnurl);
        // Without pollToken the request is a wallet callback, which has no sig: LUD-04 ERROR, no login.
        const bare = await poll(c.k1);
        expect(await bare.json()).toEqual({ status: 'ERROR', reason: 'sig is required' });
        await expectError(await poll(c.k1, randomBytesBase64url()), 401, 'POLL_TOKEN_INVALID');
        await expectError(await poll(c.k1, c.pollToken.slice(0, 20)), 400, 'INVALID_REQUEST');
        const response = await poll(c.k1, c.pollToken);
        expect(response.status).toBe(200);
        expect(((await response.json()) as LoginBody).pubkey).toBe(wallet.pubkey);
      });

      it('the pollToken of one challenge does not collect another', async () => {
        const [a, b] = [await challenge(), await challenge()];
        await testWallet().scan(b.lnurl);
        await expectError(await poll(b.k1, a.pollToken), 401, 'POLL_TOKEN_INVALID');
      });

      it('a login challenge cannot be collected as an erasure', async () => {
        const c = await challenge();
        await testWallet().scan(c.lnurl);
        await expectError(await fetch(`${url}/api/delete-data?${new URLSearchParams({ k1: c.k1, pollToken: c.pollToken })}`), 404, 'CHALLENGE_NOT_FOUND');
        expect((await poll(c.k1, c.pollToken)).status).toBe(200);
      });
    });

    describe('logins', () => {
      it('without a token, with a malformed one or an unknown one: 401 with WWW-Authenticate: Bearer', async () => {
        const none = await me(null);
        expect(none.headers.get('www-authenticate')).toBe('Bearer');
        await expectError(none, 401, 'SESSION_REQUIRED');
        await expectError(await me('not a token'), 401, 'SESSION_INVALID');
        await expectError(await fetch(`${url}/api/login`, { headers: { authorization: 'Basic abc' } }), 401, 'SESSION_INVALID');
        await expectError(await me(randomBytesBase64url()), 401, 'SESSION_INVALID');
        // A login token's hash is not a login token.
        const { token } = await login();
        await expectError(await me(sha256Hex(token)), 401, 'SESSION_INVALID');
      });

      it('an expired login is refused', async () => {
        const { token } = await login();
        expect((await me(token)).status).toBe(200);
        await db.query(`UPDATE auth_sessions SET expires_at = now() - interval '1 second' WHERE token_hash = $1`, [sha256Hex(token)]);
        await expectError(await me(token), 401, 'SESSION_EXPIRED');
        await expectError(await fetch(`${url}/api/links`, { headers: { authorization: `Bearer ${token}` } }), 401, 'SESSION_EXPIRED');
      });

      it('logout (DELETE /api/login) revokes this login only', async () => {
        const wallet = testWallet();
        const [first, second] = [await login(wallet), await login(wallet)];
        const out = await fetch(`${url}/api/login`, { method: 'DELETE', headers: { authorization: `Bearer ${first.token}` } });
        expect(out.status).toBe(200);
        expect(await out.json()).toEqual({ revoked: 1 });
        await expectError(await me(first.token), 401, 'SESSION_REVOKED');
        await expectError(await fetch(`${url}/api/login`, { method: 'DELETE', headers: { authorization: `Bearer ${first.token}` } }), 401, 'SESSION_REVOKED');
        expect((await me(second.token)).status).toBe(200);
      });

      it('DELETE /api/login?all=1 revokes every login of the key, and no other key', async () => {
        const wallet = testWallet();
        const [a, b, c] = [await login(wallet), await login(wallet), await login(wallet)];
        const bystander = await login();
        const out = await fetch(`${url}/api/login?all=1`, { method: 'DELETE', headers: { authorization: `Bearer ${a.token}` } });
        expect(await out.json()).toEqual({ revoked: 3 });
        for (const s of [a, b, c]) await expectError(await me(s.token), 401, 'SESSION_REVOKED');
        expect((await me(bystander.token)).status).toBe(200);
      });

      it('/api/session, the first path, answers as /api/login does: who is logged in, and logging out', async () => {
        const wallet = testWallet();
        const { token } = await login(wallet);
        const byFirstPath = await fetch(`${url}/api/session`, { headers: { authorization: `Bearer ${token}` } });
        expect(byFirstPath.status).toBe(200);
        expect(await byFirstPath.json()).toEqual(await (await me(token)).json());
        await expectError(await fetch(`${url}/api/session`), 401, 'SESSION_REQUIRED');
        const out = await fetch(`${url}/api/session`, { method: 'DELETE', headers: { authorization: `Bearer ${token}` } });
        expect(await out.json()).toEqual({ revoked: 1 });
        await expectError(await me(token), 401, 'SESSION_REVOKED');
      });
    });

    describe('rate limit on new challenges', () => {
      afterAll(() => running.restore());

      it('answers 429 with Retry-After past AUTH_RATE_LIMIT_PER_MINUTE', async () => {
        reconfigure({ ratePerMinute: 2 });
        expect((await fetch(`${url}/api/lnurl-auth`)).status).toBe(200);
        expect((await fetch(`${url}/api/lnurl-auth`)).status).toBe(200);
        const limited = await fetch(`${url}/api/lnurl-auth`);
        expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        await expectError(limited, 429, 'RATE_LIMITED');
      });
    });
  });
}

function randomBytesBase64url(): string {
  return Buffer.from(randomBytes(32)).toString('base64url');
}
