import { json } from '../lib/http/errors.js';
import { readQuery } from '../lib/http/input.js';
import { requireLogin } from '../lib/service/accounts/auth.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { statsCsvFor } from '../lib/service/records/csv.js';
import { statsFor } from '../lib/service/records/stats.js';
import { Query } from '../lib/contracts/stats.js';

const PRIVATE = { 'Cache-Control': 'no-store' };

// GET /api/stats[?format=csv] with Authorization: Bearer <login token> -> the stats object | CSV; 400; 401; 403 (CSV, free tier); 503.
export default serviceRoute({
  async GET(request, deployment) {
    const ctx = deployment.context();
    const login = await requireLogin(ctx, request);
    const { format } = readQuery(request, Query);
    if (format === 'csv') {
      const csv = await statsCsvFor(ctx, login);
      return new Response(csv.body, {
        headers: { ...PRIVATE, 'Content-Type': 'text/csv; charset=utf-8', 'Content-Disposition': `attachment; filename="${csv.filename}"` },
      });
    }
    return json(await statsFor(ctx, login), { headers: PRIVATE });
  },
});
