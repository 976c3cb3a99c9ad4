// GET /api/health (api/health.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { isoTime, loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/health', {
  GET: {
    summary: 'Health of the backend, store and database',
    description:
      'Anyone: `ok` and up or down per dependency (`provider`, `store`, `database`), plus `problems` and `missing` on a deployment that lacks settings. With an admin session (Bearer): which backend, store and database, latencies, errors and audit-event delivery; 403 ADMIN_REQUIRED for other keys. Probes are kept 10 s; HEALTH_RATE_LIMIT_PER_MINUTE per client IP (429).',
    tags: ['operations'],
    responses: {
      200: { description: 'Everything answers', schema: loose({ ok: z.boolean(), checkedAt: isoTime }) },
      503: {
        description: 'Something does not answer, or production settings are missing',
        headers: { 'Retry-After': 'seconds' },
        schema: loose({ ok: z.literal(false), checkedAt: isoTime }),
      },
    },
  },
});
