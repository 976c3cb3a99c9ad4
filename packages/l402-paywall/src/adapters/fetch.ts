// The paywall around a Web-standard handler (Next.js route handlers, Vercel
// functions, Bun, Deno, Workers): what the package's withL402 is.
import type { L402Options, MissingSetting } from '../paywall/options.js';
import type { Payment } from '../core/decision.js';
import { refusalResponse } from '../core/refusals.js';
import type { LoadAuditBuilder } from './audit.js';
import { getPaidRequest, paywallGate } from './serve.js';

export { getPaidRequest };

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
  const { serve, start, admit } = paywallGate(options, loadAuditBuilder, missing);

  return async (request, ...rest) => {
    const startedAt = start();
    const admitted = admit(request, startedAt);
    // A paid request to a fixed-price route is decided synchronously: no await.
    const decision = admitted instanceof Promise ? await admitted : admitted;
    if (decision.kind === 'refused') return refusalResponse(decision);

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
