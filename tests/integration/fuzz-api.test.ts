// Every api/ function fuzzed in process (its fetch handler, as Vercel calls it,
// run with the test's own deployment: fetchWith, lib/service/deployment.ts),
// with fast-check and a fixed seed printed at the start: methods, query
// strings, headers (Authorization in every scheme, Payment credentials random
// and mutated among them, signatures, content types,
// client addresses) and bodies, random and near-valid. At least 100,000
// requests per run in all. Every answer is < 500; every 4xx is JSON
// {error, code}; every 429/503 would carry Retry-After. A failure prints the
// seed and the path to replay it:
//   FUZZ_SEED=<seed> npx vitest run tests/integration/fuzz-api.test.ts
// The service runs on the in-memory store, the embedded dev node and PGlite in
// memory, with every secret configured so requests reach past the gates, and
// an honest owner's Lightning Address server on loopback: nothing the service
// depends on is down, so any 5xx is a bug. No request reaches beyond this
// machine: the only owner addresses that can be paid are that server's.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSession } from '../../lib/service/accounts/auth.js';
import { loadConfig } from '../../lib/config.js';
import { createDeployment, type Deployment } from '../../lib/service/deployment.js';
import { DEV_WEBHOOK_SIGNATURE_HEADER } from 'l402-paywall/backends';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { formatCredential, parsePaymentChallenges } from '../../packages/l402-paywall/src/mpp/index.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_125);
// Functions that do real work per request (QR codes, signatures, queries) get fewer runs; 104,160 in all.
const RUNS_PER_FUNCTION = Number(process.env.FUZZ_RUNS ?? 6_200);
const HEAVY = 0.4;
const MIN_TOTAL = 100_000;
const SECRETS = {
  L402_SECRET: 'fuzz-secret-0123456789abcdef0123456789abcdef0123',
  CRON_SECRET: 'fuzz-cron-secret-0123456789abcdef',
  SPLIT_SECRET: 'fuzz-split-secret-0123456789abcdef',
};
const API_DIR = fileURLToPath(new URL('../../api/', import.meta.url));

type Fetchable = { fetch(request: Request): Promise<Response>; fetchWith?(request: Request, deployment: Deployment): Promise<Response> };

/** A function of the service runs with the test's deployment; one that needs none (openapi.json) as Vercel calls it. */
const call = (fn: Fetchable, request: Request, deployment: Deployment) => (fn.fetchWith ? fn.fetchWith(request, deployment) : fn.fetch(request));
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'OPTIONS' | 'HEAD';

interface Target {
  /** The api/ file, relative to api/. */
  file: string;
  path: string;
  methods: Method[];
  query?: fc.Arbitrary<Record<string, string>>;
  headers?: fc.Arbitrary<Record<string, string>>;
  body?: fc.Arbitrary<string>;
  /** Share of RUNS_PER_FUNCTION (default 1). */
  weight?: number;
  /** Query every request starts from (what routing adds on Vercel, e.g. a [name] segment); the generated one may override it. */
  baseQuery?: Record<string, string>;
}

// ---------------------------------------------------------------------------
// Generators

const hexChars = fc.constantFrom(...'0123456789abcdefABCDEF');
const hex = (n: number) => fc.string({ unit: hexChars, minLength: n, maxLength: n });
// What a Headers value may hold: no CR, LF or NUL, Latin-1.
const headerText = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({ min: 0x80, max: 0xff })).map((c) => String.fromCharCode(c)),
  maxLength: 120,
});
const anyText = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.constantFrom('', ' ', '\u0000', '%', '../', 'null', '0', '-1', '1e308', 'NaN'),
);
const numberish = fc.oneof(
  fc.integer(),
  fc.integer({ min: -5, max: 200_000 }),
  fc.double(),
  fc.constantFrom(0, -1, 1, 1.5, Number.MAX_SAFE_INTEGER, 1e21),
  fc.string({ maxLength: 8 }),
  fc.constant(null),
  fc.boolean(),
);
const methodsAll: Method[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];

let loopbackOwner = 'set in beforeAll';
let validSession = 'not-yet';
let realMacaroon = 'not-yet';
let realInvoice = 'lnbcrt1';
/** A paid Payment credential for the demo's challenge (docs/mpp.md), and its JSON. */
let realPayment = 'Payment not-yet';
let realPaymentJson: Record<string, unknown> = {};

