import { json } from '../lib/http/errors.js';
import { clientIp, readJson, readQuery } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { enforceInvoiceRateLimit } from '../lib/service/money/invoices.js';
import { activatePro, offerPro } from '../lib/service/accounts/pro.js';
import { Query, Body } from '../lib/contracts/dev-token.js';

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
