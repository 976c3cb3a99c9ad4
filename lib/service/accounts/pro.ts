// The Pro tier (docs/architecture.md "The hosted interface's records"): 30 days
// per paid invoice, bound to one Lightning Address. GET /api/dev-token sells,
// POST /api/dev-token activates, GET /api/pro-check answers.
//
// The token is an ordinary signed L402 token whose caveats say what was bought:
// purpose=pro, address=<lightning address>, price_msat. Its payment hash
// activates once, ever: pro_activations has it as primary key, so a replay
// fails in the database, whatever the key-value store remembers or forgets.
import { HttpError } from '../../http/errors.js';
import type { Rejection } from 'l402-paywall';
import { checkCaveats, decodeToken, mintToken, verifyToken } from 'l402-paywall';
import { providerUnavailable } from '../money/provider-errors.js';
import type { ServiceContext } from '../context.js';

export const PRO_PURPOSE = 'pro';
export const PRO_TERM_DAYS = 30;
/**
 * How long after the invoice expires a paid token still activates: a payer
 * whose activation failed (database down, network) does not lose the money.
 */
export const PRO_ACTIVATION_WINDOW_SECONDS = 7 * 86_400;

// Exactly 30 × 24 hours, not "30 days" (which moves with daylight saving in the session time zone).
const TERM = `interval '${PRO_TERM_DAYS * 24} hours'`;
const PRO_CAVEAT_KEYS = ['address', 'price_msat', 'purpose'];
/** The subject of Pro's audit events. */
const PRO_ROUTE = '/api/dev-token';

export interface ProOffer {
  priceSats: number;
  invoice: string;
  macaroon: string;
  paymentHash: string;
  /** When the invoice expires; the token activates until PRO_ACTIVATION_WINDOW_SECONDS later. */
  expiresAt: string;
}

export interface ProStatus {
  active: boolean;
  expiresAt?: string;
}

/**
 * An invoice for 30 days of Pro for `address` (normalised), and the token that
 * activates it once paid. With audit events configured, `request` (the GET)
 * is what challenge.issued describes.
 */
export async function offerPro(ctx: ServiceContext, address: string, request?: Request): Promise<ProOffer> {
  const startedAt = performance.now();
  // Do not sell what cannot be delivered: a database that does not answer is a
  // 503 before any invoice exists (a payment made anyway still has a week to activate).
  await (await ctx.database()).query('SELECT 1');
  const priceSats = ctx.config.pro.priceSats;
  const amountMsat = priceSats * 1000;
  const ttl = ctx.config.l402.tokenTtlSeconds;
  let created;
  try {
    created = await ctx.provider.createInvoice({ amountMsat, memo: `L402 Pro: ${PRO_TERM_DAYS} days for ${address}`, expirySeconds: ttl });
  } catch (error) {
    throw providerUnavailable(error);
  }
  const invoiceExpiresAt = Math.floor(Date.now() / 1000) + ttl;
  const macaroon = mintToken(ctx.keyring, {
    paymentHash: created.paymentHash,
    expiresAt: invoiceExpiresAt + PRO_ACTIVATION_WINDOW_SECONDS,
    caveats: { purpose: PRO_PURPOSE, address, price_msat: amountMsat },
  });
  const paymentHash = created.paymentHash.toLowerCase();
  if (ctx.events && request)
    ctx.events.server.challengeIssued(request, { route: PRO_ROUTE, paymentHash, amountMsat, invoice: created.invoice, startedAt, status: 200 });
  return { priceSats, invoice: created.invoice, macaroon, paymentHash, expiresAt: new Date(invoiceExpiresAt * 1000).toISOString() };
}

/**
 * Activates (or extends by 30 days from the current end) the subscription the
 * token was sold for. `address`, when the client sends one (normalised), must
 * be the token's. Refusals:
 *   400 MALFORMED_TOKEN                       not a token at all
 *   403 UNKNOWN_KEY, BAD_SIGNATURE,           not a valid proof of payment
 *       PREIMAGE_MISMATCH, TOKEN_EXPIRED
 *   403 WRONG_PURPOSE                         a valid token, but not a Pro token
 *   403 WRONG_ADDRESS                         a Pro token for another address
 *   409 ALREADY_ACTIVATED                     this payment already activated Pro
 */
