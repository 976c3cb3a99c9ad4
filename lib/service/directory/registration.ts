// The public directory of paid APIs (POST /api/register, GET /api/apis.json):
// agents discover L402 endpoints here.
//
// A Lightning Address is public (managed-mode tokens carry it as a caveat), so
// naming it proves nothing. Every registration proves one of two things:
// - control of the url: its origin answers a proof token the registrant chose
//   (at /.well-known/l402-directory/<token>, or the url itself when asked with
//   the L402-Directory-Proof header, which managed mode's wrapper answers) with
//   "<token>.<lightning_address>". This may create, update or take over the
//   entry: whoever controls the url reclaims it from a squatter.
// - control of the address: a dashboard session (LNURL-auth) whose key has the
//   address linked. This may create an entry or update one of that address,
//   never take over another address's entry.
import { z } from 'zod';
import { HttpError, retryLater } from '../../http/errors.js';
import { guardedGet, OutboundError } from '../../http/outbound.js';
import { LightningAddress } from 'l402-paywall/lightning';
import { outboundPolicy } from '../../lightning/lnurl.js';
import { linkedAddresses, requireSession } from '../accounts/auth.js';
import type { ServiceContext } from '../context.js';

/** Header carrying the proof token when the service asks the registered url itself. */
export const PROOF_HEADER = 'L402-Directory-Proof';
/** Where an origin may serve a proof token as a file: `${origin}${PROOF_PATH}<token>`. */
export const PROOF_PATH = '/.well-known/l402-directory/';
const PROOF_TOKEN = /^[A-Za-z0-9_-]{43}$/;

export const CATEGORIES = ['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other'] as const;
export type Category = (typeof CATEGORIES)[number];

export const MAX_URL_LENGTH = 2048;
/** Characters are Unicode code points: "😀" is one. */
export const MAX_NAME_CHARS = 100;
export const MAX_DESCRIPTION_CHARS = 500;
/** 1 BTC per call: anything above is a typo (msat for sat), and it fits Postgres' integer. */
export const MAX_PRICE_SATS = 100_000_000;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// NUL cannot be stored in Postgres text at all; the other controls have no place
// in a one-line name. A description may hold tabs and line breaks.
const CONTROL_IN_LINE = /[\u0000-\u001f\u007f-\u009f]/;
const CONTROL_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/;

