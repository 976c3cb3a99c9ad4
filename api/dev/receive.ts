import { createDevReceiveHandler } from 'l402-paywall/backends';
import { BODY_TIMEOUT_MS } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { devWalletNode } from '../../lib/service/dev-wallet.js';

export default serviceRoute({
  POST: (request, deployment) => createDevReceiveHandler(devWalletNode(deployment, '/api/dev/receive'), { bodyTimeoutMs: BODY_TIMEOUT_MS })(request),
});
