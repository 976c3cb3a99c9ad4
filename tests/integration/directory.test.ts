// The public directory (POST /api/register, GET /api/apis.json) as clients
// meet it: through the real dev server, on PGlite and on real PostgreSQL, plus
// direct function calls where a property needs many requests.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import apisFn from '../../api/apis.json.js';
import registerFn from '../../api/register.js';
import { DatabaseUnavailable, type Database } from '../../lib/db/index.js';
import type { ServiceContext } from '../../lib/service/context.js';
import { LightningAddress } from 'l402-paywall/lightning';
import { sha256Hex } from '../../lib/service/accounts/auth.js';
import { CATEGORIES, MAX_PRICE_SATS } from '../../lib/service/directory/entry.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn, type Settings, type TestServer } from '../support/server.js';
import { startWellInsideMinute, useRealClock } from '../support/clock-minute.js';

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

async function emptyDirectory(): Promise<void> {
  await db.query('DELETE FROM apis');
}

interface ErrorBody {
  error: string;
  code: string;
  retryAfter?: number;
}

interface Listing {
  version: string;
  count: number;
  apis: { url: string; name: string; description: string | null; price_sats: number; category: string | null; created_at: string }[];
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function entry(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { url: 'https://api.example.com/v1/price', name: 'Price feed', price_sats: 10, lightning_address: 'alice@example.com', ...overrides };
}

/**
 * These tests are about the entries, so they prove control of the address the
 * simple way: a dashboard session of a key every address they use is linked
 * to (tests/integration/directory-ownership.test.ts covers the proofs).
 */
let sessionToken = '';
const SESSION_KEY = '02' + 'ab'.repeat(32);

async function openSession(): Promise<void> {
  sessionToken = randomBytes(32).toString('base64url');
  await db.query(`INSERT INTO auth_sessions (token_hash, pubkey, expires_at) VALUES ($1, $2, now() + interval '1 day')`, [
    sha256Hex(sessionToken),
    SESSION_KEY,
  ]);
}

/** Links the body's address (when it is one) to the session's key, as POST /api/links would after its 1-sat proof. */
async function linkAddressOf(body: unknown): Promise<void> {
  let parsed: unknown = body;
  if (typeof body === 'string') {
    try {
      parsed = JSON.parse(body);
    } catch {
      return;
    }
  }
  const address = LightningAddress.safeParse((parsed as { lightning_address?: unknown } | null)?.lightning_address);
  if (address.success) await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2) ON CONFLICT DO NOTHING', [SESSION_KEY, address.data]);
}