function codePoints(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

const requiredString = (field: string, what: string) =>
  z.string({ error: (issue) => (issue.input === undefined ? `${field} is required (${what})` : `${field} must be a string (${what})`) });

/** Text as people typed it, minus surrounding whitespace; stored and listed exactly so. */
function text(field: string, maxChars: number, multiline: boolean, what: string) {
  return requiredString(field, what)
    .trim()
    .min(multiline ? 0 : 1, `${field} must not be empty`)
    .refine((s) => !LONE_SURROGATE.test(s), `${field} must be valid Unicode text (it contains a lone surrogate)`)
    .refine((s) => !(multiline ? CONTROL_IN_TEXT : CONTROL_IN_LINE).test(s), `${field} must not contain control characters`)
    .refine((s) => codePoints(s) <= maxChars, `${field} must be at most ${maxChars} characters`);
}

/**
 * An absolute http(s) URL in WHATWG canonical form without its fragment, so
 * `HTTPS://Example.com:443/a/../api#x` and `https://example.com/api` are one entry.
 */
export const ApiUrl = requiredString('url', `an absolute http(s) URL of at most ${MAX_URL_LENGTH} characters`)
  .trim()
  .max(MAX_URL_LENGTH, `url must be at most ${MAX_URL_LENGTH} characters`)
  .refine((s) => !LONE_SURROGATE.test(s), 'url must be valid Unicode text (it contains a lone surrogate)')
  .transform((raw, ctx) => {
    const fail = (message: string) => {
      ctx.addIssue({ code: 'custom', message });
      return z.NEVER;
    };
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return fail('url must be an absolute http(s) URL, like https://api.example.com/v1/price');
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return fail('url must use http or https');
    // The directory is public: never publish credentials someone pasted by mistake.
    if (url.username || url.password) return fail('url must not contain a user name or password');
    url.hash = '';
    const canonical = url.href;
    if (canonical.length > MAX_URL_LENGTH) return fail(`url must be at most ${MAX_URL_LENGTH} characters once normalised`);
    return canonical;
  });

export const CategorySchema = z.enum(CATEGORIES, { error: `category must be one of ${CATEGORIES.join(', ')}` });

/** POST /api/register: a directory entry. Unknown fields are refused (a typo must not pass silently). */
export const Registration = z.strictObject({
  url: ApiUrl,
  name: text('name', MAX_NAME_CHARS, false, `1-${MAX_NAME_CHARS} characters`),
  price_sats: z
    .number({ error: (issue) => (issue.input === undefined ? 'price_sats is required (satoshis per call, a whole number >= 1)' : 'price_sats must be a number (satoshis per call)') })
    .int('price_sats must be a whole number of satoshis')
    .min(1, 'price_sats must be at least 1')
    .max(MAX_PRICE_SATS, `price_sats must be at most ${MAX_PRICE_SATS}`),
  lightning_address: requiredString('lightning_address', 'a Lightning Address like name@example.com').pipe(LightningAddress),
  // Absent, null and "" all mean "no description"; a registration replaces the whole entry.
  description: text('description', MAX_DESCRIPTION_CHARS, true, `at most ${MAX_DESCRIPTION_CHARS} characters`)
    .nullish()
    .transform((s) => (s ? s : null)),
  category: CategorySchema.nullish().transform((c) => c ?? null),
  /** 32 bytes in base64url chosen by the registrant: the origin of `url` must answer it (see the top of this file). */
  proof_token: z.string({ error: 'proof_token must be a string' }).regex(PROOF_TOKEN, 'proof_token must be 43 base64url characters (32 random bytes)').optional(),
});
export type Registration = z.infer<typeof Registration>;

export const ApisQuery = z.object({ category: CategorySchema.optional() });

export interface DirectoryEntry {
  url: string;
  name: string;
  description: string | null;
  price_sats: number;
  category: Category | null;
  created_at: string;
}

export interface DirectoryListing {
  version: '1';
  count: number;
  apis: DirectoryEntry[];
}

export async function enforceRegisterRateLimit(ctx: ServiceContext, clientIp: string): Promise<void> {
  const result = await ctx.registerLimiter.limit(clientIp);
  if (!result.success) {
    throw retryLater(429, 'RATE_LIMITED', `Too many registrations: at most ${result.limit} per minute from one address`, (result.reset - Date.now()) / 1000);
  }
}

// One statement, so concurrent registrations of one url cannot race: the first
// inserts, the others update (or not) the same row and all get its id.
// updated_at moves only when something changed (registering at every start is a no-op).
// With the address proved, the update happens only for that owner (no row
// comes back for anyone else); with the url proved, the entry changes hands.
const UPSERT = (takeOver: boolean) => `
INSERT INTO apis AS a (url, name, description, price_sats, category, lightning_address)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (url) DO UPDATE SET
  name = EXCLUDED.name,
  description = EXCLUDED.description,
  price_sats = EXCLUDED.price_sats,
  category = EXCLUDED.category,
  lightning_address = EXCLUDED.lightning_address,
  updated_at = CASE
    WHEN (a.name, a.description, a.price_sats, a.category, a.lightning_address) IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.description, EXCLUDED.price_sats, EXCLUDED.category, EXCLUDED.lightning_address)
    THEN now() ELSE a.updated_at END
${takeOver ? '' : 'WHERE a.lightning_address = EXCLUDED.lightning_address'}
RETURNING id`;
const UPSERT_OWNER = UPSERT(false);
const UPSERT_PROVED_URL = UPSERT(true);

export type OwnershipProof = 'url' | 'address';

/**
 * Registers or updates an entry once the request proves control of its url or
 * of its address; the same url always answers the same id.
 */
export async function registerApi(ctx: ServiceContext, entry: Registration, request: Request): Promise<{ id: string; proof: OwnershipProof }> {
  const proof = await proveOwnership(ctx, entry, request);
  const db = await ctx.database();
  const params = [entry.url, entry.name, entry.description, entry.price_sats, entry.category, entry.lightning_address];
  const [row] = await db.query<{ id: string }>(proof === 'url' ? UPSERT_PROVED_URL : UPSERT_OWNER, params);
  // Entries are never deleted, so no row means the url exists with another owner.
  if (!row) {
    throw new HttpError(
      409,
      'URL_OWNED',
      'This url is registered with another Lightning Address; whoever controls the url can take it over by proving it (proof_token)',
    );
  }
  return { id: row.id, proof };
}

async function proveOwnership(ctx: ServiceContext, entry: Registration, request: Request): Promise<OwnershipProof> {
  if (request.headers.has('authorization')) {
    const session = await requireSession(ctx, request);
    if (!(await linkedAddresses(await ctx.database(), session.pubkey)).includes(entry.lightning_address)) {
      throw new HttpError(403, 'ADDRESS_NOT_LINKED', `${entry.lightning_address} is not linked to the key of this session: link it first (POST /api/links), or prove control of the url instead`);
    }
    return 'address';
  }
  if (!entry.proof_token) {
    throw new HttpError(
      403,
      'OWNERSHIP_UNPROVEN',
      `Prove control of the url: choose proof_token (32 random bytes, base64url), have ${new URL(entry.url).origin}${PROOF_PATH}<proof_token> (or the url itself, asked with the ${PROOF_HEADER} header) answer "<proof_token>.${entry.lightning_address}", and send proof_token; or send a dashboard session whose key has the address linked`,
    );
  }
  await proveUrlControl(ctx, entry.url, entry.lightning_address, entry.proof_token);
  return 'url';
}

/** The expected answer: the token and the address it vouches for, so a proof for one owner is none for another. */
export function proofAnswer(token: string, address: string): string {
  return `${token}.${address}`;
}

// Like ACME http-01: the url itself with the header first (what managed mode's
// wrapper answers at every start, before its paywall would make an invoice),
// then the well-known file (any web server can serve it). Redirects are
// refused: an open redirect on the origin must not hand the proof to another host.
async function proveUrlControl(ctx: ServiceContext, url: string, address: string, token: string): Promise<void> {
  const policy = outboundPolicy(ctx.config);
  const expected = proofAnswer(token, address);
  const attempts: string[] = [];
  const tries: Array<{ target: string; headers?: Record<string, string> }> = [
    { target: url, headers: { [PROOF_HEADER]: token } },
    { target: new URL(PROOF_PATH + token, url).toString() },
  ];
  for (const { target, headers } of tries) {
    try {
      const answer = await guardedGet(target, policy, { accept: 'text/plain', headers, followRedirects: false });
      if (answer.status === 200 && answer.body.trim() === expected) return;
      attempts.push(`${target} answered ${answer.status}${answer.status === 200 ? ' with another text' : ''}`);
    } catch (error) {
      if (!(error instanceof OutboundError)) throw error;
      attempts.push(`${target}: ${error.message}`);
      // A host we may not fetch stays refused at any path.
      if (error.code === 'HOST_REFUSED') break;
    }
  }
  throw new HttpError(403, 'OWNERSHIP_UNPROVEN', `Control of the url is not proved: expected "<proof_token>.${address}"; ${attempts.join('; ')}`);
}

// Only the listed columns, created_at as JavaScript's toISOString() writes it
// (whatever the session time zone), newest first.
const ROWS = (where: string) => `
  SELECT a.url, a.name, a.description, a.price_sats, a.category,
         to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
  FROM apis a ${where}
  ORDER BY a.created_at DESC, a.id`;
// PGlite pays for every field it hands over (10,000 rows: ~85 ms against ~30 ms
// for one text value), so there the database writes the JSON array itself. A
// sorted subquery feeding json_agg keeps its order when, as here, nothing else
// happens at the outer level (PostgreSQL docs, "Aggregate Expressions"). A
// server's driver decodes rows faster than the server aggregates them.
const AS_JSON = (where: string) => `SELECT count(*)::int AS count, coalesce(json_agg(t), '[]')::text AS apis FROM (${ROWS(where)}) t`;
const BY_CATEGORY = 'WHERE a.category = $1';
const QUERIES = {
  rows: { all: ROWS(''), category: ROWS(BY_CATEGORY) },
  json: { all: AS_JSON(''), category: AS_JSON(BY_CATEGORY) },
};

/**
 * GET /api/apis.json's body, `DirectoryListing` as JSON text: newest first,
 * the Lightning Address never listed.
 */
export async function listApisJson(ctx: ServiceContext, category?: Category): Promise<{ count: number; json: string }> {
  const db = await ctx.database();
  const params = category ? [category] : [];
  if (db.kind === 'pglite') {
    const [row] = await db.query<{ count: number; apis: string }>(category ? QUERIES.json.category : QUERIES.json.all, params);
    const count = Number(row?.count ?? 0);
    return { count, json: `{"version":"1","count":${count},"apis":${row?.apis ?? '[]'}}` };
  }
  const apis = await db.query<DirectoryEntry & Record<string, unknown>>(category ? QUERIES.rows.category : QUERIES.rows.all, params);
  // Row objects carry the columns in SELECT order, which is the listing's field order.
  return { count: apis.length, json: JSON.stringify({ version: '1', count: apis.length, apis } satisfies DirectoryListing) };
}
