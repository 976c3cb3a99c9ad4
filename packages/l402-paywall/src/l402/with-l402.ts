// withL402: wraps any Web-standard handler (Next.js route handlers, Vercel
// functions, Hono, Bun, Deno, Workers) in the paywall.
import type { Paid, Payment } from '../core/decision.js';
import { refusalResponse } from '../core/refusals.js';
import { buildPaywall } from '../paywall/assemble.js';
import { logError, type L402Options, type MissingSetting } from '../paywall/options.js';
import { paywallAudit, type LoadAuditBuilder } from './audit.js';
import { PAYMENT_RECEIPT_HEADER } from '../schemes/payment/charge.js';

// A private symbol on the Request rather than a WeakMap: no ephemeron for the
// garbage collector to trace per paid request. It holds the decision, whose
// payment is made only if a handler asks.
const PAID = Symbol('l402.paid');

/** The payment behind a request that reached a withL402 handler. */
export function getPayment(request: Request): Payment | undefined {
  return (request as { [PAID]?: Paid })[PAID]?.payment;
}

/**
 * The package's withL402 (src/index.ts) is this one handed the event builder's
 * loader; managed mode also names its settings that are not set (`missing`).
 */
export function withL402<Rest extends unknown[]>(
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: L402Options,
  loadAuditBuilder: LoadAuditBuilder,
  missing: readonly MissingSetting[] = [],
): (request: Request, ...rest: Rest) => Promise<Response> {
  const paywall = buildPaywall(options, missing);
  const onError = options.onError ?? logError;
  // Undefined without onEvent: then no clock is read and no event is built.
  const audit = paywallAudit(options, onError, loadAuditBuilder);

  return async (request, ...rest) => {
    const startedAt = audit ? performance.now() : 0;
    const decided = paywall.decideNow(request);
    // A paid request to a fixed-price route is decided synchronously: no await.
    const decision = decided instanceof Promise ? await decided : decided;
    if (decision.kind === 'refused') {
      audit?.refused(request, decision, startedAt);
      return refusalResponse(decision);
    }

    (request as { [PAID]?: Paid })[PAID] = decision;
    let response: Response;
    try {
      const answer = handler(request, ...rest);
      // A handler that answers synchronously needs no trip through the microtask queue.
      response = answer instanceof Response ? answer : await answer;
    } catch (error) {
      await decision.release();
      throw error;
    }
    if (response.status >= 500) {
      await decision.release();
      return response;
    }
    // A paid answer is for the payer alone; a Payment credential's success answer carries its receipt.
    response = paidHeaders(response, response.status < 400 ? decision.receipt : undefined);
    audit?.served(request, decision, response.status, startedAt);
    decision.served?.();
    if (options.onPaid) {
      const paid = response;
      Promise.resolve()
        .then(() => options.onPaid!(decision.payment, request, paid))
        .catch((error) => onError(error, 'onPaid failed'));
    }
    return response;
  };
}

// Cache-Control: no-store, and the Payment-Receipt if any. Responses from
// fetch() have immutable headers, so copy when setting fails.
function paidHeaders(response: Response, receipt: string | undefined): Response {
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
  headers.set('Cache-Control', 'no-store');
  if (receipt !== undefined) headers.set(PAYMENT_RECEIPT_HEADER, receipt);
}
