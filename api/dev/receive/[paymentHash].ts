import { createDevReceiveHandler } from 'l402-paywall/backends';
import { serviceRoute } from '../../../lib/service/deployment.js';
import { devWalletNode } from '../../../lib/service/dev-wallet.js';

/** GET: whether the dev node's invoice with this payment hash was paid, and how much. */
export default serviceRoute({
  GET: (request, deployment) => createDevReceiveHandler(devWalletNode(deployment, '/api/dev/receive'))(request),
});
