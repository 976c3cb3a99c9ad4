// POST /api/dev/pay (api/dev/pay.ts): what it takes and what it answers, declared once. The library's
// dev wallet handler the route runs validates its body with this schema; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { DevPayRequest } from 'l402-paywall/backends';
import { hex64, loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

/** The request body: the library's dev wallet endpoint is this route's one implementation, and its schema this route's. */
export const Body = DevPayRequest;

export const contract = routeContract('/api/dev/pay', {
  POST: {
    summary: 'Dev wallet: pay a dev-node invoice',
    description: 'Only with the embedded dev node outside production (404 otherwise). Fake money.',
    tags: ['demo'],
    body: Body,
    responses: { 200: { description: 'Paid', schema: loose({ preimage: hex64, paymentHash: hex64, amountMsat: z.number().int().positive() }) } },
  },
});
