// POST /api/invoice (api/invoice.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { lightningAddressSchema } from 'l402-paywall/lightning';
import { hex64, isoTime, loose } from './common.js';
import { routeContract } from '../http/openapi.js';

// Owner addresses on this machine are accepted exactly when payouts may reach them (development).
const bodySchema = (allowLoopback: boolean) =>
  z
    .strictObject({
      amountSats: z
        .number({ error: 'amountSats is required and must be a number of satoshis' })
        .int('amountSats must be a whole number of satoshis')
        .min(1, 'amountSats must be at least 1'),
      ownerAddress: lightningAddressSchema({ allowLoopback }).optional(),
      memo: z.string().max(200).optional(),
      /** Managed mode: the paid route, kept with the payment in the log. */
      endpoint: z.string().max(2048).optional(),
    })
    // Kept only with a managed payment's record: without an owner it would be dropped without a word.
    .refine((body) => body.endpoint === undefined || body.ownerAddress !== undefined, {
      path: ['endpoint'],
      message: 'endpoint is kept with managed-mode payments only: send ownerAddress with it',
    });
export const Body = bodySchema(false);
export const DevBody = bodySchema(true);

export const contract = routeContract('/api/invoice', {
  POST: {
    summary: 'Create an invoice and its token',
    description: 'With ownerAddress (managed mode) the payment is split 99.7% to the owner. 429 RATE_LIMITED above the per-IP limit.',
    tags: ['payments'],
    body: Body,
    responses: {
      200: { description: 'The invoice', schema: loose({ paymentRequest: z.string(), paymentHash: hex64, macaroon: z.string(), expiresAt: isoTime }) },
    },
  },
});
