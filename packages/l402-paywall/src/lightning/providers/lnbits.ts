// LNbits (REST, `X-Api-Key`): invoices with the wallet's invoice/read key,
// payments with its admin key. Amounts in requests are sats; `amount` and `fee`
// in answers are msat (negative for outgoing). LNbits does not sign webhooks:
// readWebhook only says which hash the delivery is about and the caller
// confirms it with lookupInvoice.
import { z } from 'zod';
import { PaymentFailed, ProviderUnavailable, WebhookRejected, ProviderConfigError } from '../provider.js';
import type { CreatedInvoice, InvoiceStatus, LightningProvider, PaidInvoice, PaymentStatus } from '../provider.js';
import { checkedPreimage, issuedInvoice, errorMessage, Hex32, IntLike, parseJson, wholeSats } from './checks.js';
import { backendHttp, type BackendHttp, type CommonBackendOptions } from './http.js';

export interface LnbitsOptions extends CommonBackendOptions {
  url: string;
  /** Invoice/read key: creates and looks up invoices, reads the balance. */
  apiKey: string;
  /** Admin key: needed only to pay. */
  adminKey?: string;
}

const BACKEND = 'LNbits';

const Created = z
  .object({ payment_hash: Hex32, payment_request: z.string().min(1).optional(), bolt11: z.string().min(1).optional() })
  .refine((c) => c.bolt11 ?? c.payment_request, 'bolt11 or payment_request is required');

const PaymentDetails = z.object({
  amount: IntLike,
  fee: IntLike.nullish(),
  status: z.string().nullish(),
  pending: z.boolean().nullish(),
  preimage: z.string().nullish(),
});
const Payment = z.object({ paid: z.boolean(), preimage: z.string().nullish(), status: z.string().nullish(), details: PaymentDetails.nullish() });
const PayAnswer = z.object({ payment_hash: Hex32, status: z.string().nullish(), preimage: z.string().nullish(), fee: IntLike.nullish() });
const Wallet = z.object({ balance: IntLike });
const WebhookBody = z.object({ payment_hash: Hex32, amount: IntLike.optional() });

