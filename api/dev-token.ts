import { z } from 'zod';
import { json } from '../lib/http/errors.js';
import { clientIp, readJson, readQuery } from '../lib/http/input.js';
import { LightningAddress } from 'l402-paywall/lightning';
import { serviceRoute } from '../lib/service/deployment.js';
import { enforceInvoiceRateLimit } from '../lib/service/money/invoices.js';
import { activatePro, offerPro } from '../lib/service/accounts/pro.js';

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

// GET  /api/dev-token?address=  -> {priceSats, invoice, macaroon, paymentHash, expiresAt}
// POST /api/dev-token {macaroon, preimage[, address]} -> {access: true, expiresAt}
// Errors: see activatePro (lib/service/accounts/pro.ts); 429 RATE_LIMITED and 503 as /api/invoice;
// 503 DATABASE_UNAVAILABLE.
export default serviceRoute({
  async GET(request, deployment) {
    const ctx = deployment.context();
    await enforceInvoiceRateLimit(ctx, clientIp(request));
    const { address } = readQuery(request, Query);
    return json(await offerPro(ctx, address, request), { headers: { 'Cache-Control': 'no-store' } });
  },
  async POST(request, deployment) {
    const body = await readJson(request, Body);
    return json(await activatePro(deployment.context(), body, request), { headers: { 'Cache-Control': 'no-store' } });
  },
});
