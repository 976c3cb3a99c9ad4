// Core Lightning through its CLNRest plugin: every RPC is `POST /v1/<method>`
// with a JSON body and a `Rune` header; RPC errors come back as {code, message}
// (HTTP 4xx/5xx). Amounts are msat (integers; "123msat" strings before v23).
// CLN sends no webhooks.
import { z } from 'zod';
import { PaymentFailed, ProviderUnavailable, ProviderUnsupported } from '../provider.js';
import type { CreateAmountlessInvoiceRequest, InvoiceStatus, LightningProvider, PaidInvoice, PaymentStatus } from '../provider.js';
import { checkedPreimage, errorMessage, Hex32, parseJson, sha256OfText } from './checks.js';
import { backendHttp, type CommonBackendOptions } from './http.js';
import { invoicingMethods } from './invoicing.js';

export interface ClnOptions extends CommonBackendOptions {
  url: string;
  rune: string;
}

const BACKEND = 'Core Lightning';

const Msat = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^\d{1,17}(msat)?$/)
      .transform((s) => Number(s.replace('msat', ''))),
  ])
  .pipe(z.number().int().nonnegative().refine(Number.isSafeInteger, 'too large'));

const Created = z.object({ bolt11: z.string().min(1), payment_hash: Hex32 });
const ListInvoices = z.object({
  invoices: z.array(
    z.object({
      payment_hash: Hex32,
      status: z.enum(['unpaid', 'paid', 'expired']),
      amount_msat: Msat.nullish(),
      amount_received_msat: Msat.nullish(),
      payment_preimage: z.string().nullish(),
    }),
  ),
});
const Pay = z.object({
  payment_hash: Hex32,
  payment_preimage: z.string().nullish(),
  status: z.enum(['complete', 'pending', 'failed']),
  amount_msat: Msat,
  amount_sent_msat: Msat,
});
const ListPays = z.object({
  pays: z.array(
    z.object({
      payment_hash: Hex32,
      status: z.enum(['complete', 'pending', 'failed']),
      preimage: z.string().nullish(),
      amount_msat: Msat.nullish(),
      amount_sent_msat: Msat.nullish(),
    }),
  ),
});
const ListFunds = z.object({ channels: z.array(z.object({ state: z.string(), our_amount_msat: Msat })) });
const RpcError = z.object({ code: z.number().int(), message: z.string() });

// `pay` error codes (lightning-pay(7)) after which nothing is in flight: the payment definitely did not happen.
// 200 (in progress), 209 (unspecified), 211 (unexpected status) and others leave the outcome open.
const PAY_DEFINITELY_FAILED = new Set([201, 202, 203, 205, 206, 207, 210, 212, 213, -32602]);

