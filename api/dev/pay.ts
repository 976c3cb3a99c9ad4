import { createDevPayHandler, DevPayRequest } from 'l402-paywall/backends';
import { BODY_TIMEOUT_MS } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { devWalletNode } from '../../lib/service/dev-wallet.js';

/** The request body (api/openapi.json.ts describes it): the library's dev wallet endpoint is this route's one implementation. */
export const Body = DevPayRequest;

export default serviceRoute({
  POST: (request, deployment) => createDevPayHandler(devWalletNode(deployment, '/api/dev/pay'), { bodyTimeoutMs: BODY_TIMEOUT_MS })(request),
});