const owner = () => fc.constant('').map(() => loopbackOwner);
const addresses = () =>
  fc.oneof(
    anyText,
    fc.emailAddress(),
    owner(),
    owner().map((a) => a.toUpperCase()),
    fc.constantFrom('a@b', '@x.com', 'x@', 'alice@127.0.0.1', 'alice@[::1]', 'alice@localhost'),
  );
/** Addresses safe to pay: the owner server on loopback, or nothing valid at all. */
const payableAddresses = () => fc.oneof(owner(), fc.string({ maxLength: 30 }), fc.constantFrom('x@', '@y', 'a b@c.d'));
const json = (record: fc.Arbitrary<Record<string, unknown>>) => record.map((v) => JSON.stringify(v));
const rawBody = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 200 }),
  fc.string({ unit: 'binary', maxLength: 100 }),
  fc.constantFrom('', '{', '[]', 'null', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{}}}', '\uFEFF{}', '{"a":1}'.repeat(3000)),
);
const mutate = (text: () => string) =>
  fc.tuple(fc.nat(), fc.constantFrom('delete', 'replace', 'insert'), fc.constantFrom(...'aZ09-_+/=:. ')).map(([i, op, ch]) => {
    const value = text();
    const at = i % (value.length + 1);
    if (op === 'delete') return value.slice(0, at) + value.slice(at + 1);
    if (op === 'replace') return value.slice(0, at) + ch + value.slice(at + 1);
    return value.slice(0, at) + ch + value.slice(at);
  });
/** Payment credentials: random text, random JSON, the real one mutated as text, and as JSON with a field replaced or dropped. */
const paymentAuthorization = () =>
  fc.oneof(
    headerText.map((t) => `Payment ${t}`),
    fc.jsonValue({ maxDepth: 3 }).map((v) => `Payment ${Buffer.from(JSON.stringify(v)).toString('base64url')}`),
    fc.constant('').map(() => realPayment),
    mutate(() => realPayment),
    fc.constant('').map(() => `${realPayment}, ${realPayment}`),
    fc
      .tuple(
        fc.constantFrom('challenge', 'payload', 'source', 'id', 'realm', 'method', 'intent', 'request', 'expires', 'opaque', 'digest', 'preimage'),
        fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined)),
      )
      .map(([field, value]) => {
        const credential = structuredClone(realPaymentJson) as { challenge: Record<string, unknown>; payload: Record<string, unknown> } & Record<
          string,
          unknown
        >;
        const holder = field in credential ? credential : field === 'preimage' ? credential.payload : credential.challenge;
        if (value === undefined) delete holder[field];
        else holder[field] = value;
        return `Payment ${Buffer.from(JSON.stringify(credential)).toString('base64url')}`;
      }),
  );
const authorization = () =>
  fc.oneof(
    paymentAuthorization(),
    headerText,
    fc
      .tuple(fc.constantFrom('L402', 'LSAT', 'l402', 'Bearer', 'bearer', 'Basic', ''), fc.constantFrom(' ', '  ', '\t', ''), headerText)
      .map(([s, g, t]) => `${s}${g}${t}`),
    fc
      .tuple(
        mutate(() => realMacaroon),
        hex(64),
      )
      .map(([m, p]) => `L402 ${m}:${p}`),
    hex(64).map((p) => `L402 ${realMacaroon}:${p}`),
    fc.constantFrom(`Bearer ${SECRETS.CRON_SECRET}`, `Bearer ${SECRETS.CRON_SECRET}x`, `bearer ${SECRETS.CRON_SECRET}`),
    fc.constant('session').map(() => `Bearer ${validSession}`),
    mutate(() => `Bearer ${validSession}`),
  );
