// Every api/ function fuzzed in process (its fetch handler, as Vercel calls it,
// run with the test's own deployment: fetchWith, lib/service/deployment.ts),
// with fast-check and a fixed seed printed at the start: methods, query
// strings, headers (Authorization in every scheme, Payment credentials random
// and mutated among them, prepaid-session credentials of every action with
// guessed, reused and foreign secrets, signatures, content types,
// client addresses) and bodies, random and near-valid. At least 100,000
// requests per run in all. Every answer is < 500; every 4xx is JSON
// {error, code}; every 429/503 would carry Retry-After; a session credential
// that is not its opener's own is never served, and no session is spent past
// what was paid into it. A failure prints the seed and the path to replay it:
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
import { createLogin } from '../../lib/service/accounts/auth.js';
import { loadConfig } from '../../lib/config.js';
import { createDeployment, type Deployment } from '../../lib/service/deployment.js';
import { DEV_WEBHOOK_SIGNATURE_HEADER } from 'l402-paywall/backends';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';
import { sha256 } from '@noble/hashes/sha2.js';
import {
  formatCredential,
  formatSessionCredential,
  parsePaymentChallenges,
  readLightningSession,
  type PaymentChallenge,
  type SessionPayload,
} from 'l402-paywall/mpp';
import type { ServiceContext } from '../../lib/service/context.js';

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
  /** A check of each answer of its own, besides the common ones (POST /api/mcp: no stranger's credential is served). */
  check?: (body: string, status: number, text: string, where: string) => void;
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

/**
 * Prepaid sessions on the demo (docs/sessions.md), made in beforeAll. `reused`
 * (on /api/demo/btc-price) has its own credentials replayed as they are: its
 * open and its top-up (refused: already used), its bearer (served from its
 * balance, never past it) and its close. `victim` (on /api/demo/stream) is
 * attacked only with what a stranger could hold: its id, its preimage (as a
 * routing node of its deposit learns it), challenges of the stranger's own
 * 402s, of another route, a charge's, and ones written by hand.
 */
interface FuzzSession {
  route: string;
  opening: PaymentChallenge;
  sessionId: string;
  preimage: string;
  open: string;
  bearer: string;
  close: string;
  topUp: string;
}
const NO_SESSION: FuzzSession = { route: '', opening: {} as PaymentChallenge, sessionId: '', preimage: '', open: '', bearer: '', close: '', topUp: '' };
let reused = NO_SESSION;
let victim = NO_SESSION;
/** Unused session challenges of fresh 402s (both demo routes, not paid), and a charge challenge, to echo. */
let freshChallenges: PaymentChallenge[] = [];
let chargeChallenge = {} as PaymentChallenge;
/** Session credentials that must never be served: guessed, foreign (every one generated is recorded here). */
const neverServed = new Set<string>();
/** The api/ files behind the paywall, which sell by the session. */
const PAYWALLED = new Set(['demo/btc-price.ts', 'demo/stream.ts']);
/** Every victim and reused session opened (afresh before each paywalled route is fuzzed: the cron's idle sweep closes older ones). */
const victims: FuzzSession[] = [];
/** Each reused session by its bearer credential, and how many requests that credential was served. */
const reusedServed = new Map<string, { session: FuzzSession; served: number }>();
/** The statuses the paywalled routes answered strangers' session credentials with. */
const strangerRefusals: number[] = [];

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
const lowerHex = (n: number) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: n, maxLength: n });
const hashOf = (preimage: string) => bytesToHex(sha256(Buffer.from(preimage, 'hex')));
const sessionCredential = (challenge: PaymentChallenge, payload: SessionPayload) => formatSessionCredential(challenge, payload);
/** A credential that must not be served: recorded as such. */
const stranger = (authorization: string) => {
  neverServed.add(authorization);
  return authorization;
};
/** A challenge a stranger holds: a fresh 402's session challenge (either route), the charge's, the other session's opening. */
const strangersChallenge = () =>
  fc.oneof(
    fc.nat().map((i) => freshChallenges[i % freshChallenges.length]!),
    fc.constant(0).map(() => chargeChallenge),
    fc.constant(0).map(() => reused.opening),
  );
