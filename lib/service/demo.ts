// The live demo: a 1-sat paywalled BTC price, sold by the request and by the
// prepaid session (docs/sessions.md), a stream metered per chunk on a session,
// and the preimage hand-back for payers of the 1-sat charge whose wallet does
// not show it (GET /api/demo/preimage); never a session deposit's or top-up's
// preimage, which with the session's opening challenge is the session's key.
import { HttpError, json } from '../http/errors.js';
import { waitUntil as vercelWaitUntil } from '@vercel/functions';
import { getPayment, withL402, type InvoiceProvider, type L402Options, type SessionSeller } from 'l402-paywall';
import { canRefund, EVENT_STREAM_HEADERS, lightningSessions, meteredEventStream, type LightningProvider } from 'l402-paywall/lightning';
import { readQuery } from '../http/input.js';
import { StreamQuery } from './demo-stream-query.js';
import { clientIp } from '../http/input.js';
import { invoiceLimit } from './money/invoices.js';
import { servicePriceFeed } from './records/price.js';
import { providerUnavailable } from './money/provider-errors.js';
import { servicePaymentLog } from './records/payment-log.js';
import { sessionLogObserver } from './session-observer.js';
import { servicePart, type ServiceContext } from './context.js';
import type { PaymentOffer } from '../http/openapi.js';

export const DEMO_ROUTE = '/api/demo/btc-price';
export const DEMO_STREAM_ROUTE = '/api/demo/stream';
const demoInvoiceKey = (hash: string) => `demo:invoice:${hash}`;
/** The memo of the demo's 1-sat charge invoices: the only ones whose preimage is handed back (a session's deposit memo says so). */
const DEMO_CHARGE_MEMO = 'L402 demo: live BTC price';
/** What an invoice the demo made is, in its record: only a charge's preimage is handed back. */
type DemoInvoiceKind = 'charge' | 'deposit';
// Every 402 makes invoices, most never paid: their marks go soon after they expire, not a day
// later. A payer has the invoice's life to pay and this long after to fetch the preimage.
const DEMO_PREIMAGE_GRACE_SECONDS = 600;

interface DemoHandlers {
  btcPrice: (request: Request) => Promise<Response>;
  stream: (request: Request) => Promise<Response>;
  sale: DemoSale;
}

/** What the demo sells with, shared by its HTTP routes and its MCP tools (lib/service/demo-mcp.ts): one provider, one session seller. */
export interface DemoSale {
  /** The paywall options of a route sold under `route`, its invoices described by `memo`. */
  options(route: string, memo: string): Omit<L402Options, 'priceSats'>;
  /** The 1-sat charge's memo: its invoices' preimages are handed back (GET /api/demo/preimage). */
  chargeMemo: string;
  /** Undefined on a backend that cannot refund sessions. */
  session: SessionSeller | undefined;
}

/** The demo's provider, options and sessions, built once per service context. */
export function demoSale(ctx: ServiceContext): DemoSale {
  return demoHandlers(ctx).sale;
}

/** The paywalled BTC price, sold by the request and by the session; built once per service context. */
export function demoBtcPrice(ctx: ServiceContext): (request: Request) => Promise<Response> {
  return demoHandlers(ctx).btcPrice;
}

/** GET /api/demo/stream: `chunks` Server-Sent Events, each one unit of a prepaid session (the route sells nothing else). */
export function demoStream(ctx: ServiceContext): (request: Request) => Promise<Response> {
  return demoHandlers(ctx).stream;
}

const demoHandlers = (ctx: ServiceContext): DemoHandlers => ctx.part(builtDemoHandlers);

const builtDemoHandlers = servicePart('demo handlers', (ctx): DemoHandlers => {
  const feed = servicePriceFeed(ctx);
  const provider = demoProvider(ctx);
  const sold = (route: string, memo: string): Omit<L402Options, 'priceSats'> => ({
    provider,
    secret: ctx.keyring,
    replayStore: ctx.replay,
    tokenTtlSeconds: ctx.config.l402.tokenTtlSeconds,
    route,
    // From configuration (the public origin's host name), never from the request's Host header.
    ...(ctx.realm !== undefined && { realm: ctx.realm }),
    memo: () => memo,
    // Logged after the answer, never delaying it; absent without a database.
    onPaid: servicePaymentLog(ctx)?.onPaid,
    // Every 402 makes (and stores) an invoice: the same per-client budget as POST /api/invoice.
    limitInvoices: (request: Request) => invoiceLimit(ctx, clientIp(request)),
    // A use given back after the store failed is retried after the answer: on Vercel the function stays up for it.
    waitUntil: vercelWaitUntil,
    onError: (error: unknown, context: string) => console.error(`[demo] ${context}: ${error instanceof Error ? error.message : String(error)}`),
    // Signed audit events, only when the operator set a webhook (lib/service/events.ts).
    ...ctx.events?.paywall,
  });
  const session = demoSessions(ctx, provider);
  return {
    btcPrice: withL402(async () => json(await feed.current()), {
      ...sold(DEMO_ROUTE, DEMO_CHARGE_MEMO),
      priceSats: ctx.config.demo.priceSats,
      ...(session && { session }),
    }),
    stream: session ? demoStreamHandler(ctx, sold(DEMO_STREAM_ROUTE, 'L402 demo: metered stream'), session) : streamUnavailable(ctx),
    sale: { options: sold, chargeMemo: DEMO_CHARGE_MEMO, session },
  };
});

