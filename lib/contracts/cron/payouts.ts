// GET /api/cron/payouts (api/cron/payouts.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const contract = routeContract('/api/cron/payouts', {
  GET: {
    summary: 'Reconcile managed invoices and retry payouts',
    tags: ['operations'],
    security: ['cron'],
    responses: { 200: { description: 'Done', schema: loose({ reconciled: z.unknown(), payouts: z.unknown() }) } },
  },
});
