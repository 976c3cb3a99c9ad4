// POST /api/verify (api/verify.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { CAVEAT_NAME, CAVEAT_VALUE, MAX_CAVEATS } from 'l402-paywall';
import { hex64, isoTime, loose } from './common.js';
import { routeContract } from '../http/openapi.js';

// Every body refuses keys it does not know, naming them (lib/http/input.ts).
// Caveat keys and values in the library's one grammar (l402/caveats.ts); route and price have their own fields.
const CaveatKey = z
  .string()
  .regex(CAVEAT_NAME, 'caveat names are [a-z][a-z0-9_]*, at most 32 characters')
  .refine((key) => key !== 'route' && key !== 'price_msat' && key !== 'uses', 'state route and priceSats as fields; uses is counted, not stated');
const CaveatValue = z.string().regex(CAVEAT_VALUE, 'caveat values are printable ASCII, at most 512 characters');

export const Body = z.strictObject({
  token: z.string({ error: 'token is required: "<macaroon>:<preimage>"' }).min(1).max(8192),
  consume: z.boolean().default(false),
  /** Expectations, checked as the paywall checks them: every condition of the token must be stated and met. */
  route: z.string().min(1).max(2048).optional(),
  priceSats: z.number().int('priceSats must be a whole number of satoshis').min(1).max(100_000_000).optional(),
  caveats: z
    .record(CaveatKey, CaveatValue)
    .refine((record) => Object.keys(record).length <= MAX_CAVEATS, `at most ${MAX_CAVEATS} caveats`)
    .optional(),
});

export const contract = routeContract('/api/verify', {
  POST: {
    summary: 'Check a credential',
    description: 'token is "<macaroon>:<preimage>", a whole "L402 …" header value or a whole "Payment …" one; consume: true uses it up.',
    tags: ['payments'],
    body: Body,
    responses: {
      200: {
        description: 'Valid or not, and why',
        schema: z.union([
          loose({ valid: z.literal(true), paymentHash: hex64, expiresAt: isoTime }),
          loose({ valid: z.literal(false), error: z.string(), code: z.string() }),
        ]),
      },
    },
  },
});
