// Server CPU time so far (user + system, microseconds): CPU per request is
// steadier than requests per second on a shared machine. And the paywall's
// own time so far, measured inside the paid route.
import { route } from '../../../lib/http/route.js';
import { paywallTime } from './_shared.js';

export default route({
  GET: () => {
    const { user, system } = process.cpuUsage();
    return Response.json({ micros: user + system, paywallMs: paywallTime.totalMs, paidRequests: paywallTime.requests });
  },
});
