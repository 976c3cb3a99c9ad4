import { createDevReceiveHandler, DevReceiveRequest } from 'l402-paywall/backends';
import { BODY_TIMEOUT_MS } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { devWalletNode } from '../../lib/service/dev-wallet.js';

/** The request body: the library's dev wallet endpoint is this route's one implementation. */
export const Body = DevReceiveRequest;

/** POST {amountSats?, memo?}: an invoice of the dev node, without an amount when none is given (a session's return invoice). */
export default serviceRoute({
  POST: (request, deployment) => createDevReceiveHandler(devWalletNode(deployment, '/api/dev/receive'), { bodyTimeoutMs: BODY_TIMEOUT_MS })(request),
});
