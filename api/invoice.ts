import { z } from 'zod';
import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { lightningAddressSchema } from 'l402-paywall/lightning';
import { outboundPolicy } from '../lib/lightning/lnurl.js';
import { publicBaseUrl, serviceRoute } from '../lib/service/deployment.js';
import { enforceInvoiceRateLimit, issueInvoice } from '../lib/service/money/invoices.js';

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
const DevBody = bodySchema(true);

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
