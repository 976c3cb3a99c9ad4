// GET /api/demo/preimage (api/demo/preimage.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { hex64, loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const Query = z.object({
  hash: z
    .string({ error: 'hash is required (the payment hash, 64 hex characters)' })
    .trim()
    .toLowerCase()
    .regex(/^[0-9a-f]{64}$/, 'hash must be 64 hex characters'),
});

export const contract = routeContract('/api/demo/preimage', {
  GET: {
    summary: "Preimage of a paid demo charge invoice (never a session deposit's)",
    tags: ['demo'],
    query: Query,
    responses: {
      200: { description: 'Paid: the preimage', schema: loose({ preimage: hex64, paymentHash: hex64 }) },
      202: {
        description: 'Not paid yet; poll again',
        headers: { 'Retry-After': 'seconds' },
        schema: loose({ status: z.literal('pending'), paymentHash: hex64 }),
      },
      403: {
        description: "SESSION_DEPOSIT: a prepaid session's deposit or top-up, whose preimage is never handed out (the payer's wallet shows it)",
        schema: loose({ error: z.string(), code: z.string() }),
      },
      404: { description: 'UNKNOWN_INVOICE: no demo charge invoice has this payment hash', schema: loose({ error: z.string(), code: z.string() }) },
    },
  },
});
