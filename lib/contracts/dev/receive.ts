// POST /api/dev/receive (api/dev/receive.ts) and GET /api/dev/receive/{paymentHash}
// (api/dev/receive/[paymentHash].ts): what they take and answer, declared once. The
// library's dev wallet handler the routes run validates the body with this schema;
// /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { DevReceiveRequest } from 'l402-paywall/backends';
import { hex64, loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

/** The request body: the library's dev wallet endpoint is this route's one implementation, and its schema this route's. */
export const Body = DevReceiveRequest;

export const contract = routeContract('/api/dev/receive', {
  POST: {
    summary: 'Dev wallet: make an invoice to be paid into it',
    description:
      "Without amountSats, an invoice without an amount (the payer names it): a prepaid session's return invoice. expirySeconds: how long it may be paid (default an hour, at most a week). Only with the embedded dev node outside production (404 otherwise). Fake money.",
    tags: ['demo'],
    body: Body,
    responses: {
      200: {
        description: 'The invoice; amountMsat is null for one without an amount',
        schema: loose({ invoice: z.string(), paymentHash: hex64, amountMsat: z.number().int().positive().nullable(), expiresAt: z.number().int() }),
      },
    },
  },
});

export const statusContract = routeContract('/api/dev/receive/{paymentHash}', {
  GET: {
    summary: 'Dev wallet: whether an invoice it made was paid, and how much',
    description: 'Only with the embedded dev node outside production (404 otherwise).',
    tags: ['demo'],
    pathParameters: { paymentHash: 'The payment hash of an invoice POST /api/dev/receive made (64 hex)' },
    responses: {
      200: {
        description: 'Paid or not, and the amount paid (0 before)',
        schema: loose({ paymentHash: hex64, paid: z.boolean(), amountMsat: z.number().int().nonnegative() }),
      },
    },
  },
});
