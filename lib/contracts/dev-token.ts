// GET, POST /api/dev-token (api/dev-token.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { LightningAddress } from 'l402-paywall/lightning';
import { hex64, isoTime, loose } from './common.js';
import { routeContract } from '../http/openapi.js';

const address = (where: string) =>
  z
    .string({
      error: (issue) =>
        issue.input === undefined ? `${where} is required (a Lightning Address like name@example.com)` : `${where} must be a Lightning Address`,
    })
    .pipe(LightningAddress);

export const Query = z.object({ address: address('address') });

export const Body = z.strictObject({
  macaroon: z.string({ error: 'macaroon is required (from GET /api/dev-token)' }).trim().min(1, 'macaroon is required (from GET /api/dev-token)').max(8192),
  preimage: z
    .string({ error: 'preimage is required (32 bytes of hex, from paying the invoice)' })
    .trim()
    .toLowerCase()
    .regex(/^[0-9a-f]{64}$/, 'preimage must be 32 bytes of hex (64 characters)'),
  // Optional: when sent, the token must have been sold for this address.
  address: address('address').optional(),
});

export const contract = routeContract('/api/dev-token', {
  GET: {
    summary: 'Offer 30 days of Pro',
    tags: ['pro'],
    query: Query,
    responses: {
      200: {
        description: 'An invoice and the token it unlocks',
        schema: loose({ priceSats: z.number().int().positive(), invoice: z.string(), macaroon: z.string(), paymentHash: hex64, expiresAt: isoTime }),
      },
    },
  },
  POST: {
    summary: 'Activate Pro with a paid token',
    tags: ['pro'],
    body: Body,
    responses: { 200: { description: 'Active', schema: loose({ access: z.literal(true), expiresAt: isoTime }) } },
  },
});
