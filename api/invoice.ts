import { z } from 'zod';
import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { route } from '../lib/http/route.js';
import { LightningAddress } from '../lib/lightning/address.js';
import { serviceContext } from '../lib/service/context.js';
import { enforceInvoiceRateLimit, issueInvoice } from '../lib/service/invoices.js';

const Body = z.object({
  amountSats: z.number({ error: 'amountSats is required and must be a number of satoshis' }).int('amountSats must be a whole number of satoshis').min(1, 'amountSats must be at least 1'),
  ownerAddress: LightningAddress.optional(),
  memo: z.string().max(200).optional(),
});

export default route({
  async POST(request) {
    const ctx = serviceContext();
    await enforceInvoiceRateLimit(ctx, clientIp(request));
    const body = await readJson(request, Body);
    return json(await issueInvoice(ctx, body), { headers: { 'Cache-Control': 'no-store' } });
  },
});
