// GET /api/dev/inbox (api/dev/inbox.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { hex64, loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const Query = z.object({
  address: z
    .string({ error: 'address is required (a Lightning Address of this server, e.g. alice@127.0.0.1:3000)' })
    .trim()
    .toLowerCase()
    .max(200)
    .regex(/^[a-z0-9\-_.]{1,64}@[a-z0-9\-.:[\]]+$/, 'address must be a Lightning Address of this server (user@host)'),
});

export const contract = routeContract('/api/dev/inbox', {
  GET: {
    summary: "Dev node: what this server's own Lightning Addresses received",
    description: 'Only with the embedded dev node outside production (404 otherwise): payouts and link codes sent to the local addresses, comments included.',
    tags: ['demo'],
    query: Query,
    responses: {
      200: {
        description: 'Received payments',
        schema: loose({
          address: z.string(),
          received: z.array(
            loose({
              paymentHash: hex64,
              amountMsat: z.number().int(),
              comment: z.string().nullable().optional(),
              createdAt: z.union([z.string(), z.number()]),
            }),
          ),
        }),
      },
    },
  },
});
