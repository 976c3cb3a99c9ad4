// The embedded dev node's wallet routes (/api/dev/pay, /api/dev/receive): they
// mint and move fake money, so they exist only with the dev node and never in
// production.
import type { DevNode } from 'l402-paywall/backends';
import { HttpError } from '../http/errors.js';
import type { Deployment } from './deployment.js';

/** The dev node behind the dev wallet routes, or 404 NOT_FOUND naming `route`. */
export function devWalletNode(deployment: Deployment, route: string): DevNode {
  const config = deployment.config();
  const devNode = config.production || config.lightning.provider !== 'dev' ? undefined : deployment.context().devNode;
  if (!devNode) throw new HttpError(404, 'NOT_FOUND', `No dev wallet here: ${route} exists only with the embedded dev node outside production`);
  return devNode;
}
