// `l402-paywall/hono`: the paywall as Hono middleware.
import { paywallHonoMiddleware, type HonoMiddleware } from './adapters/hono.js';
import { loadServerAudit } from './events/load-builder.js';
import type { L402Options } from './paywall/options.js';

export type { HonoContext, HonoMiddleware, L402Variables } from './adapters/hono.js';
export { getPaidRequest } from './adapters/fetch.js';

/**
 * `app.get('/paid', l402(options), handler)`: the handler runs paid, with the
 * payment as `c.get('l402')` (and `getPaidRequest(c.req.raw)`); onPaid, the
 * receipt and the release on failure as with withL402. With `onEvent` set, its
 * audit events are built by events/server.ts.
 */
export function l402(options: L402Options): HonoMiddleware {
  return paywallHonoMiddleware(options, loadServerAudit);
}