export function createLnbitsProvider(options: LnbitsOptions): LightningProvider {
  const common = { backend: BACKEND, baseUrl: options.url, timeoutMs: options.timeoutMs, fetch: options.fetch };
  const invoiceKey = backendHttp({ ...common, headers: { 'X-Api-Key': options.apiKey }, credentialSetting: 'LNBITS_API_KEY' });
  const adminKey = options.adminKey ? backendHttp({ ...common, headers: { 'X-Api-Key': options.adminKey }, credentialSetting: 'LNBITS_ADMIN_KEY' }) : undefined;

  /** The payment record, or null on 404 (LNbits: "Payment does not exist."). */
  async function payment(http: BackendHttp, paymentHash: string) {
    const response = await http.send({ method: 'GET', path: `/api/v1/payments/${paymentHash}` });
    if (response.status === 404) return null;
    return http.parse(response, Payment);
  }

  return {
    name: 'lnbits',

    async createInvoice(request): Promise<CreatedInvoice> {
      const sats = wholeSats(request.amountMsat, BACKEND);
      const created = await invoiceKey.json(
        {
          method: 'POST',
          path: '/api/v1/payments',
          json: {
            out: false, // LNbits' default is true: an outgoing payment
            amount: sats,
            unit: 'sat',
            memo: request.memo ?? '',
            ...(request.descriptionHash ? { description_hash: request.descriptionHash } : {}),
            ...(request.expirySeconds ? { expiry: request.expirySeconds } : {}),
            ...(request.webhookUrl ? { webhook: request.webhookUrl } : {}),
          },
        },
        Created,
      );
      const invoice = (created.bolt11 ?? created.payment_request)!;
      return issuedInvoice(BACKEND, invoice, { ...request, paymentHash: created.payment_hash, network: options.network });
    },

    async lookupInvoice(paymentHash): Promise<InvoiceStatus | null> {
      const found = await payment(invoiceKey, paymentHash);
      // A negative amount is an outgoing payment with this hash, not an invoice of ours.
      if (!found?.details || found.details.amount <= 0) return null;
      const preimage = found.paid ? checkedPreimage(BACKEND, paymentHash, found.preimage ?? found.details.preimage) : undefined;
      return { paymentHash, settled: found.paid, amountMsat: found.details.amount, ...(preimage ? { preimage } : {}) };
    },

    async payInvoice({ invoice, maxFeeMsat }): Promise<PaidInvoice> {
      if (!adminKey) throw new ProviderConfigError('LNBITS_ADMIN_KEY', 'LNBITS_ADMIN_KEY is not set; LNbits pays only with the wallet admin key');
      // LNbits takes no per-payment fee limit: its own fee reserve applies (see docs/lightning-backends.md). maxFeeMsat is checked after.
      const response = await adminKey.send({ method: 'POST', path: '/api/v1/payments', json: { out: true, bolt11: invoice } });
      const body = parseJson(response.body) as { status?: unknown } | undefined;
      if (response.status >= 400) {
        // 4xx: refused before anything was sent (bad invoice, insufficient balance). 520 carries LNbits'
        // PaymentError with its status: "failed" is definite, anything else is not.
        if ((response.status < 500 || body?.status === 'failed') && response.status !== 408 && response.status !== 429) {
          throw new PaymentFailed(`LNbits refused the payment: ${errorMessage(response.body) || `HTTP ${response.status}`}`);
        }
        throw new ProviderUnavailable(`LNbits answered HTTP ${response.status} to a payment; outcome unknown`);
      }
      const answer = adminKey.parse(response, PayAnswer);
      if (answer.status === 'failed') throw new PaymentFailed('LNbits could not pay the invoice');
      // Older LNbits answer only {payment_hash, checking_id}: the record says how it went.
      const record = await payment(adminKey, answer.payment_hash);
      if (!record?.paid) throw new ProviderUnavailable('LNbits has not confirmed the payment yet; outcome unknown');
      const preimage = checkedPreimage(BACKEND, answer.payment_hash, record.preimage ?? record.details?.preimage ?? answer.preimage);
      if (!preimage) throw new ProviderUnavailable('LNbits reported the payment without its preimage');
      const feeMsat = Math.abs(record.details?.fee ?? answer.fee ?? 0);
      if (feeMsat > maxFeeMsat)
        console.warn(`[lightning] LNbits paid ${feeMsat} msat in fees, over the ${maxFeeMsat} msat asked (LNbits has no per-payment fee limit)`);
      return { paymentHash: answer.payment_hash, preimage, feeMsat };
    },

    async lookupPayment(paymentHash): Promise<PaymentStatus | null> {
      const found = await payment(adminKey ?? invoiceKey, paymentHash);
      if (!found?.details || found.details.amount >= 0) return null;
      if (found.paid) {
        const preimage = checkedPreimage(BACKEND, paymentHash, found.preimage ?? found.details.preimage);
        return { paymentHash, state: 'succeeded', ...(preimage ? { preimage } : {}), feeMsat: Math.abs(found.details.fee ?? 0) };
      }
      // Newer LNbits say `status`, older ones `pending`.
      const status = found.details.status ?? found.status;
      const failed = status ? status === 'failed' : found.details.pending === false;
      return { paymentHash, state: failed ? 'failed' : 'pending' };
    },

    async balance() {
      const wallet = await invoiceKey.json({ method: 'GET', path: '/api/v1/wallet' }, Wallet);
      return { balanceMsat: Math.max(0, wallet.balance) };
    },

    readWebhook({ body }) {
      const parsed = WebhookBody.safeParse(parseJson(body));
      if (!parsed.success) throw new WebhookRejected('Not an LNbits payment webhook');
      if (parsed.data.amount !== undefined && parsed.data.amount < 0) return null; // an outgoing payment
      return { paymentHash: parsed.data.payment_hash };
    },
  };
}