export async function activatePro(
  ctx: ServiceContext,
  input: { macaroon: string; preimage: string; address?: string },
  request?: Request,
): Promise<{ access: true; expiresAt: string }> {
  const events = request && ctx.events;
  if (!events) return activate(ctx, input);
  const startedAt = performance.now();
  try {
    const activated = await activate(ctx, input);
    const token = decodeToken(input.macaroon)!; // verified by activate
    const amountMsat = Number(token.caveats.find((c) => c.startsWith('price_msat='))!.slice('price_msat='.length));
    const issuedAtSeconds = token.exp - PRO_ACTIVATION_WINDOW_SECONDS - ctx.config.l402.tokenTtlSeconds;
    events.server.requestServed(request, { route: PRO_ROUTE, paymentHash: token.hash, amountMsat, status: 200, startedAt, issuedAtSeconds });
    return activated;
  } catch (error) {
    // A refused proof of payment (not an outage: 5xx is no verdict on the token).
    if (error instanceof HttpError && error.status < 500) {
      events.server.tokenRejected(request, {
        route: PRO_ROUTE,
        reason: error.code,
        startedAt,
        claimedPaymentHash: decodeToken(input.macaroon)?.hash,
        status: error.status,
      });
    }
    throw error;
  }
}

async function activate(ctx: ServiceContext, input: { macaroon: string; preimage: string; address?: string }): Promise<{ access: true; expiresAt: string }> {
  const verified = verifyToken(ctx.keyring, input.macaroon, input.preimage);
  if (!verified.ok) throw refused(verified.rejection);
  const { hash, caveats } = verified.token;

  const values = new Map(caveats.map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)]));
  const address = values.get('address');
  const wrongPurpose = () =>
    new HttpError(403, 'WRONG_PURPOSE', 'This token was not sold for Pro; get a Pro invoice from GET /api/dev-token?address=<lightning address>');
  if (values.get('purpose') !== PRO_PURPOSE || address === undefined) throw wrongPurpose();
  // Exactly the caveats offerPro mints, each understood (a route or owner caveat means another product).
  if (caveats.length !== PRO_CAVEAT_KEYS.length || !PRO_CAVEAT_KEYS.every((k) => values.has(k))) throw wrongPurpose();
  // And well formed: sorted, each key once, a price.
  if (!checkCaveats(caveats, { priceMsat: 1, exact: { purpose: PRO_PURPOSE, address } }).ok) throw wrongPurpose();
  if (input.address !== undefined && input.address !== address) {
    throw new HttpError(403, 'WRONG_ADDRESS', 'This token was sold for another Lightning Address');
  }

  const db = await ctx.database();
  const expiresAt = await db.transaction(async (tx) => {
    const claimed = await tx.query(
      'INSERT INTO pro_activations (payment_hash, address) VALUES ($1, $2) ON CONFLICT (payment_hash) DO NOTHING RETURNING payment_hash',
      [hash, address],
    );
    if (claimed.length === 0) return null;
    const [row] = await tx.query<{ expires_at: Date | string }>(
      `INSERT INTO pro_subscriptions (address, expires_at) VALUES ($1, now() + ${TERM})
       ON CONFLICT (address) DO UPDATE SET expires_at = greatest(now(), pro_subscriptions.expires_at) + ${TERM}, updated_at = now()
       RETURNING expires_at`,
      [address],
    );
    return toIsoString(row!.expires_at);
  });
  if (expiresAt === null) {
    // A client retrying after a lost answer learns where it stands.
    const status = await proStatus(ctx, address);
    throw new HttpError(
      409,
      'ALREADY_ACTIVATED',
      'This payment has already activated Pro; each paid invoice activates once',
      status.active ? { expiresAt: status.expiresAt } : {},
    );
  }
  return { access: true, expiresAt };
}

/** `address` normalised (LightningAddress). */
export async function proStatus(ctx: ServiceContext, address: string): Promise<ProStatus> {
  const db = await ctx.database();
  const [row] = await db.query<{ expires_at: Date | string }>('SELECT expires_at FROM pro_subscriptions WHERE address = $1 AND expires_at > now()', [address]);
  return row ? { active: true, expiresAt: toIsoString(row.expires_at) } : { active: false };
}

function refused(rejection: Rejection): HttpError {
  return new HttpError(rejection.code === 'MALFORMED_TOKEN' ? 400 : 403, rejection.code, rejection.message);
}

/** Drivers give timestamptz as a Date (pg, PGlite) or as text (some Neon settings). */
function toIsoString(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}
