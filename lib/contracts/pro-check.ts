// GET /api/pro-check (api/pro-check.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { LightningAddress } from 'l402-paywall/lightning';
import { isoTime, loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const Query = z.object({
  address: z.string({ error: 'address is required (a Lightning Address like name@example.com)' }).pipe(LightningAddress),
});

export const contract = routeContract('/api/pro-check', {
  GET: {
    summary: 'Whether an address has Pro',
    tags: ['pro'],
    query: Query,
    responses: { 200: { description: 'Status', schema: loose({ active: z.boolean(), expiresAt: isoTime.optional() }) } },
  },
});
