// Dashboard logins (docs/architecture.md decision 11): an LNURL-auth login yields an
// opaque random bearer token; only its SHA-256 is kept, so a copy of the database
// opens no login. Admin rights are read from config on every request, so
// removing a key from ADMIN_PUBKEYS takes effect at once. Named "login", never
// "session": a session here is a prepaid Lightning session (docs/sessions.md).
// The wire keeps its older words (the SESSION_* error codes, the auth_sessions
// table, SESSION_TTL_HOURS) so that clients, databases and deployments go on working.
import { createHash, randomBytes } from 'node:crypto';
import type { Queryable } from '../../db/types.js';
import { HttpError, retryLater } from '../../http/errors.js';
import type { ServiceContext } from '../context.js';
import { devLoginKey } from './dev-login-key.js';

/** Who a dashboard login belongs to. */
export interface Login {
  pubkey: string;
  admin: boolean;
}

/** A login as the LNURL-auth poll hands it out. */
export interface IssuedLogin extends Login {
  /** The bearer token: shown once, never stored. */
  token: string;
  expiresAt: string;
}

// 32 random bytes, base64url without padding.
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

export function isAdmin(ctx: ServiceContext, pubkey: string): boolean {
  // The development wallet (lib/service/accounts/dev-login.ts) exists only with the dev node outside production.
  return ctx.config.auth.adminPubkeys.includes(pubkey) || pubkey === devLoginKey(ctx)?.pubkey;
}

/** A new login for `pubkey` (already proved by an LNURL-auth signature). */
export async function createLogin(ctx: ServiceContext, pubkey: string): Promise<IssuedLogin> {
  const db = await ctx.database();
  const token = randomBytes(32).toString('base64url');
  // Expired rows are kept a day so their holders hear "expired", not "unknown"; logins are rare enough to sweep here.
  await db.query(`DELETE FROM auth_sessions WHERE expires_at < now() - interval '1 day'`);
  const [row] = await db.query<{ expires_at: Date }>(
    `INSERT INTO auth_sessions (token_hash, pubkey, expires_at) VALUES ($1, $2, now() + make_interval(secs => $3)) RETURNING expires_at`,
    [sha256Hex(token), pubkey, ctx.config.auth.loginTtlSeconds],
  );
  return { token, pubkey, admin: isAdmin(ctx, pubkey), expiresAt: row!.expires_at.toISOString() };
}

/** Reads `Authorization: Bearer <token>`; throws HttpError 401 {error, code} when missing, unknown, expired or revoked. */
export async function requireLogin(ctx: ServiceContext, request: Request): Promise<Login> {
  const { login } = await readLogin(ctx, request);
  return login;
}

/** The login and when it ends, for GET /api/login. */
export async function readLogin(ctx: ServiceContext, request: Request): Promise<{ login: Login; tokenHash: string; expiresAt: string }> {
  const header = request.headers.get('authorization');
  if (!header) throw unauthorized('SESSION_REQUIRED', 'Log in first: send Authorization: Bearer <login token> (from the LNURL-auth login)');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match || !TOKEN.test(match[1]!)) throw unauthorized('SESSION_INVALID', 'Authorization must be Bearer <login token> as given by the LNURL-auth login');
  // Looked up by its hash: timing can reveal at most something about a hash,
  // which tells nothing about any other token.
  const tokenHash = sha256Hex(match[1]!);
  const db = await ctx.database();
  const [row] = await db.query<{ pubkey: string; expires_at: Date; expired: boolean; revoked: boolean }>(
    `SELECT pubkey, expires_at, expires_at <= now() AS expired, revoked_at IS NOT NULL AS revoked FROM auth_sessions WHERE token_hash = $1`,
    [tokenHash],
  );
  if (!row) throw unauthorized('SESSION_INVALID', 'This login token is unknown; log in again');
  if (row.revoked) throw unauthorized('SESSION_REVOKED', 'This login was logged out; log in again');
  if (row.expired) throw unauthorized('SESSION_EXPIRED', 'This login has expired; log in again');
  return { login: { pubkey: row.pubkey, admin: isAdmin(ctx, row.pubkey) }, tokenHash, expiresAt: row.expires_at.toISOString() };
}

/** Logs out this login, or every login of its key; returns how many were ended. */
export async function logOut(ctx: ServiceContext, request: Request, everywhere: boolean): Promise<number> {
  const { login, tokenHash } = await readLogin(ctx, request);
  const db = await ctx.database();
  const rows = everywhere
    ? await db.query(`UPDATE auth_sessions SET revoked_at = now() WHERE pubkey = $1 AND revoked_at IS NULL AND expires_at > now() RETURNING 1`, [login.pubkey])
    : await db.query(`UPDATE auth_sessions SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL RETURNING 1`, [tokenHash]);
  return rows.length;
}

/** The Lightning Addresses this key has proved control of (lower case). */
export async function linkedAddresses(db: Queryable, pubkey: string): Promise<string[]> {
  const rows = await db.query<{ address: string }>('SELECT address FROM address_links WHERE pubkey = $1 ORDER BY address', [pubkey]);
  return rows.map((row) => row.address);
}

/**
 * A fixed-window counter in the shared store: at most `max` calls per window
 * for `id`. Atomic in every store, so instances share one budget.
 */
export async function enforceWindowLimit(ctx: ServiceContext, scope: string, id: string, max: number, windowMs: number, message: string): Promise<void> {
  const now = Date.now();
  const window = Math.floor(now / windowMs);
  const counted = await ctx.store.incrementBelow(`ratelimit:${scope}:${id}:${window}`, max, windowMs);
  if (counted === null) throw retryLater(429, 'RATE_LIMITED', message, ((window + 1) * windowMs - now) / 1000);
}

function unauthorized(code: string, message: string): HttpError {
  return new HttpError(401, code, message, {}, { 'WWW-Authenticate': 'Bearer' });
}
