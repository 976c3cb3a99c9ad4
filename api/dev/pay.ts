import { createDevPayHandler } from 'l402-paywall/backends';
import { HttpError } from '../../lib/http/errors.js';
import { BODY_TIMEOUT_MS } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';

export default serviceRoute({
  POST(request, deployment) {
    const config = deployment.config();
    // Only the embedded dev node, and never in production, has a wallet that mints money.
    const devNode = config.production || config.lightning.provider !== 'dev' ? undefined : deployment.context().devNode;
    if (!devNode) throw new HttpError(404, 'NOT_FOUND', 'No dev wallet here: /api/dev/pay exists only with the embedded dev node outside production');
    return createDevPayHandler(devNode, { bodyTimeoutMs: BODY_TIMEOUT_MS })(request);
  },
});