/** Guessed: random preimages and ids, with real challenges and with challenges rewritten by hand (their ids are then not ours). */
const guessedSessionCredential = () =>
  fc.oneof(
    fc
      .tuple(strangersChallenge(), fc.constantFrom('bearer', 'close'), lowerHex(64), lowerHex(64))
      .map(([challenge, action, sessionId, preimage]) => stranger(sessionCredential(challenge, { action, sessionId, preimage } as SessionPayload))),
    // A preimage and its own hash as the id: consistent, but no challenge of ours names that deposit.
    fc
      .tuple(strangersChallenge(), fc.constantFrom('bearer', 'close'), lowerHex(64))
      .map(([challenge, action, preimage]) => stranger(sessionCredential(challenge, { action, sessionId: hashOf(preimage), preimage } as SessionPayload))),
    fc
      .tuple(strangersChallenge(), lowerHex(64))
      .map(([challenge, preimage]) => stranger(sessionCredential(challenge, { action: 'open', preimage, returnInvoice: realInvoice }))),
    fc
      .tuple(
        strangersChallenge(),
        fc.oneof(
          lowerHex(64),
          fc.constant(0).map(() => victim.sessionId),
        ),
        lowerHex(64),
      )
      .map(([challenge, sessionId, topUpPreimage]) => stranger(sessionCredential(challenge, { action: 'topUp', sessionId, topUpPreimage }))),
    // A challenge written to name a deposit (the victim's, or a guessed one), under a guessed id.
    fc.tuple(fc.constantFrom('bearer', 'close'), fc.oneof(lowerHex(64), fc.constant('')), fc.boolean()).map(([action, guess, keepId]) => {
      const base = freshChallenges[0]!;
      const request = JSON.parse(Buffer.from(base.request, 'base64url').toString()) as Record<string, unknown>;
      request.paymentHash = victim.sessionId;
      const challenge = { ...base, request: Buffer.from(JSON.stringify(request)).toString('base64url'), ...(keepId ? {} : { id: guess || base.id }) };
      return stranger(sessionCredential(challenge, { action, sessionId: victim.sessionId, preimage: victim.preimage } as SessionPayload));
    }),
  );
/** Foreign: the victim's id and preimage (what a routing node of its deposit learns) with any challenge but its opening one; another session's preimage. */
const foreignSessionCredential = () =>
  fc.oneof(
    fc
      .tuple(strangersChallenge(), fc.constantFrom('bearer', 'close'))
      .map(([challenge, action]) =>
        stranger(sessionCredential(challenge, { action, sessionId: victim.sessionId, preimage: victim.preimage } as SessionPayload)),
      ),
    // The victim's opening challenge with another session's id or preimage.
    fc
      .constantFrom('bearer', 'close')
      .map((action) => stranger(sessionCredential(victim.opening, { action, sessionId: victim.sessionId, preimage: reused.preimage } as SessionPayload))),
    fc
      .constantFrom('bearer', 'close')
      .map((action) => stranger(sessionCredential(victim.opening, { action, sessionId: reused.sessionId, preimage: reused.preimage } as SessionPayload))),
    fc
      .constantFrom('bearer', 'close')
      .map((action) => stranger(sessionCredential(reused.opening, { action, sessionId: victim.sessionId, preimage: victim.preimage } as SessionPayload))),
    // The victim's deposit presented again: as an open on another challenge, as a top-up of the other session.
    strangersChallenge().map((challenge) => stranger(sessionCredential(challenge, { action: 'open', preimage: victim.preimage, returnInvoice: realInvoice }))),
    strangersChallenge().map((challenge) =>
      stranger(sessionCredential(challenge, { action: 'topUp', sessionId: reused.sessionId, topUpPreimage: victim.preimage })),
    ),
    // The victim's own open, replayed.
    fc.constant(0).map(() => stranger(victim.open)),
  );
/** Reused: the reused session's own credentials, replayed as they are (its bearer may be served, from its balance only). */
const reusedSessionCredential = () =>
  fc.oneof(
    // The close rarely: the bearer is replayed past the balance first.
    { weight: 30, arbitrary: fc.constant(0).map(() => reused.bearer) },
    { weight: 4, arbitrary: fc.constant(0).map(() => stranger(reused.open)) },
    { weight: 4, arbitrary: fc.constant(0).map(() => stranger(reused.topUp)) },
    { weight: 1, arbitrary: fc.constant(0).map(() => reused.close) },
  );
const sessionAuthorization = () => fc.oneof(guessedSessionCredential(), foreignSessionCredential(), reusedSessionCredential());

