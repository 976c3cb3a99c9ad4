// The live demo: a 1-sat paywalled BTC price, and the preimage hand-back for
// payers whose wallet does not show it (GET /api/demo/preimage).
import { HttpError, json } from '../http/errors.js';
import { waitUntil as vercelWaitUntil } from '@vercel/functions';
import { withL402 } from 'l402-paywall';
import type { InvoiceProvider } from 'l402-paywall';
import { clientIp } from '../http/input.js';
import { invoiceLimit } from './money/invoices.js';
import { servicePriceFeed } from './records/price.js';
import { providerUnavailable } from './money/provider-errors.js';
import { servicePaymentLog } from './records/payment-log.js';
import type { ServiceContext } from './context.js';

export const DEMO_ROUTE = '/api/demo/btc-price';
const demoInvoiceKey = (hash: string) => `demo:invoice:${hash}`;

const handlers = new WeakMap<ServiceContext, (request: Request) => Promise<Response>>();

/** The paywalled handler, built once per service context. */
export function demoBtcPrice(ctx: ServiceContext): (request: Request) => Promise<Response> {
  let handler = handlers.get(ctx);
  if (!handler) {
    const feed = servicePriceFeed(ctx);
    // Remember which invoices are the demo's, so only those preimages are handed back.
    const provider: InvoiceProvider = {
      async createInvoice(request) {
        const created = await ctx.provider.createInvoice(request);
        await ctx.store.set(demoInvoiceKey(created.paymentHash), '1', { ttlMs: ((request.expirySeconds ?? 3600) + 86_400) * 1000 });
        return created;
      },
    };
    handler = withL402(async () => json(await feed.current()), {
      priceSats: ctx.config.demo.priceSats,
      provider,
      secret: ctx.keyring,
      replayStore: ctx.replay,
      tokenTtlSeconds: ctx.config.l402.tokenTtlSeconds,
      route: DEMO_ROUTE,
      memo: () => 'L402 demo: live BTC price',
      // Logged after the answer, never delaying it; absent without a database.
      onPaid: servicePaymentLog(ctx)?.onPaid,
      // Every 402 makes (and stores) an invoice: the same per-client budget as POST /api/invoice.
      limitInvoices: (request) => invoiceLimit(ctx, clientIp(request)),
      // A use given back after the store failed is retried after the answer: on Vercel the function stays up for it.
      waitUntil: vercelWaitUntil,
      // Signed audit events, only when the operator set a webhook (lib/service/events.ts).
      ...ctx.events?.paywall,
    });
    handlers.set(ctx, handler);
  }
  return handler;
}

export async function demoPreimage(ctx: ServiceContext, paymentHash: string): Promise<Response> {
  if ((await ctx.store.get(demoInvoiceKey(paymentHash))) === null) {
    throw new HttpError(404, 'UNKNOWN_INVOICE', 'No demo invoice has this payment hash');
  }
  let status;
  try {
    status = await ctx.provider.lookupInvoice(paymentHash);
  } catch (error) {
    throw providerUnavailable(error);
  }
  if (!status) throw new HttpError(404, 'UNKNOWN_INVOICE', 'No demo invoice has this payment hash');
  if (!status.settled || !status.preimage) {
    return json(
      { status: 'pending', paymentHash, message: 'Invoice not paid yet; poll again in a second' },
      { status: 202, headers: { 'Retry-After': '1', 'Cache-Control': 'no-store' } },
    );
  }
  return json({ preimage: status.preimage, paymentHash }, { headers: { 'Cache-Control': 'no-store' } });
}
