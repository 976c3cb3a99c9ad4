// `l402-paywall/express`: the paywall as Express/Connect middleware.
import { paywallNodeMiddleware } from './adapters/node.js';
import { loadServerAudit } from './events/load-builder.js';
import type { L402Options } from './paywall/options.js';

/** `app.get('/paid', l402Middleware(options), handler)`; with `onEvent` set, its audit events are built by events/server.ts. */
export function l402Middleware(options: L402Options): ReturnType<typeof paywallNodeMiddleware> {
  return paywallNodeMiddleware(options, loadServerAudit);
}
