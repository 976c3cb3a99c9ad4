// GET /api/stats (api/stats.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const Query = z.object({
  format: z.enum(['json', 'csv'], { error: 'format must be json or csv' }).default('json'),
});

export const contract = routeContract('/api/stats', {
  GET: {
    summary: 'Paid-call statistics',
    tags: ['dashboard'],
    security: ['login'],
    query: Query,
    responses: {
      200: { description: 'Statistics (JSON), or CSV with format=csv (Pro)', schema: z.object({}).loose() },
      403: { description: 'PRO_REQUIRED for CSV', schema: loose({ error: z.string(), code: z.string() }) },
    },
  },
});
