// POST /api/split (api/split.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { lightningAddressSchema } from 'l402-paywall/lightning';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

const bodySchema = (allowLoopback: boolean) =>
  z.strictObject({
    amountSats: z
      .number({ error: 'amountSats is required and must be a number of satoshis' })
      .int('amountSats must be a whole number of satoshis')
      .min(1, 'amountSats must be at least 1')
      .max(100_000_000, 'amountSats must be at most 100000000'),
    ownerAddress: lightningAddressSchema({ allowLoopback }),
    paymentHash: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'paymentHash must be 64 hex characters')
      .transform((s) => s.toLowerCase())
      .optional(),
    idempotencyKey: z.string().trim().min(1).max(200).optional(),
  });
export const Body = bodySchema(false);
// Owner addresses on this machine exactly when payouts may reach them (development).
export const DevBody = bodySchema(true);

export const contract = routeContract('/api/split', {
  POST: {
    summary: 'Split a payment by hand (recovery)',
    tags: ['managed'],
    body: Body,
    security: ['splitSecret'],
    responses: {
      200: {
        description: "Split; skipped: true when the owner's shares accrue below the payout minimum",
        schema: loose({ ok: z.literal(true), ownerSats: z.number().int().nonnegative(), ownerMsat: z.number().int().nonnegative() }),
      },
    },
  },
});
