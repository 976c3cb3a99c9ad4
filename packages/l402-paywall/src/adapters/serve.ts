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
import { type L402Options, logError } from '../paywall/options.js';
import type { Paid } from '../core/decision.js';
import type { PaywallAudit } from './audit.js';

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
