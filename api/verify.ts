import { z } from 'zod';
import { json } from '../lib/http/errors.js';
import { readJson } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { verifyTokenString } from '../lib/service/verify.js';

// Every body refuses keys it does not know, naming them (lib/http/input.ts).
// Caveat keys and values as tokens carry them (packages/l402-paywall/README.md "Token format"); route and price have their own fields.
const CaveatKey = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,31}$/, 'caveat names are [a-z][a-z0-9_]*, at most 32 characters')
  .refine((key) => key !== 'route' && key !== 'price_msat' && key !== 'uses', 'state route and priceSats as fields; uses is counted, not stated');
const CaveatValue = z
  .string()
  .max(512)
  .regex(/^[\x20-\x7e]*$/, 'caveat values are printable ASCII');

export const Body = z.strictObject({
  token: z.string({ error: 'token is required: "<macaroon>:<preimage>"' }).min(1).max(8192),
  consume: z.boolean().default(false),
  /** Expectations, checked as the paywall checks them: every condition of the token must be stated and met. */
  route: z.string().min(1).max(2048).optional(),
  priceSats: z.number().int('priceSats must be a whole number of satoshis').min(1).max(100_000_000).optional(),
  caveats: z
    .record(CaveatKey, CaveatValue)
    .refine((record) => Object.keys(record).length <= 16, 'at most 16 caveats')
    .optional(),
});

// POST /api/verify {token, consume?, route?, priceSats?, caveats?}
//   token: "<macaroon>:<preimage>", "L402 <macaroon>:<preimage>" or a whole "Payment <credential>" header value (docs/mpp.md)
//   -> 200 {valid: true, paymentHash, expiresAt, amountSats, amountMsat, route, caveats, uses[, scheme: "Payment", challengeId]}
//   -> 200 {valid: false, error, code}; 400 for a bad body.
export default serviceRoute({
  async POST(request, deployment) {
    const { token, consume, ...expect } = await readJson(request, Body);
    return json(await verifyTokenString(deployment.context(), token, consume, expect), { headers: { 'Cache-Control': 'no-store' } });
  },
});
