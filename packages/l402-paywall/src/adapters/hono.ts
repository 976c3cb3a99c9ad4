// The paywall as Hono middleware: `app.get('/paid', l402(options), handler)`.
// Hono hands the middleware the Web Request (c.req.raw) and keeps the
// handler's answer in c.res, so this is the Web handler's flow with Hono's
// `next()` as the handler. Typed structurally: the library imports nothing of Hono.
import type { L402Options } from '../paywall/options.js';
import type { Payment } from '../core/decision.js';
import { refusalResponse } from '../core/refusals.js';
import type { LoadAuditBuilder } from './audit.js';
import { paywallGate } from './serve.js';

/** What the middleware reads and writes of Hono's Context. */
export interface HonoContext {
  req: { raw: Request };
  res: Response | undefined;
  /** Set by Hono when a handler threw and the app's onError answered. */
  error: Error | undefined;
  // A method, so that Hono's Context, whose `set` is typed by the app's variables, fits it.
  set(key: 'l402', value: Payment): void;
}

/** The variable the middleware sets: `new Hono<{ Variables: L402Variables }>()` types `c.get('l402')`. */
export interface L402Variables {
  l402: Payment;
}

export type HonoMiddleware = (c: HonoContext, next: () => Promise<void>) => Promise<Response | undefined>;

/** The package's l402 (src/hono.ts) is this one handed the event builder's loader. */
export function paywallHonoMiddleware(options: L402Options, loadAuditBuilder: LoadAuditBuilder): HonoMiddleware {
  const { serve, start, admit } = paywallGate(options, loadAuditBuilder);
  return async (c, next) => {
    const request = c.req.raw;
    const startedAt = start();
    const admitted = admit(request, startedAt);
    const decision = admitted instanceof Promise ? await admitted : admitted;
    if (decision.kind === 'refused') return refusalResponse(decision);
    c.set('l402', decision.payment);
    try {
      await next();
    } catch (error) {
      await serve.failed(decision);
      throw error;
    }
    // Hono answers a handler's throw with the app's onError and goes on: a throw all the same.
    if (c.error !== undefined || c.res === undefined) {
      await serve.failed(decision);
      return undefined;
    }
    const handled = c.res;
    const answer = await serve.answer(request, decision, handled, startedAt);
    if (answer !== handled) {
      // Hono's setter copies the old answer's headers over a new one (its Cache-Control over no-store): clear it first.
      c.res = undefined;
      c.res = answer;
    }
    return undefined;
  };
}
