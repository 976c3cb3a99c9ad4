// GET /api/cron/payouts (api/cron/payouts.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

const count = z.number().int().nonnegative();

export const contract = routeContract('/api/cron/payouts', {
  GET: {
    summary: 'Close idle sessions and pay their refunds, reconcile managed invoices, retry payouts',
    description:
      'sessions: idle prepaid sessions closed, refunds paid (or found paid), failed (retried after a backoff) and given up by this run; leftOver when its time ran out first; error when the session store or the backend failed (the rest of the run goes on; docs/sessions.md).',
    tags: ['operations'],
    security: ['cron'],
    responses: {
      200: {
        description: 'Done',
        schema: loose({
          sessions: loose({ closed: count, refundsPaid: count, failed: count, givenUp: count, leftOver: z.boolean(), error: z.string().optional() }),
          reconciled: z.unknown(),
          payouts: z.unknown(),
        }),
      },
    },
  },
});
