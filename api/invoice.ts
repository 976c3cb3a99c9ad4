import { z } from 'zod';
import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { route } from '../lib/http/route.js';
import { lightningAddressSchema } from 'l402-paywall/lightning';
import { outboundPolicy } from '../lib/lightning/lnurl.js';
import { serviceContext } from '../lib/service/context.js';
import { enforceInvoiceRateLimit, issueInvoice } from '../lib/service/invoices.js';

// Owner addresses on this machine are accepted exactly when payouts may reach them (development).
const bodySchema = (allowLoopback: boolean) => z.object({
  amountSats: z.number({ error: 'amountSats is required and must be a number of satoshis' }).int('amountSats must be a whole number of satoshis').min(1, 'amountSats must be at least 1'),
  ownerAddress: lightningAddressSchema({ allowLoopback }).optional(),
  memo: z.string().max(200).optional(),
  /** Managed mode: the paid route, kept with the payment in the log. */
  endpoint: z.string().max(2048).optional(),
});
export const Body = bodySchema(false);
const DevBody = bodySchema(true);

export default route({
  async POST(request) {
    const ctx = serviceContext();
    await enforceInvoiceRateLimit(ctx, clientIp(request));
    const body = await readJson(request, outboundPolicy(ctx.config).allowLoopback ? DevBody : Body);
    const webhookUrl = new URL('/api/provider-webhook', request.url).toString();
    return json(await issueInvoice(ctx, { ...body, webhookUrl }), { headers: { 'Cache-Control': 'no-store' } });
  },
});