async function register(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  await linkAddressOf(body);
  return fetch(`${server.url}/api/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${sessionToken}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

async function registered(body: unknown): Promise<string> {
  const response = await register(body);
  const answer = (await response.json()) as { ok: boolean; id: string };
  expect(response.status, JSON.stringify(answer)).toBe(200);
  expect(answer).toEqual({ ok: true, id: expect.stringMatching(UUID), proof: 'address' });
  return answer.id;
}

async function list(query = ''): Promise<Listing> {
  const response = await fetch(`${server.url}/api/apis.json${query}`);
  expect(response.status).toBe(200);
  return (await response.json()) as Listing;
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

/** Direct calls skip the HTTP hop, for properties that need many requests. */
const direct = {
  register: async (body: string, ip = '192.0.2.10') => {
    await linkAddressOf(body);
    return registerFn.fetchWith(
      new Request('http://localhost/api/register', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-real-ip': ip, authorization: `Bearer ${sessionToken}` },
        body,
      }),
      server.deployment,
    );
  },
  list: (query = '') => apisFn.fetchWith(new Request(`http://localhost/api/apis.json${query}`), server.deployment),
};

for (const backend of backends) {
  describe.skipIf(backend.skip !== undefined)(`directory on ${backend.name}${backend.skip ? ` [SKIPPED: ${backend.skip}]` : ''}`, () => {
    const running = useDevServerOn(backend, () => ({ REGISTER_RATE_LIMIT_PER_MINUTE: '100000' }));
    beforeAll(async () => {
      server = running;
      db = running.db;
      await openSession();
    });

    it('runs on the backend it names', () => {
      expect(db.kind).toBe(backend.name === 'PGlite' ? 'pglite' : 'pg');
    });

    describe('POST /api/register and GET /api/apis.json', () => {
      beforeAll(emptyDirectory);

      it('registers an entry and lists it with exactly the directory fields, never the Lightning Address', async () => {
        const id = await registered(entry({ description: 'Live BTC/USD', category: 'finance' }));
        const response = await fetch(`${server.url}/api/apis.json`);
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toMatch(/^application\/json/);
        expect(response.headers.get('cache-control')).toBe('public, max-age=60, s-maxage=60');
        expect(response.headers.get('access-control-allow-origin')).toBe('*');
        const text = await response.text();
        expect(text).not.toContain('alice');
        expect(text).not.toContain(id); // ids are for the owner's answer, not the listing
        const listing = JSON.parse(text) as Listing;
        expect(listing).toEqual({
          version: '1',
          count: 1,
          apis: [
            {
              url: 'https://api.example.com/v1/price',
              name: 'Price feed',
              description: 'Live BTC/USD',
              price_sats: 10,
              category: 'finance',
              created_at: expect.any(String),
            },
          ],
        });
        const createdAt = listing.apis[0]!.created_at;
        expect(new Date(createdAt).toISOString()).toBe(createdAt);
        expect(Math.abs(Date.parse(createdAt) - Date.now())).toBeLessThan(60_000);
      });

      it('lists optional fields as null when they were not given', async () => {
        await registered(entry({ url: 'https://bare.example.com/' }));
        const bare = (await list()).apis.find((a) => a.url === 'https://bare.example.com/');
        expect(bare).toMatchObject({ description: null, category: null });
      });

      it('is idempotent: the same url answers the same id and keeps one row', async () => {
        const body = entry({ url: 'https://idem.example.com/api' });
        const first = await registered(body);
        expect(await registered(body)).toBe(first);
        expect(await registered(body)).toBe(first);
        expect((await list()).apis.filter((a) => a.url === 'https://idem.example.com/api')).toHaveLength(1);
      });

      it('updates name, description, price and category for the same owner; updated_at moves only on a change', async () => {
        const url = 'https://update.example.com/api';
        const id = await registered(entry({ url, name: 'Old', description: 'old text', category: 'data', price_sats: 5 }));
        const times = async () => (await db.query<{ created_at: Date; updated_at: Date }>('SELECT created_at, updated_at FROM apis WHERE url = $1', [url]))[0]!;
        const before = await times();
        await new Promise((r) => setTimeout(r, 5));
        // Same content again: nothing changes, not even updated_at.
        expect(await registered(entry({ url, name: 'Old', description: 'old text', category: 'data', price_sats: 5 }))).toBe(id);
        expect((await times()).updated_at.getTime()).toBe(before.updated_at.getTime());
        // The owner, spelled in another case, changes everything but the owner.
        expect(
          await registered(entry({ url, lightning_address: 'ALICE@Example.COM', name: 'New', description: 'new text', category: 'ai', price_sats: 7 })),
        ).toBe(id);
        const after = await times();
        expect(after.created_at.getTime()).toBe(before.created_at.getTime());
        expect(after.updated_at.getTime()).toBeGreaterThan(before.updated_at.getTime());
        const listed = (await list()).apis.find((a) => a.url === url);
        expect(listed).toMatchObject({ name: 'New', description: 'new text', category: 'ai', price_sats: 7 });
        // A registration is the whole entry: leaving out description and category clears them.
        await registered(entry({ url, name: 'New', price_sats: 7 }));
        expect((await list()).apis.find((a) => a.url === url)).toMatchObject({ description: null, category: null });
      });

      it('refuses another Lightning Address for a registered url with 409 URL_OWNED and changes nothing', async () => {
        const url = 'https://owned.example.com/api';
        await registered(entry({ url, name: 'Mine', price_sats: 3 }));
        const body = await expectError(
          await register(entry({ url, name: 'Stolen', price_sats: 1, lightning_address: 'mallory@evil.example' })),
          409,
          'URL_OWNED',
        );
        expect(body.error).not.toContain('alice');
        // Nor with another spelling of the url.
        await expectError(
          await register(entry({ url: 'HTTPS://OWNED.example.com:443/api#x', name: 'Stolen', lightning_address: 'mallory@evil.example' })),
          409,
          'URL_OWNED',
        );
        expect(await db.query('SELECT name, price_sats, lightning_address FROM apis WHERE url = $1', [url])).toEqual([
          { name: 'Mine', price_sats: 3, lightning_address: 'alice@example.com' },
        ]);
      });

      it('normalises the url (WHATWG, no fragment) so trivial spellings are one entry', async () => {
        const canonical = 'https://norm.example.com/v1/price?x=1';
        const spellings = [
          canonical,
          'HTTPS://NORM.EXAMPLE.COM/v1/price?x=1',
          'https://norm.example.com:443/v1/price?x=1',
          'https://norm.example.com/v1/./old/../price?x=1',
          'https://norm.example.com/v1/price?x=1#section',
          '  https://norm.example.com/v1/price?x=1\t',
        ];
        const ids = new Set<string>();
        for (const url of spellings) ids.add(await registered(entry({ url })));
        expect(ids.size).toBe(1);
        expect((await list()).apis.filter((a) => a.url.includes('norm.example.com')).map((a) => a.url)).toEqual([canonical]);
        // Different resources stay different: scheme, path case, trailing slash, query.
        for (const other of [
          'http://norm.example.com/v1/price?x=1',
          'https://norm.example.com/V1/price?x=1',
          'https://norm.example.com/v1/price/?x=1',
          'https://norm.example.com/v1/price?x=2',
        ]) {
          ids.add(await registered(entry({ url: other })));
        }
        expect(ids.size).toBe(5);
        // International domain names are listed in their ASCII form.
        await registered(entry({ url: 'https://bücher.example/api' }));
        expect((await list()).apis.map((a) => a.url)).toContain('https://xn--bcher-kva.example/api');
      });

      it('lists newest first and filters by ?category=', async () => {
        await emptyDirectory();
        for (const [i, category] of ['data', 'ai', 'data', 'weather'].entries()) {
          await registered(entry({ url: `https://order.example.com/${i}`, name: `n${i}`, category }));
          await new Promise((r) => setTimeout(r, 3)); // distinct created_at
        }
        await registered(entry({ url: 'https://order.example.com/none', name: 'uncategorised' }));
        const all = await list();
        expect(all.count).toBe(5);
        expect(all.apis.map((a) => a.name)).toEqual(['uncategorised', 'n3', 'n2', 'n1', 'n0']);
        const times = all.apis.map((a) => Date.parse(a.created_at));
        expect([...times].sort((a, b) => b - a)).toEqual(times);
        const data = await list('?category=data');
        expect(data).toMatchObject({ version: '1', count: 2 });
        expect(data.apis.map((a) => a.name)).toEqual(['n2', 'n0']);
        expect((await list('?category=storage')).apis).toEqual([]);
        // Re-registering does not move an entry to the top.
        await registered(entry({ url: 'https://order.example.com/0', name: 'n0 renamed', category: 'data' }));
        expect((await list()).apis.at(-1)!.name).toBe('n0 renamed');
      });

      it.each(['?category=', '?category=unknown', '?category=Data', '?category=data%00', '?category=data&category=x'])(
        'answers 400 for GET /api/apis.json%s',
        async (query) => {
          const response = await fetch(`${server.url}/api/apis.json${query}`);
          const body = await expectError(response, 400, 'INVALID_REQUEST');
          expect(body.error).toContain('category must be one of data, ai, finance, weather, compute, storage, other');
          expect(response.headers.get('cache-control') ?? '').not.toContain('public');
        },
      );

      it('ignores query parameters it does not know', async () => {
        expect((await list('?page=2&category=data')).count).toBe(2);
      });

      it('answers OPTIONS with CORS and a wrong method with 405', async () => {
        for (const [path, method, wrong] of [
          ['/api/register', 'POST', 'GET'],
          ['/api/apis.json', 'GET', 'POST'],
        ] as const) {
          const options = await fetch(server.url + path, {
            method: 'OPTIONS',
            headers: { Origin: 'https://elsewhere.example', 'Access-Control-Request-Method': method },
          });
          expect(options.status).toBe(204);
          expect(options.headers.get('access-control-allow-origin')).toBe('*');
          expect(options.headers.get('access-control-allow-methods')).toContain(method);
          const response = await fetch(server.url + path, { method: wrong, ...(wrong === 'POST' ? { body: '{}' } : {}) });
          expect(response.headers.get('allow')).toBe(method === 'GET' ? 'GET, HEAD, OPTIONS' : `${method}, OPTIONS`);
          await expectError(response, 405, 'METHOD_NOT_ALLOWED');
        }
      });
    });

    describe('concurrent registrations', () => {
      beforeAll(emptyDirectory);

      it('200 concurrent registrations of one url create one row, and all 200 answers carry its id', async () => {
        const url = 'https://concurrent.example.com/api';
        const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => register(entry({ url, name: `racer ${i}`, price_sats: i + 1 }))));
        const bodies = (await Promise.all(responses.map((r) => r.json()))) as { ok: boolean; id: string }[];
        expect(responses.map((r) => r.status)).toEqual(Array(200).fill(200));
        const ids = new Set(bodies.map((b) => b.id));
        expect(ids.size).toBe(1);
        expect(await db.query('SELECT id FROM apis WHERE url = $1', [url])).toEqual([{ id: [...ids][0] }]);
        expect((await list()).count).toBe(1);
      });

      it('two owners racing for one url: exactly one owns it, the other gets only 409s', async () => {
        const url = 'https://contested.example.com/api';
        const owners = ['alice@example.com', 'bob@example.org'];
        const responses = await Promise.all(Array.from({ length: 200 }, (_, i) => register(entry({ url, lightning_address: owners[i % 2] }))));
        const bodies = (await Promise.all(responses.map((r) => r.json()))) as { id?: string; code?: string }[];
        const rows = await db.query<{ id: string; lightning_address: string }>('SELECT id, lightning_address FROM apis WHERE url = $1', [url]);
        expect(rows).toHaveLength(1);
        const winner = owners.indexOf(rows[0]!.lightning_address);
        responses.forEach((response, i) => {
          if (i % 2 === winner) {
            expect(response.status).toBe(200);
            expect(bodies[i]!.id).toBe(rows[0]!.id);
          } else {
            expect(response.status).toBe(409);
            expect(bodies[i]!.code).toBe('URL_OWNED');
          }
        });
      });
    });

    describe('hostile input', () => {
      beforeAll(emptyDirectory);

      it('stores SQL-looking text and unicode exactly and reads it back from apis.json', async () => {
        const samples = [
          { name: "Robert'); DROP TABLE apis;--", description: "'; DELETE FROM apis WHERE '1'='1" },
          { name: '名前 😀', description: 'Ünïcödé: 日本語, עברית, العربية, emoji 👩‍💻🏳️‍🌈, combining é, zero-width\u200bspace' },
          { name: 'quotes " \' ` and \\ backslashes $1 %s', description: 'line one\nline two\r\n\ttabbed — “smart” quotes, NBSP\u00a0inside' },
          { name: '😀'.repeat(100), description: '字'.repeat(500) }, // at the limits, counted in characters
        ];
        for (const [i, sample] of samples.entries()) {
          await registered(entry({ url: `https://roundtrip.example.com/${i}?q=';DROP TABLE apis;--`, ...sample }));
        }
        const listing = await list();
        for (const [i, sample] of samples.entries()) {
          const found = listing.apis.find((a) => a.url === `https://roundtrip.example.com/${i}?q=%27;DROP%20TABLE%20apis;--`);
          expect(found).toMatchObject(sample);
        }
        expect(await db.query("SELECT to_regclass('public.apis') IS NOT NULL AS ok")).toEqual([{ ok: true }]);
      });

      it('trims surrounding whitespace of names and descriptions; a blank description is none', async () => {
        await registered(entry({ url: 'https://trim.example.com/', name: '  padded name \n', description: '   ' }));
        expect((await list()).apis.find((a) => a.url === 'https://trim.example.com/')).toMatchObject({ name: 'padded name', description: null });
      });

      const long = (n: number) => 'x'.repeat(n);
      const invalid: [string, unknown, RegExp][] = [
        ['url missing', { ...entry(), url: undefined }, /url is required/],
        ['url a number', entry({ url: 42 }), /url must be a string/],
        ['url null', entry({ url: null }), /url/],
        ['url relative', entry({ url: '/v1/price' }), /url must be an absolute http\(s\) URL/],
        ['url without scheme', entry({ url: 'api.example.com/v1' }), /absolute/],
        ['url ftp', entry({ url: 'ftp://files.example.com/' }), /http or https/],
        ['url javascript:', entry({ url: 'javascript:alert(1)' }), /http or https/],
        ['url data:', entry({ url: 'data:text/plain,hi' }), /http or https/],
        ['url with credentials', entry({ url: 'https://user:secret@example.com/' }), /user name or password/],
        ['url too long', entry({ url: `https://example.com/${long(2048)}` }), /at most 2048/],
        ['url too long once normalised', entry({ url: `https://example.com/${'é'.repeat(1000)}` }), /once normalised/],
        ['url with a bad host', entry({ url: 'https://exa mple.com/' }), /absolute/],
        ['url with a lone surrogate', entry({ url: 'https://example.com/\ud800' }), /lone surrogate/],
        ['name missing', { ...entry(), name: undefined }, /name is required/],
        ['name empty', entry({ name: '' }), /name must not be empty/],
        ['name blank', entry({ name: ' \t ' }), /name must not be empty/],
        ['name 101 characters', entry({ name: long(101) }), /name must be at most 100 characters/],
        ['name 101 emoji', entry({ name: '😀'.repeat(101) }), /name must be at most 100 characters/],
        ['name a number', entry({ name: 7 }), /name must be a string/],
        ['name an array', entry({ name: ['a'] }), /name must be a string/],
        ['name with NUL', entry({ name: 'a\u0000b' }), /control characters/],
        ['name with a newline', entry({ name: 'a\nb' }), /control characters/],
        ['name with a lone surrogate', entry({ name: 'a\udc00b' }), /lone surrogate/],
        ['price_sats missing', { ...entry(), price_sats: undefined }, /price_sats is required/],
        ['price_sats 0', entry({ price_sats: 0 }), /price_sats must be at least 1/],
        ['price_sats negative', entry({ price_sats: -5 }), /at least 1/],
        ['price_sats fractional', entry({ price_sats: 1.5 }), /whole number/],
        ['price_sats a string', entry({ price_sats: '10' }), /price_sats must be a number/],
        ['price_sats null', entry({ price_sats: null }), /price_sats must be a number/],
        ['price_sats too large', entry({ price_sats: MAX_PRICE_SATS + 1 }), /at most 100000000/],
        ['price_sats 1e300', entry({ price_sats: 1e300 }), /price_sats/],
        ['lightning_address missing', { ...entry(), lightning_address: undefined }, /lightning_address is required/],
        ['lightning_address not an address', entry({ lightning_address: 'alice' }), /Lightning Address/],
        ['lightning_address with SQL', entry({ lightning_address: "a'--@example.com" }), /Lightning Address/],
        ['lightning_address a number', entry({ lightning_address: 5 }), /lightning_address must be a string/],
        ['description 501 characters', entry({ description: long(501) }), /description must be at most 500 characters/],
        ['description a number', entry({ description: 5 }), /description must be a string/],
        ['description with NUL', entry({ description: 'a\u0000b' }), /control characters/],
        ['category unknown', entry({ category: 'crypto' }), /category must be one of data, ai, finance, weather, compute, storage, other/],
        ['category wrong case', entry({ category: 'Data' }), /category must be one of/],
        ['category empty', entry({ category: '' }), /category must be one of/],
        ['category a number', entry({ category: 1 }), /category must be one of/],
        ['an unknown field', entry({ categroy: 'data' }), /categroy/],
        ['an array', [entry()], /object/],
        ['a string', 'hello', /object/],
        ['null', null, /object/],
      ];

      it.each(invalid)('answers 400 INVALID_REQUEST for %s', async (_, body, message) => {
        const response = await register(body === undefined ? 'undefined' : JSON.stringify(body));
        const answer = await expectError(response, 400, 'INVALID_REQUEST');
        expect(answer.error).toMatch(message);
      });

      it.each([
        ['malformed JSON', '{"url": "https://example.com",', 'INVALID_JSON'],
        ['an empty body', '', 'INVALID_JSON'],
        ['JSON with a trailing comma', '{"name": "x",}', 'INVALID_JSON'],
      ])('answers 400 %s', async (_, body, code) => {
        await expectError(await register(body), 400, code);
      });

      it('answers 400 for a body that is not UTF-8', async () => {
        const response = await fetch(`${server.url}/api/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
        });
        await expectError(response, 400, 'INVALID_JSON');
      });

      it('answers 413 BODY_TOO_LARGE for an oversized body, declared or streamed', async () => {
        await expectError(await register(entry({ description: 'x'.repeat(17 * 1024) })), 413, 'BODY_TOO_LARGE');
        const chunk = new TextEncoder().encode(' '.repeat(4096));
        let sent = 0;
        const stream = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent++ >= 6) controller.close();
            else controller.enqueue(chunk);
          },
        });
        const streamed = await fetch(`${server.url}/api/register`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: stream,
          duplex: 'half',
        } as RequestInit);
        await expectError(streamed, 413, 'BODY_TOO_LARGE');
      });

      it('has written nothing for any refused request', async () => {
        const [row] = await db.query<{ n: number }>(
          "SELECT count(*)::int AS n FROM apis WHERE url NOT LIKE 'https://roundtrip.example.com/%' AND url <> 'https://trim.example.com/'",
        );
        expect(row!.n).toBe(0);
      });
    });

    describe('property-based: register bodies', () => {
      beforeAll(emptyDirectory);

      /** 200 or 4xx with {error, code}; never a 5xx. */
      async function expectHandled(response: Response): Promise<{ status: number; body: unknown }> {
        const body = (await response.json()) as unknown;
        expect(response.status, JSON.stringify(body)).toBeLessThan(500);
        if (response.status !== 200) {
          expect(response.status).toBeGreaterThanOrEqual(400);
          expectErrorBody(body);
        }
        return { status: response.status, body };
      }

      // Any text a client could send: all of Unicode, controls, lone surrogates, SQL.
      const anyText = fc.oneof(
        fc.string({ maxLength: 120 }),
        fc.string({ unit: 'binary', maxLength: 120 }),
        fc.string({ unit: 'grapheme', maxLength: 60 }),
        fc.string({ unit: fc.constantFrom("'", '"', ';', '-', '\\', '\u0000', '\ud800', '\udc00', '😀', ' ', '\n', '%', '$1'), maxLength: 40 }),
        fc.constantFrom("Robert'); DROP TABLE apis;--", '1 OR 1=1', '$$; SELECT pg_sleep(10); $$', '\u0000', ''),
      );
      const urls = fc.oneof(
        { weight: 4, arbitrary: fc.webUrl({ withQueryParameters: true, withFragments: true }) },
        { weight: 1, arbitrary: fc.webUrl().map((u) => u.toUpperCase()) },
        { weight: 1, arbitrary: anyText },
      );
      // Mostly the right type, so that many whole bodies are valid; sometimes anything.
      const field = <T>(good: fc.Arbitrary<T>) =>
        fc.oneof(
          { weight: 12, arbitrary: good },
          {
            weight: 1,
            arbitrary: fc.oneof(fc.integer(), fc.constant(null), fc.boolean(), fc.array(fc.nat(), { maxLength: 2 }), anyText as fc.Arbitrary<unknown>),
          },
        );
      const registration = fc.record(
        {
          url: field(urls),
          name: field(anyText),
          price_sats: field(fc.oneof({ weight: 8, arbitrary: fc.integer({ min: -2, max: 1_000_000 }) }, fc.double(), fc.constant(MAX_PRICE_SATS + 1))),
          lightning_address: field(
            fc.oneof(fc.emailAddress(), { weight: 4, arbitrary: fc.constantFrom('alice@example.com', ' ALICE@example.com', 'bob@example.org') }),
          ),
          description: field(anyText),
          category: field(fc.oneof(fc.constantFrom(...CATEGORIES), anyText)),
        },
        { requiredKeys: ['url', 'name', 'price_sats', 'lightning_address'] },
      );

      it('every generated registration gets 200 or 4xx {error, code}, and what was accepted reads back exactly', async () => {
        // url -> the entry as the directory must list it (last accepted write of its owner wins).
        const expected = new Map<string, { owner: string; name: string; description: string | null; price_sats: number; category: string | null }>();
        const statuses = new Map<number, number>();
        await fc.assert(
          fc.asyncProperty(registration, async (body) => {
            const { status, body: answer } = await expectHandled(await direct.register(JSON.stringify(body)));
            statuses.set(status, (statuses.get(status) ?? 0) + 1);
            if (status !== 200) {
              expect([400, 409]).toContain(status);
              return;
            }
            // Accepted: every field was of the documented shape.
            const url = new URL((body.url as string).trim());
            url.hash = '';
            const owner = (body.lightning_address as string).trim().toLowerCase();
            const previous = expected.get(url.href);
            if (previous) expect(previous.owner).toBe(owner);
            const description = typeof body.description === 'string' ? body.description.trim() : null;
            expected.set(url.href, {
              owner,
              name: (body.name as string).trim(),
              description: description || null,
              price_sats: body.price_sats as number,
              category: (body.category as string | undefined) ?? null,
            });
            expect(answer).toEqual({ ok: true, id: expect.stringMatching(UUID), proof: 'address' });
          }),
          { numRuns: 400 },
        );
        // The generators reach the interesting outcomes.
        expect(statuses.get(200) ?? 0).toBeGreaterThan(20);
        expect(statuses.get(400) ?? 0).toBeGreaterThan(20);

        const response = await direct.list();
        expect(response.status).toBe(200);
        const listing = (await response.json()) as Listing;
        expect(listing.count).toBe(expected.size);
        for (const api of listing.apis) {
          const want = expected.get(api.url);
          expect(want, api.url).toBeDefined();
          const { owner: _, ...listed } = want!;
          expect(api).toEqual({ url: api.url, ...listed, created_at: expect.any(String) });
        }
      });

      it('random raw bodies get 200 or 4xx {error, code}', async () => {
        const raw = fc.oneof(
          fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
          fc.string({ maxLength: 200 }),
          fc.string({ unit: 'binary', maxLength: 200 }),
        );
        await fc.assert(
          fc.asyncProperty(raw, async (body) => {
            await expectHandled(await direct.register(body));
          }),
          { numRuns: 200 },
        );
      });

      it('random ?category= values get 200 or 400, never a 5xx', async () => {
        await fc.assert(
          fc.asyncProperty(fc.oneof(fc.constantFrom(...CATEGORIES), fc.string({ unit: 'binary', maxLength: 30 })), async (category) => {
            const { status } = await expectHandled(await direct.list(`?category=${encodeURIComponent(category)}`));
            expect(status).toBe((CATEGORIES as readonly string[]).includes(category) ? 200 : 400);
          }),
          { numRuns: 100 },
        );
      });
    });

    describe('POST /api/register rate limit', () => {
      beforeAll(async () => {
        redeploy({ REGISTER_RATE_LIMIT_PER_MINUTE: '5' });
        await emptyDirectory();
        // The limiter's window is the clock minute; start well inside one so the count is exact.
        startWellInsideMinute(50_000);
        return async () => {
          useRealClock();
          server.restore();
        };
      });

      it('answers 429 RATE_LIMITED with Retry-After on the 6th request per IP, valid or not', async () => {
        for (let i = 0; i < 4; i++) await registered(entry({ url: `https://limited.example.com/${i}` }));
        await expectError(await register('not json'), 400, 'INVALID_JSON'); // counts too
        const limited = await register(entry({ url: 'https://limited.example.com/5' }));
        const retryAfter = Number(limited.headers.get('retry-after'));
        const body = await expectError(limited, 429, 'RATE_LIMITED');
        expect(retryAfter).toBeGreaterThan(0);
        expect(retryAfter).toBeLessThanOrEqual(60);
        expect(body.retryAfter).toBe(retryAfter);
        // Another client is not affected; the server's client cannot pick its own bucket.
        expect((await direct.register(JSON.stringify(entry({ url: 'https://limited.example.com/other' })), '203.0.113.9')).status).toBe(200);
        await expectError(
          await register(entry({ url: 'https://limited.example.com/6' }), { 'x-forwarded-for': '198.51.100.1', 'x-real-ip': '198.51.100.2' }),
          429,
          'RATE_LIMITED',
        );
        // Reading the directory is not limited.
        expect((await list()).count).toBe(5);
      });
    });

    describe('database down', () => {
      const down = () => Promise.reject(new DatabaseUnavailable('connect ECONNREFUSED 127.0.0.1:5432'));
      const failingQueries: Database = {
        kind: 'pg',
        query: () => Promise.reject(new DatabaseUnavailable('Connection terminated unexpectedly')),
        transaction: () => Promise.reject(new DatabaseUnavailable('Connection terminated unexpectedly')),
        exec: () => Promise.reject(new DatabaseUnavailable('Connection terminated unexpectedly')),
        close: () => Promise.resolve(),
      };

      it.each([
        ['cannot be opened', down],
        ['fails its queries', () => Promise.resolve(failingQueries)],
      ])('answers 503 DATABASE_UNAVAILABLE with Retry-After when the database %s', async (_, database) => {
        redeploy({}, { database });
        try {
          for (const response of [
            await register(entry()),
            await fetch(`${server.url}/api/apis.json`),
            await fetch(`${server.url}/api/apis.json?category=ai`),
          ]) {
            expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
            expect(response.headers.get('cache-control') ?? '').not.toContain('public');
            const body = await expectError(response, 503, 'DATABASE_UNAVAILABLE');
            expect(body.retryAfter).toBe(Number(response.headers.get('retry-after')));
            expect(body.error).not.toMatch(/ECONNREFUSED|terminated|5432/);
          }
          // Bad input is still refused as such: validation needs no database.
          await expectError(await register(entry({ price_sats: 0 })), 400, 'INVALID_REQUEST');
          await expectError(await fetch(`${server.url}/api/apis.json?category=nope`), 400, 'INVALID_REQUEST');
        } finally {
          server.restore();
        }
      });

      it('serves again once the database is back', async () => {
        await registered(entry({ url: 'https://back.example.com/' }));
        expect((await list()).apis.map((a) => a.url)).toContain('https://back.example.com/');
      });
    });
  });
}
