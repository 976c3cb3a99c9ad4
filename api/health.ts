// GET /api/health: provider, store and database in use and whether each answers.
// 200 when all do, 503 (Retry-After) otherwise; never cached.
import { json } from '../lib/http/errors.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { checkHealth, HEALTH_RETRY_AFTER_SECONDS } from '../lib/service/health.js';

export default serviceRoute({
  async GET(_request, deployment) {
    const report = await checkHealth(deployment);
    const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
    if (!report.ok) headers['Retry-After'] = String(HEALTH_RETRY_AFTER_SECONDS);
    return json(report, { status: report.ok ? 200 : 503, headers });
  },
});
