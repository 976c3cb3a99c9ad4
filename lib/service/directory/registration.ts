// Registering in the public directory of paid APIs (POST /api/register), where
// agents discover L402 endpoints; what an entry is: entry.ts; the listing
// (GET /api/apis.json): listing.ts.
//
// A Lightning Address is public (managed-mode tokens carry it as a caveat), so
// naming it proves nothing. Every registration proves one of two things:
// - control of the url: its origin answers a proof token the registrant chose
//   (at /.well-known/l402-directory/<token>, or the url itself when asked with
//   the L402-Directory-Proof header, which managed mode's wrapper answers) with
//   "<token>.<lightning_address>". This may create, update or take over the
//   entry: whoever controls the url reclaims it from a squatter.
// - control of the address: a dashboard login (LNURL-auth) whose key has the
//   address linked. This may create an entry or update one of that address,
//   never take over another address's entry.
// Whatever the proof, the url must be one the service would fetch itself
// (docs/security.md "Directory urls"): agents fetch what the directory lists,
// and it must not point them into their own network.
import { classifyHost } from 'l402-paywall/client';
import { HttpError, retryLater } from '../../http/errors.js';
import { guardedGet, OutboundError } from '../../http/outbound.js';
import { outboundPolicy } from '../../lightning/lnurl.js';
import { linkedAddresses, requireLogin } from '../accounts/auth.js';
import type { ServiceContext } from '../context.js';
import type { Registration } from './entry.js';

/** Header carrying the proof token when the service asks the registered url itself. */
export const PROOF_HEADER = 'L402-Directory-Proof';
/** Where an origin may serve a proof token as a file: `${origin}${PROOF_PATH}<token>`. */
export const PROOF_PATH = '/.well-known/l402-directory/';
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
  requireListableUrl(entry.url, ctx.config.production);
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

/**
 * 400 URL_NOT_ALLOWED unless `url` is one the service would fetch: https on a
 * public host; outside production also plain http and loopback hosts (a
 * local npm start). Judged by the url's spelling, every address literal
 * form included: what a name resolves to can change after registration at
 * will, so the agents judge it where they connect (l402-paywall mcp does).
 */
export function requireListableUrl(url: string, production: boolean): void {
  const { protocol, hostname } = new URL(url);
  if (production && protocol !== 'https:') throw new HttpError(400, 'URL_NOT_ALLOWED', 'url must use https');
  const kind = classifyHost(hostname);
  if (kind === 'public' || (kind === 'loopback' && !production)) return;
  throw new HttpError(
    400,
    'URL_NOT_ALLOWED',
    `url must point to a public host, not a ${kind} one (${hostname}): agents fetch what the directory lists${production ? '' : '; outside production loopback hosts are allowed too'}`,
  );
}

async function proveOwnership(ctx: ServiceContext, entry: Registration, request: Request): Promise<OwnershipProof> {
  if (request.headers.has('authorization')) {
    const login = await requireLogin(ctx, request);
    if (!(await linkedAddresses(await ctx.database(), login.pubkey)).includes(entry.lightning_address)) {
      throw new HttpError(
        403,
        'ADDRESS_NOT_LINKED',
        `${entry.lightning_address} is not linked to the key of this login: link it first (POST /api/links), or prove control of the url instead`,
      );
    }
    return 'address';
  }
  if (!entry.proof_token) {
    throw new HttpError(
      403,
      'OWNERSHIP_UNPROVEN',
      `Prove control of the url: choose proof_token (32 random bytes, base64url), have ${new URL(entry.url).origin}${PROOF_PATH}<proof_token> (or the url itself, asked with the ${PROOF_HEADER} header) answer "<proof_token>.${entry.lightning_address}", and send proof_token; or send a dashboard login whose key has the address linked`,
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
