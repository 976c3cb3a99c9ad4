import { z } from 'zod';
import { HttpError, json } from '../../lib/http/errors.js';
import { readJson } from '../../lib/http/input.js';
import { DevPaymentError } from 'l402-paywall/backends';
import { serviceRoute } from '../../lib/service/deployment.js';

export const Body = z.strictObject({ invoice: z.string({ error: 'invoice is required (a BOLT11 invoice of the dev node)' }).min(1).max(4096) });

const STATUS: Record<DevPaymentError['code'], number> = {
  INVALID_INVOICE: 400,
  NOT_DEV_INVOICE: 400,
  UNKNOWN_INVOICE: 404,
  INVOICE_EXPIRED: 410,
  ALREADY_PAID: 409,
};

export default serviceRoute({
  async POST(request, deployment) {
    const config = deployment.config();
    // Only the embedded dev node, and never in production, has a wallet that mints money.
    const devNode = config.production || config.lightning.provider !== 'dev' ? undefined : deployment.context().devNode;
    if (!devNode) throw new HttpError(404, 'NOT_FOUND', 'No dev wallet here: /api/dev/pay exists only with the embedded dev node outside production');
    const { invoice } = await readJson(request, Body);
    try {
      const paid = await devNode.pay(invoice);
      return json({ preimage: paid.preimage, paymentHash: paid.paymentHash, amountMsat: paid.amountMsat });
    } catch (error) {
      if (error instanceof DevPaymentError) throw new HttpError(STATUS[error.code], error.code, error.message);
      throw error;
    }
  },
});
