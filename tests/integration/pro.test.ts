// The Pro tier as a customer meets it: buy (GET /api/dev-token), pay with the
// dev wallet, activate (POST /api/dev-token), check (GET /api/pro-check);
// through the real dev server, on PGlite and on real PostgreSQL.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import devTokenFn from '../../api/dev-token.js';
import proCheckFn from '../../api/pro-check.js';
import { DatabaseUnavailable, type Database } from '../../lib/db/index.js';
import { Keyring, decodeToken, mintToken } from 'l402-paywall';
import { decodeInvoice } from 'l402-paywall/lightning';
import type { ServiceContext } from '../../lib/service/context.js';
import { PRO_ACTIVATION_WINDOW_SECONDS } from '../../lib/service/accounts/pro.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn, type Settings, type TestServer } from '../support/server.js';
import { unreachableProvider, withCaveats } from '../../packages/l402-paywall/tests/support/l402.js';

// Every test runs on PGlite (in memory) and on a real PostgreSQL server when one
// is reachable (TEST_DATABASE_URL): a database of its own, dropped after.
const backends = await databaseBackends();

/** The dev server of the backend under test. */
let server: TestServer & { readonly db: Database };

/** The database of the backend under test, as the service opened it. */
let db: Database;

/**
 * A new deployment of the file's settings with `env` over them (a new service
 * context, as after a restart), parts of its context replaced by `overrides`,
 * that keeps the test database (a new in-memory PGlite costs seconds).
 * server.restore() goes back.
 */
function redeploy(env: Settings = {}, overrides: Partial<ServiceContext> = {}): void {
  server.redeploy(server.config(env), { database: () => Promise.resolve(db), ...overrides });
}

const DAY_MS = 86_400_000;
const TERM_MS = 30 * DAY_MS;

interface ErrorBody {
  error: string;
  code: string;
  retryAfter?: number;
  expiresAt?: string;
}

interface Offer {
  priceSats: number;
  invoice: string;
  macaroon: string;
  paymentHash: string;
  expiresAt: string;
}

function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(server.url + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

function expectErrorBody(body: unknown, code?: string): asserts body is ErrorBody {
  expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code: expect.stringMatching(/^[A-Z][A-Z0-9_]*$/) }));
  if (code) expect((body as ErrorBody).code).toBe(code);
  expect(JSON.stringify(body)).not.toMatch(/\bat .*\.ts:\d+|node_modules/);
}

async function expectError(response: Response, status: number, code: string): Promise<ErrorBody> {
  const body = (await response.json()) as unknown;
  expect(response.status, JSON.stringify(body)).toBe(status);
  expectErrorBody(body, code);
  return body;
}

async function offer(address: string): Promise<Offer> {
  const response = await fetch(`${server.url}/api/dev-token?address=${encodeURIComponent(address)}`);
  const body = (await response.json()) as Offer;
  expect(response.status, JSON.stringify(body)).toBe(200);
  return body;
}

async function pay(invoice: string): Promise<string> {
  const response = await post('/api/dev/pay', { invoice });
  expect(response.status).toBe(200);
  return ((await response.json()) as { preimage: string }).preimage;
}

/** A paid Pro token for `address`: the body of POST /api/dev-token. */
async function buy(address: string): Promise<{ macaroon: string; preimage: string }> {
  const sold = await offer(address);
  return { macaroon: sold.macaroon, preimage: await pay(sold.invoice) };
}

function activate(body: unknown): Promise<Response> {
  return post('/api/dev-token', body);
}

async function activated(body: unknown): Promise<string> {
  const response = await activate(body);
  const answer = (await response.json()) as { access: boolean; expiresAt: string };
  expect(response.status, JSON.stringify(answer)).toBe(200);
  expect(answer).toEqual({ access: true, expiresAt: expect.any(String) });
  expect(new Date(answer.expiresAt).toISOString()).toBe(answer.expiresAt);
  return answer.expiresAt;
}

async function check(address: string): Promise<{ active: boolean; expiresAt?: string }> {
  const response = await fetch(`${server.url}/api/pro-check?address=${encodeURIComponent(address)}`);
  expect(response.status).toBe(200);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return (await response.json()) as { active: boolean; expiresAt?: string };
}