/** Payment credentials: random text, random JSON, the real one mutated as text, and as JSON with a field replaced or dropped; session credentials. */
const paymentAuthorization = () =>
  fc.oneof(
    sessionAuthorization(),
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
/** The paywalled routes sell by the session: half their requests carry a session credential or another Payment one. */
const sessionHeaders = fc.record({ authorization: fc.oneof({ weight: 3, arbitrary: sessionAuthorization() }, paymentAuthorization()) });
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

/** Tool credentials (POST /api/mcp) made from credentials no one may be served with: their JSON, as the MCP transport carries them. */
const neverServedTool = new Set<string>();
/** A Payment Authorization value as the MCP transport's credential object (the challenge's request decoded); text that is none stays text. */
function asToolCredential(authorization: string): unknown {
  let credential: unknown = authorization;
  try {
    const json = JSON.parse(Buffer.from(authorization.slice('Payment '.length), 'base64url').toString()) as { challenge?: { request?: unknown } };
    if (typeof json?.challenge?.request === 'string') json.challenge.request = JSON.parse(Buffer.from(json.challenge.request, 'base64url').toString());
    credential = json;
  } catch {
    // Not JSON inside: sent as the text it is.
  }
  if (neverServed.has(authorization)) neverServedTool.add(JSON.stringify(credential));
  return credential;
}
/** Hostile tool credentials: guessed and foreign session credentials, the real charge credential mutated, random JSON and text. */
const toolCredential = () =>
  fc.oneof(
    guessedSessionCredential().map(asToolCredential),
    foreignSessionCredential().map(asToolCredential),
    // The real charge credential (served once, on btc_price, then refused as used).
    { weight: 3, arbitrary: fc.constant('').map(() => asToolCredential(realPayment)) },
    mutate(() => realPayment).map(asToolCredential),
    fc
      .tuple(
        fc.constantFrom('challenge', 'payload', 'source', 'id', 'realm', 'method', 'intent', 'request', 'expires', 'opaque', 'preimage', 'amount'),
        fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(undefined)),
      )
      .map(([field, value]) => {
        const credential = asToolCredential(realPayment) as { challenge: Record<string, unknown>; payload: Record<string, unknown> } & Record<string, unknown>;
        const request = credential.challenge.request as Record<string, unknown>;
        const holder = field in credential ? credential : field === 'preimage' ? credential.payload : field === 'amount' ? request : credential.challenge;
        if (value === undefined) delete holder[field];
        else holder[field] = value;
        return credential;
      }),
    fc.jsonValue({ maxDepth: 3 }),
    headerText,
  );
