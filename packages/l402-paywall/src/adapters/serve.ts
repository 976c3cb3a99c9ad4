// The one step after a paid request's handler, shared by every adapter
// (withL402 for Web handlers, l402Middleware for Node/Express, the Hono
// middleware), so that a paid request ends the same whichever door it came in:
// - every answer to it is for the payer alone: Cache-Control: no-store;
// - a Payment credential's answer carries its Payment-Receipt below 400 only,
//   never on an error;
// - a handler that failed (threw, or answered 5xx) gives the use back, so the
//   payer can retry with the same credential;
// - an answer that went out (below 500) is reported: the audit event, the
//   session's spend (`served`), then onPaid, not awaited, once, its errors to onError.
// An adapter only translates its framework's request and answer to these calls.
import { PAYMENT_RECEIPT_HEADER } from '../schemes/payment/charge.js';
import { buildPaywall } from '../paywall/assemble.js';
import { type L402Options, type MissingSetting, logError } from '../paywall/options.js';
import type { Decision, Paid, Payment } from '../core/decision.js';
import { type LoadAuditBuilder, type PaywallAudit, paywallAudit } from './audit.js';

// A private symbol on the Request rather than a WeakMap: no ephemeron for the
// garbage collector to trace per paid request. It holds the decision, whose
// payment is made only if a handler asks.
const PAID = Symbol('l402.paid');

/** The paid request behind a request that reached a paywalled handler (withL402, l402Middleware's onPaid, or the Hono middleware's c.req.raw). */
export function getPaidRequest(request: Request): Payment | undefined {
  return (request as { [PAID]?: Paid })[PAID]?.payment;
}

/** The paywall in front of an adapter, and the step after its handler. */
export interface PaywallGate {
  readonly serve: ServeStep;
  /** The clock reading a request's audit events measure from; 0 (no clock read) when no events are built. */
  start(): number;
  /**
   * The paywall's decision on a request: a refusal, already reported to the
   * audit events, for the adapter to write; or the paid decision, marked on
   * the request for getPaidRequest. Synchronous when the paywall decides so
   * (a fixed-price route and a store with a synchronous claim).
   */
  admit(request: Request, startedAt: number): Decision | Promise<Decision>;
}

/** Every adapter's paywall: built once from the options (`missing`: managed mode's settings that are not set). */
export function paywallGate(options: L402Options, loadAuditBuilder: LoadAuditBuilder, missing: readonly MissingSetting[] = []): PaywallGate {
  const paywall = buildPaywall(options, missing);
  // Undefined without onEvent: then no clock is read and no event is built.
  const audit = paywallAudit(options, options.onError ?? logError, loadAuditBuilder);
  const admitted = (request: Request, decision: Decision, startedAt: number): Decision => {
    if (decision.kind === 'refused') audit?.refused(request, decision, startedAt);
    else (request as { [PAID]?: Paid })[PAID] = decision;
    return decision;
  };
  return {
    serve: serveStep(options, audit),
    start: () => (audit ? performance.now() : 0),
    admit(request, startedAt) {
      const decided = paywall.decideNow(request);
      return decided instanceof Promise ? decided.then((decision) => admitted(request, decision, startedAt)) : admitted(request, decided, startedAt);
    },
  };
}

export const PAID_CACHE_CONTROL = 'no-store';

/** The Payment-Receipt an answer with `status` carries: a Payment credential's, and only below 400. */
export function receiptFor(paid: Paid, status: number): string | undefined {
  return status < 400 ? paid.receipt : undefined;
}

/** A handler that answers 5xx failed: the use is given back, as when it throws. */
export function handlerFailed(status: number): boolean {
  return status >= 500;
}

export interface ServeStep {
  /** The handler threw: the use is given back (resolves after the first try; never throws). */
  failed(paid: Paid): Promise<void>;
  /**
   * The handler's answer, for adapters that hold it (Web handlers, Hono): a
   * failed one (5xx) gives the use back; any other gets the paid headers
   * (copied into a new Response when its headers are immutable, as fetch()'s
   * are) and is reported served. Synchronous unless the use is given back.
   */
  answer(request: Request, paid: Paid, response: Response, startedAt: number): Response | Promise<Response>;
  /**
   * The answer went out with `status` (Node: the response's 'finish'); its
   * headers were set by the adapter as `receiptFor` says. `response` is what
   * onPaid is handed, made only if there is an onPaid.
   */
  finished(request: Request, paid: Paid, status: number, startedAt: number, response: () => Response): void;
}

export function serveStep(options: L402Options, audit: PaywallAudit | undefined): ServeStep {
  const onPaid = options.onPaid;
  const onError = options.onError ?? logError;

  const served = (request: Request, paid: Paid, status: number, startedAt: number, response: Response | (() => Response)) => {
    audit?.served(request, paid, status, startedAt);
    paid.served?.();
    if (onPaid) {
      Promise.resolve()
        .then(() => onPaid(paid.payment, request, typeof response === 'function' ? response() : response))
        .catch((error) => onError(error, 'onPaid failed'));
    }
  };

  return {
    failed: (paid) => paid.release(),
    answer(request, paid, response, startedAt) {
      const status = response.status;
      if (handlerFailed(status)) return paid.release().then(() => withPaidHeaders(response, undefined));
      const answered = withPaidHeaders(response, receiptFor(paid, status));
      served(request, paid, status, startedAt, answered);
      return answered;
    },
    finished(request, paid, status, startedAt, response) {
      if (handlerFailed(status)) void paid.release();
      else served(request, paid, status, startedAt, response);
    },
  };
}

/** Cache-Control: no-store and the receipt if any; a response from fetch() has immutable headers, so it is copied when setting fails. */
function withPaidHeaders(response: Response, receipt: string | undefined): Response {
  try {
    setPaidHeaders(response.headers, receipt);
    return response;
  } catch {
    const copy = new Response(response.body, response);
    setPaidHeaders(copy.headers, receipt);
    return copy;
  }
}

function setPaidHeaders(headers: Headers, receipt: string | undefined): void {
  headers.set('Cache-Control', PAID_CACHE_CONTROL);
  if (receipt !== undefined) headers.set(PAYMENT_RECEIPT_HEADER, receipt);
}