export function createClnProvider(options: ClnOptions): LightningProvider {
  const http = backendHttp({
    backend: BACKEND,
    baseUrl: options.url,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
    headers: { Rune: options.rune },
    credentialSetting: 'CLN_RUNE',
    isAuthFailure: (status, body) => status >= 400 && /not authorized|rune/i.test(errorMessage(body)),
  });
  const rpc = <S extends z.ZodType>(method: string, params: Record<string, unknown>, schema: S) =>
    http.json({ method: 'POST', path: `/v1/${method}`, json: params }, schema);

  /** Pays `invoice`; `amountMsat` only for an invoice without an amount. */
  async function pay(invoice: string, maxFeeMsat: number, amountMsat?: number): Promise<PaidInvoice> {
    if (!Number.isSafeInteger(maxFeeMsat) || maxFeeMsat < 0) throw new RangeError('maxFeeMsat must be a non-negative integer');
    const response = await http.send({
      method: 'POST',
      path: '/v1/pay',
      json: {
        bolt11: invoice,
        ...(amountMsat === undefined ? {} : { amount_msat: amountMsat }),
        maxfee: maxFeeMsat,
        retry_for: Math.max(1, Math.floor((http.timeoutMs * 0.8) / 1000)),
      },
    });
    if (response.status >= 400) {
      const error = RpcError.safeParse(parseJson(response.body) ?? {});
      if (error.success && PAY_DEFINITELY_FAILED.has(error.data.code)) {
        throw new PaymentFailed(`Core Lightning could not pay (${error.data.code}): ${error.data.message.slice(0, 200)}`);
      }
      throw new ProviderUnavailable(`Core Lightning answered HTTP ${response.status} to a payment; outcome unknown`);
    }
    const paid = http.parse(response, Pay);
    if (paid.status === 'failed') throw new PaymentFailed('Core Lightning could not pay the invoice');
    if (paid.status !== 'complete') throw new ProviderUnavailable('Core Lightning reports the payment pending; outcome unknown');
    const preimage = checkedPreimage(BACKEND, paid.payment_hash, paid.payment_preimage);
    if (!preimage) throw new ProviderUnavailable('Core Lightning reported a payment without its preimage');
    return { paymentHash: paid.payment_hash, preimage, feeMsat: Math.max(0, paid.amount_sent_msat - paid.amount_msat) };
  }

  /** The `invoice` RPC; amount_msat "any" makes one whose payer names the amount. */
  async function invoice(request: CreateAmountlessInvoiceRequest, amountMsat: number | 'any') {
    const description = request.memo ?? '';
    // CLN commits to the hash of a description it is given (deschashonly); it cannot take a bare hash.
    if (request.descriptionHash && sha256OfText(description) !== request.descriptionHash.toLowerCase()) {
      throw new ProviderUnsupported('Core Lightning needs the description itself (as memo) to commit to its hash');
    }
    return rpc(
      'invoice',
      {
        amount_msat: amountMsat,
        label: `l402-${crypto.randomUUID()}`,
        description,
        ...(request.expirySeconds ? { expiry: request.expirySeconds } : {}),
        ...(request.descriptionHash ? { deschashonly: true } : {}),
      },
      Created,
    );
  }

  return {
    name: 'cln',

    ...invoicingMethods(BACKEND, options.network, {
      issue: async (request, amountMsat) => {
        const created = await invoice(request, amountMsat ?? 'any');
        return { invoice: created.bolt11, paymentHash: created.payment_hash };
      },
      pay,
    }),

    async lookupInvoice(paymentHash): Promise<InvoiceStatus | null> {
      const { invoices } = await rpc('listinvoices', { payment_hash: paymentHash }, ListInvoices);
      const invoice = invoices.find((i) => i.payment_hash === paymentHash);
      if (!invoice) return null;
      const settled = invoice.status === 'paid';
      const amountMsat = invoice.amount_msat ?? invoice.amount_received_msat;
      if (amountMsat == null) return null; // an "any amount" invoice not yet paid was not made by us
      const preimage = settled ? checkedPreimage(BACKEND, paymentHash, invoice.payment_preimage) : undefined;
      return { paymentHash, settled, amountMsat, ...(preimage ? { preimage } : {}) };
    },

    async lookupPayment(paymentHash): Promise<PaymentStatus | null> {
      const { pays } = await rpc('listpays', { payment_hash: paymentHash }, ListPays);
      const attempts = pays.filter((p) => p.payment_hash === paymentHash);
      if (attempts.length === 0) return null;
      const complete = attempts.find((p) => p.status === 'complete');
      if (complete) {
        const preimage = checkedPreimage(BACKEND, paymentHash, complete.preimage);
        const feeMsat =
          complete.amount_msat != null && complete.amount_sent_msat != null ? Math.max(0, complete.amount_sent_msat - complete.amount_msat) : undefined;
        return { paymentHash, state: 'succeeded', ...(preimage ? { preimage } : {}), ...(feeMsat !== undefined ? { feeMsat } : {}) };
      }
      return { paymentHash, state: attempts.some((p) => p.status === 'pending') ? 'pending' : 'failed' };
    },

    async balance() {
      const { channels } = await rpc('listfunds', {}, ListFunds);
      const balanceMsat = channels.filter((c) => c.state === 'CHANNELD_NORMAL').reduce((sum, c) => sum + c.our_amount_msat, 0);
      return { balanceMsat };
    },
  };
}