const commonHeaders = fc.record(
  {
    authorization: authorization(),
    'content-type': fc.oneof(
      fc.constantFrom(
        'application/json',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
        'application/json; charset=latin1',
        '',
      ),
      headerText,
    ),
    'x-real-ip': fc.constantFrom('192.0.2.1', '2001:db8::1', 'unknown', '', '127.0.0.1'),
    'x-forwarded-for': headerText,
    accept: fc.constantFrom('application/json', 'text/csv', '*/*', 'text/html'),
    'x-split-secret': fc.oneof(fc.constant(SECRETS.SPLIT_SECRET), headerText),
    [DEV_WEBHOOK_SIGNATURE_HEADER]: fc.oneof(
      headerText,
      fc.tuple(fc.nat(), hex(64)).map(([t, h]) => `t=${t},v1=${h.toLowerCase()}`),
      fc.constant(`t=${Date.now()},v1=${'0'.repeat(64)}`),
    ),
  },
  { requiredKeys: [] },
);
const randomQuery = fc.dictionary(
  fc.oneof(
    anyText,
    fc.constantFrom('k1', 'sig', 'key', 'pollToken', 'action', 'amount', 'comment', 'address', 'hash', 'category', 'format', 'all', 'username', 'tag'),
  ),
  anyText,
  { maxKeys: 4 },
);

// ---------------------------------------------------------------------------
// One target per api/ file

