// POST /api/provider-webhook (api/provider-webhook.ts): what it answers, declared once (its body is the
// backend's own, checked by signature); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/provider-webhook', {
  POST: {
    summary: 'Lightning backend webhook',
    description: 'For the configured Lightning backend only; its signature is checked over the raw body.',
    tags: ['managed'],
    responses: {
      200: { description: 'Handled', schema: loose({ ok: z.literal(true) }) },
      401: { description: 'WEBHOOK_REJECTED', schema: loose({ error: z.string(), code: z.string() }) },
    },
  },
});
