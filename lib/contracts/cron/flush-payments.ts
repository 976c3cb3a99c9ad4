// GET /api/cron/flush-payments (api/cron/flush-payments.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const contract = routeContract('/api/cron/flush-payments', {
  GET: {
    summary: 'Write the payments kept in the outbox',
    tags: ['operations'],
    security: ['cron'],
    responses: { 200: { description: 'Done', schema: loose({ written: z.number().int(), pending: z.number().int() }) } },
  },
});