const targets: Target[] = [
  {
    file: 'apis.json.ts',
    weight: HEAVY,
    path: '/api/apis.json',
    methods: ['GET'],
    query: fc.record(
      { category: fc.oneof(fc.constantFrom('data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other', 'DATA', ''), anyText) },
      { requiredKeys: [] },
    ),
  },
  {
    file: 'delete-data.ts',
    weight: HEAVY,
    path: '/api/delete-data',
    methods: ['GET', 'POST'],
    query: fc.record(
      { k1: fc.oneof(hex(64), anyText), pollToken: fc.oneof(fc.string({ unit: fc.constantFrom(...'abcXYZ019_-'), minLength: 43, maxLength: 43 }), anyText) },
      { requiredKeys: [] },
    ),
  },
  {
    file: 'dev-token.ts',
    path: '/api/dev-token',
    methods: ['GET', 'POST'],
    query: fc.record({ address: addresses() }, { requiredKeys: [] }),
    body: json(
      fc.record(
        {
          macaroon: fc.oneof(
            anyText,
            mutate(() => realMacaroon),
            fc.constant('').map(() => realMacaroon),
          ),
          preimage: fc.oneof(hex(64), anyText),
          address: addresses(),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { file: 'health.ts', weight: HEAVY, path: '/api/health', methods: ['GET'] },
  {
    file: 'invoice.ts',
    weight: HEAVY,
    path: '/api/invoice',
    methods: ['POST'],
    body: json(
      fc.record(
        {
          amountSats: fc.oneof(numberish, fc.integer({ min: 1, max: 2_000_000 })),
          ownerAddress: addresses(),
          memo: fc.oneof(fc.string({ maxLength: 250 }), numberish),
          endpoint: fc.oneof(fc.string({ maxLength: 100 }), numberish),
          extra: anyText,
        },
        { requiredKeys: [] },
      ),
    ),
  },
  {
    file: 'links.ts',
    weight: HEAVY,
    path: '/api/links',
    methods: ['GET', 'POST', 'DELETE'],
    body: json(
      fc.record(
        { address: payableAddresses(), code: fc.oneof(anyText, fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: 6, maxLength: 6 })) },
        { requiredKeys: [] },
      ),
    ),
  },
  {
    file: 'lnurl-auth.ts',
    weight: HEAVY,
    path: '/api/lnurl-auth',
    methods: ['GET'],
    query: fc.record(
      {
        k1: fc.oneof(hex(64), anyText),
        sig: fc.oneof(hex(140), hex(142), hex(128), anyText),
        key: fc.oneof(
          hex(66),
          fc.constant('').map(() => bytesToHex(secp256k1.getPublicKey(randomBytes(32), true))),
          anyText,
        ),
        pollToken: fc.oneof(fc.string({ unit: fc.constantFrom(...'abcXYZ019_-'), minLength: 43, maxLength: 43 }), anyText),
        tag: fc.constantFrom('login', 'x'),
        action: fc.constantFrom('login', 'auth', 'link', 'register', 'x'),
      },
      { requiredKeys: [] },
    ),
  },
  { file: 'pro-check.ts', path: '/api/pro-check', methods: ['GET'], query: fc.record({ address: addresses() }, { requiredKeys: [] }) },
  {
    file: 'provider-webhook.ts',
    path: '/api/provider-webhook',
    methods: ['POST'],
    body: fc.oneof(
      json(
        fc.record(
          { type: fc.constantFrom('payment_received', 'x'), paymentHash: fc.oneof(hex(64), anyText), amountMsat: numberish, timestamp: numberish },
          { requiredKeys: [] },
        ),
      ),
      fc.string({ maxLength: 70_000 }).filter((s) => s.length > 65_536 || s.length < 50),
    ),
  },
  {
    file: 'register.ts',
    path: '/api/register',
    methods: ['POST'],
    body: json(
      fc.record(
        {
          url: fc.oneof(fc.webUrl(), anyText, fc.constantFrom('javascript:alert(1)', 'ftp://x', 'http://127.0.0.1/x', 'https://example.com/#frag')),
          name: fc.oneof(fc.string({ maxLength: 110 }), numberish),
          price_sats: numberish,
          lightning_address: addresses(),
          description: fc.oneof(fc.string({ maxLength: 510 }), numberish),
          category: fc.oneof(fc.constantFrom('data', 'ai', 'finance', 'other', 'DATA'), anyText),
          unknown: anyText,
        },
        { requiredKeys: [] },
      ),
    ),
  },
  {
    file: 'session.ts',
    path: '/api/session',
    methods: ['GET', 'DELETE'],
    query: fc.record({ all: fc.constantFrom('1', '0', 'true', '', 'yes') }, { requiredKeys: [] }),
  },
  {
    file: 'split.ts',
    path: '/api/split',
    methods: ['POST'],
    body: json(
      fc.record(
        {
          amountSats: fc.oneof(numberish, fc.integer({ min: 1, max: 2_000 })),
          ownerAddress: payableAddresses(),
          paymentHash: fc.oneof(hex(64), anyText),
          idempotencyKey: fc.oneof(anyText, fc.string({ maxLength: 210 })),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  {
    file: 'stats.ts',
    path: '/api/stats',
    methods: ['GET'],
    query: fc.record({ format: fc.oneof(fc.constantFrom('csv', 'json', 'CSV'), anyText) }, { requiredKeys: [] }),
  },
  {
    file: 'verify.ts',
    path: '/api/verify',
    methods: ['POST'],
    body: json(
      fc.record(
        {
          token: fc.oneof(
            anyText,
            fc
              .tuple(
                mutate(() => realMacaroon),
                hex(64),
              )
              .map(([m, p]) => `${m}:${p}`),
            numberish,
            paymentAuthorization(),
          ),
          consume: fc.oneof(fc.boolean(), anyText, numberish),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  { file: 'cron/flush-payments.ts', path: '/api/cron/flush-payments', methods: ['GET'] },
  { file: 'cron/payouts.ts', path: '/api/cron/payouts', methods: ['GET'] },
  { file: 'demo/btc-price.ts', weight: HEAVY, path: '/api/demo/btc-price', methods: ['GET'] },
  { file: 'demo/index.ts', path: '/api/demo', methods: ['GET'] },
  {
    file: 'demo/stream.ts',
    weight: HEAVY,
    path: '/api/demo/stream',
    methods: ['GET'],
    query: fc.record({ chunks: fc.oneof(fc.integer({ min: -5, max: 300 }).map(String), anyText) }, { requiredKeys: [] }),
  },
  { file: 'demo/preimage.ts', path: '/api/demo/preimage', methods: ['GET'], query: fc.record({ hash: fc.oneof(hex(64), anyText) }, { requiredKeys: [] }) },
  {
    file: 'dev/pay.ts',
    path: '/api/dev/pay',
    methods: ['POST'],
    body: json(
      fc.record(
        {
          invoice: fc.oneof(
            anyText,
            mutate(() => realInvoice),
            fc.string({ unit: fc.constantFrom(...'qpzry9x8gf2tvdw0s3jn54khce6mua7l'), maxLength: 300 }).map((d) => `lnbcrt1${d}`),
          ),
        },
        { requiredKeys: [] },
      ),
    ),
  },
  {
    file: 'dev/inbox.ts',
    path: '/api/dev/inbox',
    methods: ['GET'],
    query: fc.record({ address: fc.oneof(addresses(), fc.constantFrom('alice@localhost', 'alice@127.0.0.1:3000'), anyText) }, { requiredKeys: [] }),
  },
  {
    file: 'dev/receive.ts',
    path: '/api/dev/receive',
    methods: ['POST'],
    body: json(fc.record({ amountSats: fc.oneof(numberish, anyText), memo: fc.oneof(anyText, fc.string({ maxLength: 300 })) }, { requiredKeys: [] })),
  },
  {
    // The handler reads the hash from the path's last segment; Vercel also passes it as the query's paymentHash.
    file: 'dev/receive/[paymentHash].ts',
    path: `/api/dev/receive/${'ab'.repeat(32)}`,
    baseQuery: { paymentHash: 'ab'.repeat(32) },
    methods: ['GET'],
    query: fc.record({ paymentHash: fc.oneof(hex(64), anyText) }, { requiredKeys: [] }),
  },
  { file: 'dev/login.ts', path: '/api/dev/login', methods: ['POST'], body: json(fc.record({ k1: fc.oneof(hex(64), anyText) }, { requiredKeys: [] })) },
  { file: 'openapi.json.ts', path: '/api/openapi.json', methods: ['GET'] },
  {
    file: 'lnurlp/[username].ts',
    path: '/api/lnurlp/tips',
    baseQuery: { username: 'tips' },
    methods: ['GET'],
    query: fc.record(
      {
        username: fc.oneof(fc.constantFrom('tips', 'TIPS', 'nobody', ''), anyText),
        amount: fc.oneof(numberish.map(String), fc.constantFrom('1000', '999', '1000000000000')),
        comment: fc.string({ maxLength: 400 }),
        nostr: anyText,
      },
      { requiredKeys: [] },
    ),
  },
];

function listApiFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return listApiFiles(path);
    return /\.(ts|js)$/.test(entry.name) && !entry.name.endsWith('.d.ts') && !entry.name.startsWith('_') ? [relative(API_DIR, path)] : [];
  });
}

// ---------------------------------------------------------------------------

const ENV = {
  ...SECRETS,
  BTC_PRICE_SOURCES: 'none',
  DATABASE_URL: 'pglite://memory',
  INVOICE_RATE_LIMIT_PER_MINUTE: '100000000',
  REGISTER_RATE_LIMIT_PER_MINUTE: '100000000',
  AUTH_RATE_LIMIT_PER_MINUTE: '100000000',
  HEALTH_RATE_LIMIT_PER_MINUTE: '100000000',
  LINK_PROOFS_PER_IP_PER_DAY: '100000000',
  LINK_PROOFS_PER_ADDRESS_PER_DAY: '100000000',
  LNURLP_USERNAMES: 'tips',
  OUTBOUND_TIMEOUT_MS: '1000',
};

describe(`fuzzing every api/ function (seed ${SEED})`, () => {
  let dataDir = '';
  let deployment: Deployment;
  let total = 0;
  let ownerServer: OwnerServer | undefined;
  const statuses = new Map<string, Map<number, number>>();

  beforeAll(async () => {
    console.log(
      `fuzz-api: seed ${SEED}, ${RUNS_PER_FUNCTION} requests per function (${HEAVY * 100}% for the heavy ones) (replay: FUZZ_SEED=${SEED} npx vitest run tests/integration/fuzz-api.test.ts)`,
    );
    dataDir = mkdtempSync(join(tmpdir(), 'l402-fuzz-'));
    deployment = createDeployment(loadConfig({ ...ENV, DATA_DIR: dataDir }));
    const ctx = deployment.context();
    ownerServer = await startOwnerServer({ store: ctx.store });
    loopbackOwner = ownerServer.address('fuzz');
    // Link proofs and manual splits are paid from the service's wallet.
    await ctx.devNode!.pay((await ctx.devNode!.createInvoice({ amountMsat: 1_000_000_000 })).invoice);
    validSession = (await createSession(ctx, bytesToHex(secp256k1.getPublicKey(randomBytes(32), true)))).token;
    const demo = (await import('../../api/demo/btc-price.js')).default as Fetchable;
    const answer = await call(demo, new Request('http://localhost/api/demo/btc-price'), deployment);
    const challenge = (await answer.json()) as { macaroon: string; invoice: string };
    realMacaroon = challenge.macaroon;
    realInvoice = challenge.invoice;
    const [payment] = parsePaymentChallenges(answer.headers.get('www-authenticate')).challenges;
    const { preimage } = await ctx.devNode!.pay(challenge.invoice);
    realPayment = formatCredential(payment!, preimage);
    realPaymentJson = JSON.parse(Buffer.from(realPayment.slice('Payment '.length), 'base64url').toString());
  }, 60_000);

  afterAll(async () => {
    await ownerServer?.close();
    const db = await deployment
      ?.context()
      .database()
      .catch(() => undefined);
    await db?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('has a target for every file in api/', () => {
    expect(targets.map((t) => t.file).sort()).toEqual(listApiFiles(API_DIR).sort());
  });

  for (const target of targets) {
    const runs = Math.round(RUNS_PER_FUNCTION * (target.weight ?? 1));
    it(`${target.file}: ${runs} hostile requests, no 5xx, every error {error, code}`, async () => {
      const fn = (await import(`../../api/${target.file.replace(/\.ts$/, '.js')}`)).default as Fetchable;
      // A session of its own: another function's fuzzing may have logged the last one out.
      validSession = (await createSession(deployment.context(), bytesToHex(secp256k1.getPublicKey(randomBytes(32), true)))).token;
      const seen = new Map<number, number>();
      statuses.set(target.file, seen);
      const request = fc.record({
        method: fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...target.methods) }, { weight: 1, arbitrary: fc.constantFrom(...methodsAll) }),
        query: fc.oneof(target.query ?? randomQuery, randomQuery, fc.constant({})),
        headers: target.headers ? fc.oneof(target.headers, commonHeaders) : commonHeaders,
        body: fc.oneof({ weight: 2, arbitrary: target.body ?? rawBody }, { weight: 1, arbitrary: rawBody }),
      });
      await fc.assert(
        fc.asyncProperty(request, async ({ method, query, headers, body }) => {
          total += 1;
          const url = new URL(`http://localhost${target.path}`);
          for (const [key, value] of Object.entries({ ...target.baseQuery, ...query })) url.searchParams.append(key, value);
          const hasBody = method !== 'GET' && method !== 'HEAD';
          const response = await call(fn, new Request(url, { method, headers, ...(hasBody ? { body } : {}) }), deployment);
          const status = response.status;
          seen.set(status, (seen.get(status) ?? 0) + 1);
          const text = await response.text();
          const where = `${method} ${url.pathname}${url.search} ${JSON.stringify(headers)} body ${JSON.stringify(body).slice(0, 300)} -> ${status} ${text.slice(0, 300)}`;
          expect(status, where).toBeGreaterThanOrEqual(200);
          expect(status, where).toBeLessThan(500);
          if (status === 429 || status === 503) expect(Number(response.headers.get('retry-after')), where).toBeGreaterThan(0);
          // HEAD answers as GET would, without a body.
          if (method === 'HEAD') expect(text, where).toBe('');
          else if (status >= 400) {
            const answer = JSON.parse(text) as Record<string, unknown>;
            expect(answer, where).toEqual(expect.objectContaining({ error: expect.any(String), code: expect.stringMatching(/^[A-Z][A-Z0-9_]*$/) }));
            expect(text, where).not.toMatch(/\bat .*\.ts:\d+|node_modules|Error: /);
          }
        }),
        { seed: SEED, numRuns: runs, endOnFailure: true },
      );
      // The requests were not all turned away at the door: each function answered in more than one way.
      expect(seen.size, JSON.stringify([...seen])).toBeGreaterThan(1);
    }, 600_000);
  }

  it(`ran at least ${MIN_TOTAL.toLocaleString('en')} requests in all`, () => {
    console.log(
      `fuzz-api: ${total} requests, statuses per function: ${JSON.stringify(Object.fromEntries([...statuses].map(([file, seen]) => [file, Object.fromEntries(seen)])))}`,
    );
    if (!process.env.FUZZ_RUNS) expect(total).toBeGreaterThanOrEqual(MIN_TOTAL);
  });
});
