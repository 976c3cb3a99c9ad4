// The paywall around a Web-standard handler (Next.js route handlers, Vercel
// functions, Bun, Deno, Workers): what the package's withL402 is.
import { buildPaywall } from '../paywall/assemble.js';
import { logError, type L402Options, type MissingSetting } from '../paywall/options.js';
import type { Paid, Payment } from '../core/decision.js';
import { refusalResponse } from '../core/refusals.js';
import { type LoadAuditBuilder, paywallAudit } from './audit.js';
import { serveStep } from './serve.js';

// A private symbol on the Request rather than a WeakMap: no ephemeron for the
// garbage collector to trace per paid request. It holds the decision, whose
// payment is made only if a handler asks.
const PAID = Symbol('l402.paid');

/** Marks `request` as paid by `paid`, for getPaidRequest: the adapters that hand the handler a Web Request call it. */
export function markPaid(request: Request, paid: Paid): void {
  (request as { [PAID]?: Paid })[PAID] = paid;
}

/** The paid request behind a request that reached a paywalled handler (withL402, or the Hono middleware's c.req.raw). */
export function getPaidRequest(request: Request): Payment | undefined {
  return (request as { [PAID]?: Paid })[PAID]?.payment;
}

/** The same as getPaidRequest (its former name), kept for code written against it. */
export const getPayment: (request: Request) => Payment | undefined = getPaidRequest;

/**
 * Wraps `handler` in the paywall. The package's withL402 (src/index.ts) and
 * managed mode's (src/managed/managed.ts) are this one handed the event
 * builder's loader; managed mode also names its settings that are not set (`missing`).
 */
export function paywallFetchHandler<Rest extends unknown[]>(
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: L402Options,
  loadAuditBuilder: LoadAuditBuilder,
  missing: readonly MissingSetting[] = [],
): (request: Request, ...rest: Rest) => Promise<Response> {
  const paywall = buildPaywall(options, missing);
  // Undefined without onEvent: then no clock is read and no event is built.
  const audit = paywallAudit(options, options.onError ?? logError, loadAuditBuilder);
  const serve = serveStep(options, audit);

  return async (request, ...rest) => {
    const startedAt = audit ? performance.now() : 0;
    const decided = paywall.decideNow(request);
    // A paid request to a fixed-price route is decided synchronously: no await.
    const decision = decided instanceof Promise ? await decided : decided;
    if (decision.kind === 'refused') {
      audit?.refused(request, decision, startedAt);
      return refusalResponse(decision);
    }

    markPaid(request, decision);
    let response: Response;
    try {
      const answer = handler(request, ...rest);
      // A handler that answers synchronously needs no trip through the microtask queue.
      response = answer instanceof Response ? answer : await answer;
    } catch (error) {
      await serve.failed(decision);
      throw error;
    }
    return serve.answer(request, decision, response, startedAt);
  };
}
