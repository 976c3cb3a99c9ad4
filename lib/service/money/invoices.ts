// POST /api/invoice: an invoice and a signed token for `amountSats`, rate
// limited per client, for managed-mode clients and anyone without a node.
import { retryLater, HttpError } from '../../http/errors.js';
import { mintToken } from 'l402-paywall';
import type { ServiceContext } from '../context.js';
import { rememberOwner } from './managed.js';
import { providerUnavailable } from './provider-errors.js';

export interface IssuedInvoice {
  paymentRequest: string;
  paymentHash: string;
  macaroon: string;
  expiresAt: string;
}

/**
 * One budget per client IP for every route that makes an invoice (POST
 * /api/invoice, GET /api/dev-token, each 402 of GET /api/demo/btc-price, the
 * LNURL-pay callback): INVOICE_RATE_LIMIT_PER_MINUTE, whatever the mix. Each
 * invoice is kept for its lifetime (plus a day for the demo's), so this bounds
 * what one client can make the service store and ask its backend for.
 * Undefined when allowed, else how long to wait.
 */
export async function invoiceLimit(ctx: ServiceContext, clientIp: string): Promise<{ retryAfterSeconds: number; message: string } | undefined> {
  const result = await ctx.invoiceLimiter.limit(clientIp);
  if (result.success) return undefined;
  return { retryAfterSeconds: (result.reset - Date.now()) / 1000, message: `Too many invoices: at most ${result.limit} per minute from one address` };
}

export async function enforceInvoiceRateLimit(ctx: ServiceContext, clientIp: string): Promise<void> {
  const limited = await invoiceLimit(ctx, clientIp);
  if (limited) throw retryLater(429, 'RATE_LIMITED', limited.message, limited.retryAfterSeconds);
}

export async function issueInvoice(
  ctx: ServiceContext,
  input: { amountSats: number; ownerAddress?: string; memo?: string; endpoint?: string; webhookUrl?: string },
): Promise<IssuedInvoice> {
  if (input.amountSats > ctx.config.invoices.maxSats) {
    throw new HttpError(400, 'AMOUNT_TOO_LARGE', `amountSats must be at most ${ctx.config.invoices.maxSats}`, { max: ctx.config.invoices.maxSats });
  }
  const amountMsat = input.amountSats * 1000;
  const ttl = ctx.config.l402.tokenTtlSeconds;
  let created;
  try {
    created = await ctx.provider.createInvoice({
      amountMsat,
      memo: input.memo ?? `L402 payment of ${input.amountSats} sats`,
      expirySeconds: ttl,
      ...(input.webhookUrl ? { webhookUrl: input.webhookUrl } : {}),
    });
  } catch (error) {
    throw providerUnavailable(error);
  }
  const expiresAt = Math.floor(Date.now() / 1000) + ttl;
  // Managed mode: whom this payment is for is on record before anyone can pay it (no database: 503, no invoice).
  if (input.ownerAddress) {
    await rememberOwner(ctx, { paymentHash: created.paymentHash, ownerAddress: input.ownerAddress, amountMsat, expiresAt, endpoint: input.endpoint });
  }
  const macaroon = mintToken(ctx.keyring, {
    paymentHash: created.paymentHash,
    expiresAt,
    caveats: { price_msat: amountMsat, ...(input.ownerAddress ? { owner: input.ownerAddress } : {}) },
  });
  return { paymentRequest: created.invoice, paymentHash: created.paymentHash, macaroon, expiresAt: new Date(expiresAt * 1000).toISOString() };
}