/** Sold by the session only: a bad query is refused before the paywall, so it costs nothing. */
function demoStreamHandler(ctx: ServiceContext, options: Omit<L402Options, 'priceSats'>, session: SessionSeller): (request: Request) => Promise<Response> {
  const paywalled = withL402(
    (request) => {
      const paid = getPayment(request)?.session;
      // withL402 serves this route only to a session (no charge is offered), so paid is always there.
      if (!paid) throw new HttpError(402, 'SESSION_REQUIRED', 'This stream is sold by the prepaid session only');
      const { chunks } = readQuery(request, StreamQuery);
      return new Response(meteredEventStream(paid, demoChunks(chunks, ctx.config.demo.streamIntervalMs)), { headers: EVENT_STREAM_HEADERS });
    },
    { ...options, priceSats: ctx.config.demo.priceSats, schemes: { l402: false, payment: false }, session },
  );
  return (request) => {
    readQuery(request, StreamQuery);
    return paywalled(request);
  };
}

const streamUnavailable = (ctx: ServiceContext) => async (): Promise<Response> => {
  throw new HttpError(503, 'SESSIONS_UNAVAILABLE', `The ${ctx.provider.name} backend cannot refund prepaid sessions, so the demo stream is off`);
};

/**
 * The service's provider, remembering which invoices are the demo's and
 * which of those are the 1-sat charge's, so only those preimages are handed
 * back; and still paying amountless invoices for the sessions' refunds. A
 * session's deposits and top-ups are made with the seller's own memo (never
 * the charge's) and recorded apart: their preimages are never handed out,
 * since the session id is public and, were the binding to the opening
 * challenge ever lost, the preimage would be all a stranger needs
 * (docs/sessions.md). A visitor whose wallet hides the preimage pays the
 * charge, not a session.
 */
function demoProvider(ctx: ServiceContext): InvoiceProvider & Pick<LightningProvider, 'name' | 'lookupPayment' | 'payAmountlessInvoice' | 'noRoutingFee'> {
  const backend = ctx.provider;
  return {
    name: backend.name,
    // The dev node routes nothing: its refunds are paid whole (a fee-charging backend's are paid less the fee limit).
    ...(backend.noRoutingFee === true && { noRoutingFee: true }),
    async createInvoice(request) {
      const created = await backend.createInvoice(request);
      const kind: DemoInvoiceKind = request.memo === DEMO_CHARGE_MEMO ? 'charge' : 'deposit';
      await ctx.store.set(demoInvoiceKey(created.paymentHash), kind, { ttlMs: ((request.expirySeconds ?? 3600) + DEMO_PREIMAGE_GRACE_SECONDS) * 1000 });
      return created;
    },
    lookupPayment: (paymentHash) => backend.lookupPayment(paymentHash),
    ...(canRefund(backend) && { payAmountlessInvoice: (request) => backend.payAmountlessInvoice(request) }),
  };
}

/** Whether the demo sells prepaid sessions (and so its stream): only on a backend that can refund them. */
export function demoSellsSessions(ctx: ServiceContext): boolean {
  return canRefund(ctx.provider);
}

/**
 * How the demo's routes are sold, as their 402s ask (OpenAPI `x-payment-info`):
 * the price a charge, and with sessions on the unit price of a session, in sats.
 */
export function demoPaymentOffers(ctx: ServiceContext): Record<string, PaymentOffer[]> {
  const amount = String(ctx.config.demo.priceSats);
  const charge: PaymentOffer = { method: 'lightning', intent: 'charge', amount, currency: 'sat' };
  const session: PaymentOffer[] = demoSellsSessions(ctx) ? [{ method: 'lightning', intent: 'session', amount, currency: 'sat' }] : [];
  return { [DEMO_ROUTE]: [charge, ...session], [DEMO_STREAM_ROUTE]: session };
}

/** The demo's sessions: one unit = DEMO_PRICE_SATS; none (said once) on a backend that cannot refund. */
function demoSessions(ctx: ServiceContext, provider: InvoiceProvider): SessionSeller | undefined {
  if (!demoSellsSessions(ctx)) {
    console.warn(`[demo] prepaid sessions are off: the ${ctx.provider.name} backend cannot pay invoices without an amount (refunds)`);
    return undefined;
  }
  const seller = lightningSessions({
    unitPriceSats: ctx.config.demo.priceSats,
    depositUnits: ctx.config.demo.sessionDepositUnits,
    ledger: ctx.sessions,
    // Deposits, top-ups, spending and refunds in the payment log: a request a session serves is not a payment (onPaid skips it).
    // Their audit events leave through the paywall's onEvent (ctx.events.paywall), once.
    onSession: sessionLogObserver(ctx),
  });
  seller.check(provider);
  return seller;
}

/** The stream's text, a word per chunk, `intervalMs` apart: what an LLM's tokens look like on the wire. */
async function* demoChunks(count: number, intervalMs: number): AsyncGenerator<string> {
  for (let index = 0; index < count; index++) {
    if (index > 0 && intervalMs > 0) await new Promise((resolve) => setTimeout(resolve, intervalMs));
    yield JSON.stringify({ chunk: index + 1, of: count, word: STREAM_WORDS[index % STREAM_WORDS.length] });
  }
}

const STREAM_WORDS =
  'Pay once, then spend a satoshi per chunk of this stream; top up when it runs dry, and get back what you did not spend when you close.'.split(' ');

export async function demoPreimage(ctx: ServiceContext, paymentHash: string): Promise<Response> {
  const kind = await ctx.store.get(demoInvoiceKey(paymentHash));
  if (kind === 'deposit')
    throw new HttpError(
      403,
      'SESSION_DEPOSIT',
      "A prepaid session's deposit or top-up: its preimage is never handed out here (it is part of the session's key); your wallet shows it once paid",
    );
  // Only a charge's record: one kept by an older version (any other value) may be a deposit's.
  if (kind !== 'charge') throw new HttpError(404, 'UNKNOWN_INVOICE', 'No demo invoice has this payment hash');
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