const CREDENTIAL_KEY = 'org.paymentauth/credential';
/** JSON-RPC bodies: tool calls carrying a hostile credential (in params._meta or at the root), other methods, malformed messages, batches. */
const mcpBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.constantFrom('btc_price', 'btc_price_session', 'nope', ''),
        toolCredential(),
        fc.boolean(),
        fc.oneof(fc.constant({}), fc.jsonValue({ maxDepth: 2 })),
        fc.oneof(fc.integer(), fc.string({ maxLength: 8 })),
      )
      .map(([name, credential, atRoot, args, id]) =>
        JSON.stringify({
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: { name, arguments: args, ...(!atRoot && { _meta: { [CREDENTIAL_KEY]: credential } }) },
          ...(atRoot && { _meta: { [CREDENTIAL_KEY]: credential } }),
        }),
      ),
  },
  fc
    .record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), fc.jsonValue({ maxDepth: 1 })),
        id: fc.oneof(fc.integer(), fc.string({ maxLength: 8 }), fc.constant(null), fc.jsonValue({ maxDepth: 1 })),
        method: fc.oneof(
          fc.constantFrom('initialize', 'tools/list', 'tools/call', 'ping', 'notifications/initialized', 'resources/list', 'prompts/get'),
          anyText,
        ),
        params: fc.jsonValue({ maxDepth: 3 }),
        _meta: fc.jsonValue({ maxDepth: 2 }),
      },
      { requiredKeys: [] },
    )
    .map((message) => JSON.stringify(message)),
  fc
    .array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 })
    .map((batch) => JSON.stringify(batch.map((v) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: v })))),
  rawBody,
);
// Mostly what an MCP client sends, so most requests reach the tools; the rest what it must not.
const mostly = <T>(usual: fc.Arbitrary<T>, other: fc.Arbitrary<T>) => fc.oneof({ weight: 9, arbitrary: usual }, { weight: 1, arbitrary: other });
const mcpHeaders = fc.record(
  {
    accept: mostly(fc.constant('application/json, text/event-stream'), fc.oneof(fc.constantFrom('application/json', 'text/event-stream', '*/*'), headerText)),
    'content-type': mostly(fc.constantFrom('application/json', 'application/json; charset=utf-8'), fc.oneof(fc.constant('text/plain'), headerText)),
    'mcp-protocol-version': mostly(fc.constantFrom('2025-06-18', '2025-03-26', '2024-11-05'), headerText),
    'x-real-ip': fc.constantFrom('192.0.2.1', '2001:db8::1', 'unknown', '', '127.0.0.1'),
    authorization: authorization(),
  },
  { requiredKeys: ['accept', 'content-type'] },
);
/** POST /api/mcp never serves a tool call on a credential that is not its opener's own (a guessed or foreign session's). */
function neverServesStrangers(body: string, status: number, text: string, where: string): void {
  if (status !== 200) return;
  let sent: { params?: { _meta?: Record<string, unknown> }; _meta?: Record<string, unknown> };
  try {
    sent = JSON.parse(body);
  } catch {
    return;
  }
  const credential = sent?.params?._meta?.[CREDENTIAL_KEY] ?? sent?._meta?.[CREDENTIAL_KEY];
  if (credential === undefined || !neverServedTool.has(JSON.stringify(credential))) return;
  const answer = JSON.parse(text) as { result?: { isError?: boolean } };
  expect(answer.result === undefined || answer.result.isError === true, `a stranger's tool credential was served: ${where}`).toBe(true);
}

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
  {
    file: 'login.ts',
    path: '/api/login',
    methods: ['GET', 'DELETE'],
    query: fc.record({ all: fc.constantFrom('1', '0', 'true', '', 'yes') }, { requiredKeys: [] }),
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
  // The dashboard login at its first path (api/session.ts re-exports api/login.ts).
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
  { file: 'demo/btc-price.ts', weight: HEAVY, path: '/api/demo/btc-price', methods: ['GET'], headers: sessionHeaders },
  { file: 'demo/index.ts', path: '/api/demo', methods: ['GET'] },
  { file: 'mcp.ts', weight: HEAVY, path: '/api/mcp', methods: ['POST'], headers: mcpHeaders, body: mcpBody, check: neverServesStrangers },
  {
    file: 'demo/stream.ts',
    weight: HEAVY,
    path: '/api/demo/stream',
    methods: ['GET'],
    query: fc.record({ chunks: fc.oneof(fc.integer({ min: -5, max: 300 }).map(String), anyText) }, { requiredKeys: [] }),
    headers: sessionHeaders,
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
    validSession = (await createLogin(ctx, bytesToHex(secp256k1.getPublicKey(randomBytes(32), true)))).token;
    const demo = (await import('../../api/demo/btc-price.js')).default as Fetchable;
    const answer = await call(demo, new Request('http://localhost/api/demo/btc-price'), deployment);
    const challenge = (await answer.json()) as { macaroon: string; invoice: string };
    realMacaroon = challenge.macaroon;
    realInvoice = challenge.invoice;
    const [payment] = parsePaymentChallenges(answer.headers.get('www-authenticate')).challenges;
    const { preimage } = await ctx.devNode!.pay(challenge.invoice);
    realPayment = formatCredential(payment!, preimage);
    realPaymentJson = JSON.parse(Buffer.from(realPayment.slice('Payment '.length), 'base64url').toString());
    chargeChallenge = payment!;
    await openFuzzSessions(ctx);
  }, 120_000);

  /** The reused and victim sessions, opened and topped up on the demo routes, and fresh challenges to echo. */
  async function openFuzzSessions(ctx: ServiceContext) {
    const stream = (await import('../../api/demo/stream.js')).default as Fetchable;
    const btcPrice = (await import('../../api/demo/btc-price.js')).default as Fetchable;
    const routes = { '/api/demo/btc-price': btcPrice, '/api/demo/stream': stream };
    const get = (route: keyof typeof routes, authorization?: string) =>
      call(routes[route], new Request(`http://localhost${route}`, { headers: authorization ? { authorization } : {} }), deployment);
    const offer = async (route: keyof typeof routes) => {
      const answer = await get(route);
      await answer.body?.cancel();
      const challenge = parsePaymentChallenges(answer.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session')!;
      const read = readLightningSession(challenge);
      if (!read.ok) throw new Error(read.detail);
      return read.session;
    };
    const open = async (route: keyof typeof routes): Promise<FuzzSession> => {
      const opening = await offer(route);
      const { preimage } = await ctx.devNode!.pay(opening.depositInvoice);
      const { invoice } = await ctx.devNode!.createAmountlessInvoice({ memo: 'fuzz refunds', expirySeconds: 86_400 });
      const openCredential = sessionCredential(opening.challenge, { action: 'open', preimage, returnInvoice: invoice });
      const opened = await get(route, openCredential);
      expect(opened.status).toBe(200);
      await opened.body?.cancel();
      const sessionId = opening.paymentHash;
      const topUpOffer = await offer(route);
      const { preimage: topUpPreimage } = await ctx.devNode!.pay(topUpOffer.depositInvoice);
      const topUp = sessionCredential(topUpOffer.challenge, { action: 'topUp', sessionId, topUpPreimage });
      expect((await get(route, topUp)).status).toBe(200);
      return {
        route,
        opening: opening.challenge,
        sessionId,
        preimage,
        open: openCredential,
        bearer: sessionCredential(opening.challenge, { action: 'bearer', sessionId, preimage }),
        close: sessionCredential(opening.challenge, { action: 'close', sessionId, preimage }),
        topUp,
      };
    };
    reused = await open('/api/demo/btc-price');
    victim = await open('/api/demo/stream');
    victims.push(victim);
    reusedServed.set(reused.bearer, { session: reused, served: 0 });
    freshChallenges = [];
    for (const route of ['/api/demo/btc-price', '/api/demo/stream', '/api/demo/btc-price', '/api/demo/stream'] as const)
      freshChallenges.push((await offer(route)).challenge);
  }

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
      // Sessions of their own, not yet idle: the fuzzing of cron/payouts sweeps the idle ones.
      if (PAYWALLED.has(target.file)) await openFuzzSessions(deployment.context());
      // A session of its own: another function's fuzzing may have logged the last one out.
      validSession = (await createLogin(deployment.context(), bytesToHex(secp256k1.getPublicKey(randomBytes(32), true)))).token;
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
          const given = headers.authorization;
          // (An OPTIONS preflight is answered 204 whatever it carries: it reaches no paywall.)
          if (given !== undefined && PAYWALLED.has(target.file) && status < 300 && method !== 'OPTIONS') {
            // Served (or a top-up or close answered) on a session credential only when it is the opener's own.
            expect(neverServed.has(given), `a stranger's session credential was answered ${status}: ${target.file}`).toBe(false);
            const own = reusedServed.get(given);
            if (own && target.path === own.session.route) own.served += 1;
          }
          if (given !== undefined && PAYWALLED.has(target.file) && neverServed.has(given)) strangerRefusals.push(status);
          const text = await response.text();
          const where = `${method} ${url.pathname}${url.search} ${JSON.stringify(headers)} body ${JSON.stringify(body).slice(0, 300)} -> ${status} ${text.slice(0, 300)}`;
          if (hasBody && target.check) target.check(body, status, text, where);
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

  it('no session was spent or closed by a stranger, nor spent past what was paid into it', async () => {
    const ledger = deployment.context().sessions;
    for (const { sessionId } of victims) {
      // Its deposit and top-up, one unit spent (its open), whatever was thrown at it; closed, if at all, by the
      // cron's idle sweep (the fuzzing of cron/payouts outlasts the idle timeout), never by a client.
      const record = await ledger.get(sessionId);
      expect(record, sessionId).toMatchObject({ paidMsat: 40_000, spentMsat: 1_000 });
      if (record!.status === 'closed') expect(record!.closedBecause, sessionId).toBe('idle');
    }
    // Each reused session: served from its balance only (its open, then its own bearer), 40 units paid in.
    const served: string[] = [];
    for (const { session, served: count } of reusedServed.values()) {
      const record = await ledger.get(session.sessionId);
      expect(record!.paidMsat).toBe(40_000);
      expect(record!.spentMsat, session.sessionId).toBe((1 + count) * 1_000);
      served.push(`${count} (${record!.status})`);
    }
    console.log(
      `fuzz-api: sessions: ${victims.length} victims untouched; the reused ones served their own bearer ${served.join(', ')} times; ${strangerRefusals.length} stranger credentials (${neverServed.size} distinct) on the paywalled routes, answered ${JSON.stringify(Object.fromEntries([...new Set(strangerRefusals)].map((status) => [status, strangerRefusals.filter((s) => s === status).length])))}`,
    );
  });

  it(`ran at least ${MIN_TOTAL.toLocaleString('en')} requests in all`, () => {
    console.log(
      `fuzz-api: ${total} requests, statuses per function: ${JSON.stringify(Object.fromEntries([...statuses].map(([file, seen]) => [file, Object.fromEntries(seen)])))}`,
    );
    if (!process.env.FUZZ_RUNS) expect(total).toBeGreaterThanOrEqual(MIN_TOTAL);
  });
});