const expectAbout = (iso: string, expectedMs: number) => expect(Math.abs(Date.parse(iso) - expectedMs)).toBeLessThan(60_000);

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`Pro on ${backend.name}${backend.skip ? ` [SKIPPED: ${backend.skip}]` : ''}`, () => {
    const running = useDevServerOn(backend, () => ({ INVOICE_RATE_LIMIT_PER_MINUTE: '100000' }));
    beforeAll(() => {
      server = running;
      db = running.db;
    });

    it('runs on the backend it names', () => {
      expect(db.kind).toBe(backend.name === 'PGlite' ? 'pglite' : 'pg');
    });

    describe('buying Pro: GET /api/dev-token?address=', () => {
      it('answers {priceSats, invoice, macaroon} for 9000 sats, the token bound to the address and to "pro"', async () => {
        const response = await fetch(`${server.url}/api/dev-token?address=${encodeURIComponent('  Alice@Example.COM ')}`);
        expect(response.status).toBe(200);
        expect(response.headers.get('cache-control')).toBe('no-store');
        const body = (await response.json()) as Offer;
        expect(body).toEqual({
          priceSats: 9000,
          invoice: expect.stringMatching(/^lnbcrt/),
          macaroon: expect.any(String),
          paymentHash: expect.stringMatching(/^[0-9a-f]{64}$/),
          expiresAt: expect.any(String),
        });
        const invoice = decodeInvoice(body.invoice);
        expect(invoice.amountMsat).toBe(9_000_000);
        expect(invoice.paymentHash).toBe(body.paymentHash);
        expect(invoice.description).toBe('L402 Pro: 30 days for alice@example.com');
        expect(Math.abs(invoice.expiresAt - Date.parse(body.expiresAt) / 1000)).toBeLessThanOrEqual(1);
        const token = decodeToken(body.macaroon)!;
        expect(token.hash).toBe(body.paymentHash);
        expect(token.caveats).toEqual(['address=alice@example.com', 'price_msat=9000000', 'purpose=pro']);
        // A paid token still activates for a week after the invoice expires (no money lost to an outage).
        expect(token.exp).toBe(Math.floor(Date.parse(body.expiresAt) / 1000) + PRO_ACTIVATION_WINDOW_SECONDS);
      });

      it.each([
        ['', /address is required/],
        ['?address=', /Lightning Address/],
        ['?address=alice', /Lightning Address/],
        ['?address=alice%40example', /Lightning Address/],
        ["?address=a'%3B--%40example.com", /Lightning Address/],
        ['?address=%E5%90%8D%E5%89%8D%40example.com', /Lightning Address/],
        [`?address=${'a'.repeat(400)}%40example.com`, /320/],
      ])('answers 400 for GET /api/dev-token%s', async (query, message) => {
        const body = await expectError(await fetch(`${server.url}/api/dev-token${query}`), 400, 'INVALID_REQUEST');
        expect(body.error).toMatch(message);
      });
    });

    describe('activating Pro: POST /api/dev-token {macaroon, preimage}', () => {
      beforeAll(() => db.query('TRUNCATE pro_activations, pro_subscriptions'));

      it('activates 30 days, and GET /api/pro-check says so for any spelling of the address', async () => {
        expect(await check('carol@example.com')).toEqual({ active: false });
        const { macaroon, preimage } = await buy('carol@example.com');
        const expiresAt = await activated({ macaroon, preimage });
        expectAbout(expiresAt, Date.now() + TERM_MS);
        expect(await check('carol@example.com')).toEqual({ active: true, expiresAt });
        expect(await check(' CAROL@example.COM')).toEqual({ active: true, expiresAt });
        expect(await check('dave@example.com')).toEqual({ active: false });
      });

      it("accepts the preimage in upper case and the address when it is the token's", async () => {
        const { macaroon, preimage } = await buy('erin@example.com');
        await activated({ macaroon, preimage: preimage.toUpperCase(), address: 'Erin@Example.com' });
      });

      it('activates once per payment: a replayed token gets 409 ALREADY_ACTIVATED and changes nothing', async () => {
        const { macaroon, preimage } = await buy('frank@example.com');
        const expiresAt = await activated({ macaroon, preimage });
        for (let i = 0; i < 3; i++) {
          const body = await expectError(await activate({ macaroon, preimage }), 409, 'ALREADY_ACTIVATED');
          expect(body.expiresAt).toBe(expiresAt); // where the client stands, for a retry after a lost answer
        }
        expect(await check('frank@example.com')).toEqual({ active: true, expiresAt });
      });

      it('25 concurrent activations of one paid token: exactly one succeeds', async () => {
        const { macaroon, preimage } = await buy('grace@example.com');
        const responses = await Promise.all(Array.from({ length: 25 }, () => activate({ macaroon, preimage })));
        const statuses = responses.map((r) => r.status).sort();
        expect(statuses).toEqual([200, ...Array(24).fill(409)]);
        const winner = (await responses.find((r) => r.status === 200)!.json()) as { expiresAt: string };
        expectAbout(winner.expiresAt, Date.now() + TERM_MS);
        expect(await check('grace@example.com')).toEqual({ active: true, expiresAt: winner.expiresAt });
      });

      it('a second payment extends by 30 days from the current end', async () => {
        const first = await activated(await buy('heidi@example.com'));
        const second = await activated(await buy('heidi@example.com'));
        expect(Date.parse(second) - Date.parse(first)).toBe(TERM_MS);
        // Three more at once: each adds exactly 30 days.
        const tokens = await Promise.all([1, 2, 3].map(() => buy('heidi@example.com')));
        const ends = await Promise.all(tokens.map((t) => activated(t)));
        expect(Math.max(...ends.map(Date.parse)) - Date.parse(second)).toBe(3 * TERM_MS);
        expect(await check('heidi@example.com')).toEqual({ active: true, expiresAt: new Date(Date.parse(second) + 3 * TERM_MS).toISOString() });
      });

      it('after a subscription ran out, a payment starts 30 days from now, not from the old end', async () => {
        await activated(await buy('ivan@example.com'));
        await db.query("UPDATE pro_subscriptions SET expires_at = now() - interval '10 days' WHERE address = $1", ['ivan@example.com']);
        expect(await check('ivan@example.com')).toEqual({ active: false });
        const renewed = await activated(await buy('ivan@example.com'));
        expectAbout(renewed, Date.now() + TERM_MS);
      });

      it('a Pro token opens nothing else: the demo paywall refuses it', async () => {
        const { macaroon, preimage } = await buy('judy@example.com');
        const response = await fetch(`${server.url}/api/demo/btc-price`, { headers: { Authorization: `L402 ${macaroon}:${preimage}` } });
        expect(response.status).toBe(402);
        expect(((await response.json()) as ErrorBody).code).toMatch(/WRONG_ROUTE|CAVEAT_NOT_SATISFIED/);
        await activated({ macaroon, preimage }); // and it was not used up there
      });
    });

    describe('refused tokens activate nothing', () => {
      beforeAll(() => db.query('TRUNCATE pro_activations, pro_subscriptions'));

      const ctx = () => server.ctx;
      const future = () => Math.floor(Date.now() / 1000) + 3600;

      it('a paid token from the demo paywall: 403 WRONG_PURPOSE', async () => {
        const challenge = await fetch(`${server.url}/api/demo/btc-price`);
        const { macaroon, invoice } = (await challenge.json()) as { macaroon: string; invoice: string };
        const preimage = await pay(invoice);
        await expectError(await activate({ macaroon, preimage }), 403, 'WRONG_PURPOSE');
      });

      it('a paid token from POST /api/invoice, even for the same address: 403 WRONG_PURPOSE', async () => {
        const response = await post('/api/invoice', { amountSats: 9000, ownerAddress: 'mallory@example.com' });
        const { macaroon, paymentRequest } = (await response.json()) as { macaroon: string; paymentRequest: string };
        const preimage = await pay(paymentRequest);
        await expectError(await activate({ macaroon, preimage }), 403, 'WRONG_PURPOSE');
        await expectError(await activate({ macaroon, preimage, address: 'mallory@example.com' }), 403, 'WRONG_PURPOSE');
      });

      it('a Pro token for another address: 403 WRONG_ADDRESS, and it still works for its own', async () => {
        const { macaroon, preimage } = await buy('oscar@example.com');
        await expectError(await activate({ macaroon, preimage, address: 'mallory@example.com' }), 403, 'WRONG_ADDRESS');
        expect(await check('mallory@example.com')).toEqual({ active: false });
        expect(await check('oscar@example.com')).toEqual({ active: false });
        await activated({ macaroon, preimage, address: 'oscar@example.com' });
      });

      it('an unpaid token (a guessed preimage): 403 PREIMAGE_MISMATCH', async () => {
        const sold = await offer('mallory@example.com');
        await expectError(await activate({ macaroon: sold.macaroon, preimage: bytesToHex(randomBytes(32)) }), 403, 'PREIMAGE_MISMATCH');
      });

      it('a token signed with another key: 403 UNKNOWN_KEY', async () => {
        const preimage = bytesToHex(randomBytes(32));
        const hash = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', Buffer.from(preimage, 'hex'))));
        const forged = mintToken(new Keyring(['an-attacker-secret-0123456789abcdef0123456789']), {
          paymentHash: hash,
          expiresAt: future(),
          caveats: { purpose: 'pro', address: 'mallory@example.com', price_msat: 9_000_000 },
        });
        await expectError(await activate({ macaroon: forged, preimage }), 403, 'UNKNOWN_KEY');
      });

      it('a real Pro token with its address edited: 403 BAD_SIGNATURE', async () => {
        const { macaroon, preimage } = await buy('oscar@example.com');
        const edited = withCaveats(macaroon, (caveats) => caveats.map((c) => (c.startsWith('address=') ? 'address=mallory@example.com' : c)));
        await expectError(await activate({ macaroon: edited, preimage }), 403, 'BAD_SIGNATURE');
        expect(await check('mallory@example.com')).toEqual({ active: false });
      });

      it('an expired token: 403 TOKEN_EXPIRED', async () => {
        const preimage = bytesToHex(randomBytes(32));
        const hash = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', Buffer.from(preimage, 'hex'))));
        const expired = mintToken(ctx().keyring, {
          paymentHash: hash,
          expiresAt: Math.floor(Date.now() / 1000) - 1,
          caveats: { purpose: 'pro', address: 'mallory@example.com', price_msat: 9_000_000 },
        });
        const body = await expectError(await activate({ macaroon: expired, preimage }), 403, 'TOKEN_EXPIRED');
        expect(body.error).toBe('Token expired');
      });

      it.each([
        ['another purpose', { purpose: 'stats', address: 'mallory@example.com', price_msat: 9_000_000 }],
        ['no purpose', { address: 'mallory@example.com', price_msat: 9_000_000 }],
        ['no address', { purpose: 'pro', price_msat: 9_000_000 }],
        ['no price', { purpose: 'pro', address: 'mallory@example.com' }],
        ['an extra route caveat', { purpose: 'pro', address: 'mallory@example.com', price_msat: 9_000_000, route: '/api/dev-token' }],
        ['an extra uses caveat', { purpose: 'pro', address: 'mallory@example.com', price_msat: 9_000_000, uses: 100 }],
      ])('a validly signed, paid token with %s: 403 WRONG_PURPOSE', async (_, caveats) => {
        const preimage = bytesToHex(randomBytes(32));
        const hash = bytesToHex(new Uint8Array(await crypto.subtle.digest('SHA-256', Buffer.from(preimage, 'hex'))));
        const macaroon = mintToken(ctx().keyring, { paymentHash: hash, expiresAt: future(), caveats });
        await expectError(await activate({ macaroon, preimage }), 403, 'WRONG_PURPOSE');
      });

      it('none of the above activated anyone', async () => {
        expect(await check('mallory@example.com')).toEqual({ active: false });
        expect(await db.query('SELECT address FROM pro_subscriptions ORDER BY address')).toEqual([{ address: 'oscar@example.com' }]);
      });
    });

    describe('bad input', () => {
      const goodMacaroon = () => offer('peggy@example.com').then((o) => o.macaroon);

      it.each([
        ['malformed JSON', '{"macaroon": ', 'INVALID_JSON'],
        ['an empty body', '', 'INVALID_JSON'],
        ['an array', '[]', 'INVALID_REQUEST'],
        ['null', 'null', 'INVALID_REQUEST'],
        ['no macaroon', JSON.stringify({ preimage: '0'.repeat(64) }), 'INVALID_REQUEST'],
        ['no preimage', JSON.stringify({ macaroon: 'abc' }), 'INVALID_REQUEST'],
        ['a numeric macaroon', JSON.stringify({ macaroon: 5, preimage: '0'.repeat(64) }), 'INVALID_REQUEST'],
        ['a short preimage', JSON.stringify({ macaroon: 'abc', preimage: '0'.repeat(63) }), 'INVALID_REQUEST'],
        ['a non-hex preimage', JSON.stringify({ macaroon: 'abc', preimage: 'g'.repeat(64) }), 'INVALID_REQUEST'],
        ['a preimage with SQL', JSON.stringify({ macaroon: 'abc', preimage: "'; DROP TABLE pro_activations;--" }), 'INVALID_REQUEST'],
        ['an unknown field', JSON.stringify({ macaroon: 'abc', preimage: '0'.repeat(64), months: 12 }), 'INVALID_REQUEST'],
        ['an invalid address', JSON.stringify({ macaroon: 'abc', preimage: '0'.repeat(64), address: 'nobody' }), 'INVALID_REQUEST'],
        ['a macaroon that is no token', JSON.stringify({ macaroon: "Robert'); DROP TABLE pro_subscriptions;--", preimage: '0'.repeat(64) }), 'MALFORMED_TOKEN'],
        ['a unicode macaroon', JSON.stringify({ macaroon: '名前 😀', preimage: '0'.repeat(64) }), 'MALFORMED_TOKEN'],
      ])('POST /api/dev-token with %s: 400', async (_, body, code) => {
        await expectError(await activate(body), 400, code);
      });

      it('POST /api/dev-token with an oversized body: 413', async () => {
        await expectError(await activate({ macaroon: await goodMacaroon(), preimage: '0'.repeat(64), pad: 'x'.repeat(20_000) }), 413, 'BODY_TOO_LARGE');
      });

      it.each(['', '?address=', '?address=bob', '?address=%00%40example.com', '?address=bob%40example.com%27--'])(
        'GET /api/pro-check%s: 400',
        async (query) => {
          await expectError(await fetch(`${server.url}/api/pro-check${query}`), 400, 'INVALID_REQUEST');
        },
      );

      it('answers OPTIONS with CORS and a wrong method with 405', async () => {
        for (const [path, methods, wrong] of [
          ['/api/dev-token', 'GET, POST', 'DELETE'],
          ['/api/pro-check', 'GET', 'POST'],
        ] as const) {
          const options = await fetch(server.url + path, {
            method: 'OPTIONS',
            headers: { Origin: 'https://elsewhere.example', 'Access-Control-Request-Method': 'GET' },
          });
          expect(options.status).toBe(204);
          expect(options.headers.get('access-control-allow-origin')).toBe('*');
          const response = await fetch(server.url + path, { method: wrong, ...(wrong === 'POST' ? { body: '{}' } : {}) });
          expect(response.headers.get('allow')).toBe(`${methods.replace('GET', 'GET, HEAD')}, OPTIONS`);
          await expectError(response, 405, 'METHOD_NOT_ALLOWED');
        }
      });

      it('random bodies and queries get 2xx or 4xx {error, code}, never a 5xx', async () => {
        const { macaroon, preimage } = await buy('trent@example.com');
        const text = fc.oneof(fc.string({ maxLength: 100 }), fc.string({ unit: 'binary', maxLength: 100 }));
        const structured = fc
          .record(
            {
              macaroon: fc.oneof(text, fc.constant(macaroon), fc.nat(), fc.constant(null)),
              preimage: fc.oneof(text, fc.constant(preimage), fc.constant(preimage.toUpperCase()), fc.nat()),
              address: fc.oneof(text, fc.emailAddress(), fc.constant('trent@example.com')),
            },
            { requiredKeys: [] },
          )
          .map((v) => JSON.stringify(v));
        const raw = fc.oneof(
          fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
          text,
        );
        const statuses = new Set<number>();
        const record = async (response: Response) => {
          const body = (await response.json()) as unknown;
          expect(response.status, JSON.stringify(body)).toBeLessThan(500);
          if (response.status >= 400) expectErrorBody(body);
          statuses.add(response.status);
        };
        await fc.assert(
          fc.asyncProperty(fc.oneof(structured, raw), async (body) => {
            await record(
              await devTokenFn.fetchWith(
                new Request('http://localhost/api/dev-token', {
                  method: 'POST',
                  headers: { 'content-type': 'application/json', 'x-real-ip': '192.0.2.20' },
                  body,
                }),
                server.deployment,
              ),
            );
          }),
          { numRuns: 200 },
        );
        await fc.assert(
          fc.asyncProperty(fc.oneof(text, fc.emailAddress()), async (address) => {
            const query = `?address=${encodeURIComponent(address)}`;
            await record(await proCheckFn.fetchWith(new Request(`http://localhost/api/pro-check${query}`), server.deployment));
            await record(
              await devTokenFn.fetchWith(new Request(`http://localhost/api/dev-token${query}`, { headers: { 'x-real-ip': '192.0.2.21' } }), server.deployment),
            );
          }),
          { numRuns: 100 },
        );
        expect(statuses).toContain(200);
        expect(statuses).toContain(400);
      });
    });

    describe('PRO_PRICE_SATS', () => {
      beforeAll(async () => {
        redeploy({ PRO_PRICE_SATS: '1234' });
        return () => server.restore();
      });

      it('sets the price of the offer and of its invoice', async () => {
        const sold = await offer('victor@example.com');
        expect(sold.priceSats).toBe(1234);
        expect(decodeInvoice(sold.invoice).amountMsat).toBe(1_234_000);
        expect(decodeToken(sold.macaroon)!.caveats).toContain('price_msat=1234000');
        await activated({ macaroon: sold.macaroon, preimage: await pay(sold.invoice) });
      });
    });

    describe('faults', () => {
      const failingProvider = unreachableProvider();

      it('Lightning provider down: GET /api/dev-token answers 503 PROVIDER_UNAVAILABLE with Retry-After', async () => {
        redeploy({}, { provider: failingProvider });
        try {
          const response = await fetch(`${server.url}/api/dev-token?address=walter@example.com`);
          expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
          const body = await expectError(response, 503, 'PROVIDER_UNAVAILABLE');
          expect(body.error).not.toContain('connection refused');
        } finally {
          server.restore();
        }
      });

      it('database down: every Pro endpoint answers 503 DATABASE_UNAVAILABLE; a token paid meanwhile activates once it is back', async () => {
        const paid = await buy('walter@example.com');
        redeploy({}, { database: () => Promise.reject(new DatabaseUnavailable('connect ECONNREFUSED 127.0.0.1:5432')) });
        try {
          const responses = [
            await fetch(`${server.url}/api/dev-token?address=walter@example.com`), // no invoice sold that could not be activated
            await activate({ macaroon: paid.macaroon, preimage: paid.preimage }),
            await fetch(`${server.url}/api/pro-check?address=walter@example.com`),
          ];
          for (const response of responses) {
            const retryAfter = response.headers.get('retry-after');
            expect(retryAfter).toMatch(/^[1-9]\d*$/);
            const body = await expectError(response, 503, 'DATABASE_UNAVAILABLE');
            expect(body.retryAfter).toBe(Number(retryAfter));
            expect(body.error).not.toContain('ECONNREFUSED');
          }
          // A bad token is still told so: verification needs no database.
          await expectError(await activate({ macaroon: paid.macaroon, preimage: '0'.repeat(64) }), 403, 'PREIMAGE_MISMATCH');
        } finally {
          server.restore();
        }
        const expiresAt = await activated({ macaroon: paid.macaroon, preimage: paid.preimage });
        expect(await check('walter@example.com')).toEqual({ active: true, expiresAt });
      });

      it('a database that fails inside the activation transaction: 503, nothing half-written, the token still activates later', async () => {
        const paid = await buy('xavier@example.com');
        const real = db;
        let failing = true;
        // The real database, whose second statement in a transaction fails as a dropped connection would.
        const flaky: Database = {
          ...real,
          kind: real.kind,
          query: (text, params) => real.query(text, params),
          exec: (script, tx) => real.exec(script, tx),
          close: () => real.close(),
          transaction: (work) =>
            real.transaction(async (tx) => {
              let statements = 0;
              return work({
                ...tx,
                query: async (text, params) => {
                  if (failing && ++statements === 2) throw new DatabaseUnavailable('Connection terminated unexpectedly');
                  return tx.query(text, params);
                },
              });
            }),
        };
        server.use({ ...server.ctx, database: () => Promise.resolve(flaky) });
        try {
          await expectError(await activate({ macaroon: paid.macaroon, preimage: paid.preimage }), 503, 'DATABASE_UNAVAILABLE');
          expect(await real.query('SELECT payment_hash FROM pro_activations WHERE address = $1', ['xavier@example.com'])).toEqual([]);
          failing = false;
          await activated({ macaroon: paid.macaroon, preimage: paid.preimage });
          expect(await real.query('SELECT payment_hash FROM pro_activations WHERE address = $1', ['xavier@example.com'])).toEqual([
            { payment_hash: decodeToken(paid.macaroon)!.hash },
          ]);
        } finally {
          server.restore();
        }
      });
    });
  });
}
