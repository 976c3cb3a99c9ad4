// The service's own Lightning Addresses (LUD-16 -> LUD-06, LUD-12):
// GET /.well-known/lnurlp/<username> answers a payRequest; the same URL with
// ?amount=<msat>[&comment=] is the callback and answers an invoice whose
// description hash commits to the metadata, so the payer can check it.
// Errors are LUD-06 `{status:"ERROR", reason}` bodies, which also carry the
// service's usual `{error, code}`.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';
import { HttpError } from '../../http/errors.js';
import type { ServiceContext } from '../context.js';
import { invoiceLimit } from './invoices.js';
import { providerUnavailable } from './provider-errors.js';

export const LNURLP_MIN_SENDABLE_MSAT = 1000;
/** LUD-12: comments are accepted up to this length; kept only by the dev node's addresses (GET /api/dev/inbox). */
export const LNURLP_COMMENT_ALLOWED = 140;
const INVOICE_EXPIRY_SECONDS = 600;

export interface PayRequest {
  tag: 'payRequest';
  callback: string;
  minSendable: number;
  maxSendable: number;
  metadata: string;
  commentAllowed: number;
}

export interface PayCallbackAnswer {
  pr: string;
  routes: [];
}

const Username = z
  .string()
  .toLowerCase()
  .regex(/^[a-z0-9\-_.]{1,64}$/);

function lnurlError(status: number, code: string, reason: string): HttpError {
  return new HttpError(status, code, reason, { status: 'ERROR', reason });
}

/**
 * One entry point for both LUD-06 steps. `requestUrl` is the URL the client used:
 * its origin names the address's domain. The callback is always the function's
 * own path `/api/lnurlp/<name>`, so paying works even where the host serves
 * `/.well-known` some other way (a static file: docs/managed-mode.md).
 */
export async function answerLnurlp(
  ctx: ServiceContext,
  requestUrl: string,
  query: Record<string, string | undefined>,
  clientIp: string,
): Promise<PayRequest | PayCallbackAnswer> {
  const username = servedUsername(ctx, query.username);
  const url = new URL(requestUrl);
  const metadata = payMetadata(username, url.host);
  const maxSendable = ctx.config.invoices.maxSats * 1000;
  if (query.amount === undefined) {
    return {
      tag: 'payRequest',
      callback: `${url.origin}/api/lnurlp/${encodeURIComponent(username)}`,
      minSendable: LNURLP_MIN_SENDABLE_MSAT,
      maxSendable,
      metadata,
      commentAllowed: LNURLP_COMMENT_ALLOWED,
    };
  }
  // The callback makes an invoice: the per-client budget of every invoice route.
  const limited = await invoiceLimit(ctx, clientIp);
  if (limited) {
    throw new HttpError(
      429,
      'RATE_LIMITED',
      limited.message,
      { status: 'ERROR', reason: limited.message, retryAfter: Math.max(1, Math.ceil(limited.retryAfterSeconds)) },
      { 'Retry-After': String(Math.max(1, Math.ceil(limited.retryAfterSeconds))) },
    );
  }
  const amountMsat = /^\d{1,16}$/.test(query.amount) ? Number(query.amount) : NaN;
  if (!Number.isSafeInteger(amountMsat) || amountMsat < LNURLP_MIN_SENDABLE_MSAT || amountMsat > maxSendable) {
    throw lnurlError(400, 'AMOUNT_OUT_OF_RANGE', `amount must be an integer number of millisatoshis from ${LNURLP_MIN_SENDABLE_MSAT} to ${maxSendable}`);
  }
  if (query.comment !== undefined && query.comment.length > LNURLP_COMMENT_ALLOWED) {
    throw lnurlError(400, 'COMMENT_TOO_LONG', `comment must be at most ${LNURLP_COMMENT_ALLOWED} characters`);
  }
  let created;
  try {
    // The metadata goes along as memo: Core Lightning can only commit to the hash of a text it is given.
    created = await ctx.provider.createInvoice({
      amountMsat,
      memo: metadata,
      descriptionHash: bytesToHex(sha256(utf8ToBytes(metadata))),
      expirySeconds: INVOICE_EXPIRY_SECONDS,
    });
  } catch (error) {
    const unavailable = providerUnavailable(error);
    throw new HttpError(
      unavailable.status,
      unavailable.code,
      unavailable.message,
      { ...unavailable.extra, status: 'ERROR', reason: unavailable.message },
      unavailable.headers,
    );
  }
  if (ctx.devNode)
    await rememberDevPayment(ctx, `${username}@${url.host.toLowerCase()}`, { paymentHash: created.paymentHash, amountMsat, comment: query.comment ?? null });
  return { pr: created.invoice, routes: [] };
}

// --- Development only: the dev node's Lightning Addresses keep what was sent to them ---
// Locally, these addresses are where payouts and link codes (POST /api/links) go;
// GET /api/dev/inbox shows them, comments included, so a link can be completed
// without a real wallet. Never with a real backend or in production (ctx.devNode is absent there).

export interface DevInboxEntry {
  paymentHash: string;
  amountMsat: number;
  comment: string | null;
  createdAt: string;
}

const DEV_INBOX_SIZE = 50;
const devInboxKey = (address: string) => `dev:inbox:${address}`;

async function rememberDevPayment(ctx: ServiceContext, address: string, entry: Omit<DevInboxEntry, 'createdAt'>): Promise<void> {
  // Read-modify-write is fine for one local process; the newest entries are kept.
  const entries = await devInbox(ctx, address);
  entries.unshift({ ...entry, createdAt: new Date().toISOString() });
  await ctx.store.set(devInboxKey(address), JSON.stringify(entries.slice(0, DEV_INBOX_SIZE)), { ttlMs: 7 * 86_400_000 });
}

async function devInbox(ctx: ServiceContext, address: string): Promise<DevInboxEntry[]> {
  const raw = await ctx.store.get(devInboxKey(address));
  return raw === null ? [] : (JSON.parse(raw) as DevInboxEntry[]);
}

/** What arrived at one of the dev node's addresses, newest first: only the invoices that were paid. */
export async function paidToDevAddress(ctx: ServiceContext, address: string): Promise<Array<DevInboxEntry & { paidAt?: string }>> {
  const devNode = ctx.devNode;
  if (!devNode) throw new HttpError(404, 'NOT_FOUND', 'No dev inbox here: it exists only with the embedded dev node outside production');
  const paid = [];
  for (const entry of await devInbox(ctx, address.toLowerCase())) {
    if ((await devNode.lookupInvoice(entry.paymentHash))?.settled) paid.push(entry);
  }
  return paid;
}

/** LUD-06 metadata: a text/plain description and (LUD-16) the address itself. */
export function payMetadata(username: string, host: string): string {
  const address = `${username}@${host.toLowerCase()}`;
  return JSON.stringify([
    ['text/plain', `Payment to ${address}`],
    ['text/identifier', address],
  ]);
}

function servedUsername(ctx: ServiceContext, raw: string | undefined): string {
  const parsed = Username.safeParse(raw);
  const allowed = ctx.config.lnurlp.usernames;
  if (!parsed.success || (allowed !== null && !allowed.includes(parsed.data))) {
    throw lnurlError(404, 'UNKNOWN_USER', 'No Lightning Address with this username here');
  }
  return parsed.data;
}
