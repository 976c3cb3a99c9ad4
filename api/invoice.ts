import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { outboundPolicy } from '../lib/lightning/lnurl.js';
import { publicBaseUrl, serviceRoute } from '../lib/service/deployment.js';
import { enforceInvoiceRateLimit, issueInvoice } from '../lib/service/money/invoices.js';
import { Body, DevBody } from '../lib/contracts/invoice.js';

export default serviceRoute({
  async POST(request, deployment) {
    const ctx = deployment.context();
    await enforceInvoiceRateLimit(ctx, clientIp(request));
    const body = await readJson(request, outboundPolicy(ctx.config).allowLoopback ? DevBody : Body);
    // From configuration, never from the request: a client's Host header must not choose where the signed webhook goes.
    const base = publicBaseUrl(deployment);
    const webhookUrl = base ? new URL('/api/provider-webhook', base).toString() : undefined;
    return json(await issueInvoice(ctx, { ...body, webhookUrl }), { headers: { 'Cache-Control': 'no-store' } });
  },
});
