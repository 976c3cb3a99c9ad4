// GET /api/health: up or down per dependency for anyone (uptime monitors);
// which backend, store and database, with latencies and errors, for an admin
// session (Authorization: Bearer). 200 when all answer, 503 (Retry-After)
// otherwise; 429 past the per-IP limit; never cached.
import { json } from '../lib/http/errors.js';
import { clientIp } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { answerHealth, HEALTH_RETRY_AFTER_SECONDS } from '../lib/service/health.js';

export default serviceRoute({
  async GET(request, deployment) {
    const report = await answerHealth(deployment, request, clientIp(request));
    const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
    if (!report.ok) headers['Retry-After'] = String(HEALTH_RETRY_AFTER_SECONDS);
    return json(report, { status: report.ok ? 200 : 503, headers });
  },
});
