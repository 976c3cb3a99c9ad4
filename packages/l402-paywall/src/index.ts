// `l402-paywall`: the edge-safe core (Web APIs and @noble only).
import { paywallFetchHandler } from './adapters/fetch.js';
import { loadServerAudit } from './events/load-builder.js';
import type { L402Options } from './paywall/options.js';

export * from './paywall/index.js';
export { getPaidRequest, getPayment } from './adapters/fetch.js';

/** Wraps a Web-standard handler in the paywall; with `onEvent` set, its audit events are built by events/server.ts. */
export function withL402<Rest extends unknown[]>(
  handler: (request: Request, ...rest: Rest) => Response | Promise<Response>,
  options: L402Options,
): (request: Request, ...rest: Rest) => Promise<Response> {
  return paywallFetchHandler(handler, options, loadServerAudit);
}
