import { createDevPayHandler } from 'l402-paywall/backends';
import { BODY_TIMEOUT_MS } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { devWalletNode } from '../../lib/service/dev-wallet.js';

export default serviceRoute({
  POST: (request, deployment) => createDevPayHandler(devWalletNode(deployment, '/api/dev/pay'), { bodyTimeoutMs: BODY_TIMEOUT_MS })(request),
});
