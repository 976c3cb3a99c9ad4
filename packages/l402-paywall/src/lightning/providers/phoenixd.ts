// Phoenixd (ACINQ): form-encoded requests, HTTP Basic with the http-password
// only. Amounts are sats except `fees` (msat). Webhooks are signed:
// `X-Phoenix-Signature` = hex HMAC-SHA256 of the raw body, keyed with the
// webhook-secret's UTF-8 bytes.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';
import { decodeInvoice } from '../bolt11.js';
import { PaymentFailed, ProviderUnavailable, WebhookRejected } from '../provider.js';
import type { CreateAmountlessInvoiceRequest, InvoiceStatus, LightningProvider, PaidInvoice, PaymentStatus } from '../provider.js';
import { checkedPreimage, equalBytes, errorMessage, Hex32, IntLike, parseJson, satToMsat, utf8ToBase64, wholeSats } from './checks.js';
import { backendHttp, type CommonBackendOptions } from './http.js';
import { invoicingMethods } from './invoicing.js';

export interface PhoenixdOptions extends CommonBackendOptions {
  url: string;
  password: string;
  webhookSecret?: string;
}

const BACKEND = 'Phoenixd';
export const PHOENIX_SIGNATURE_HEADER = 'x-phoenix-signature';
// Phoenixd refuses longer descriptions.
const MAX_DESCRIPTION_CHARS = 128;

const Created = z.object({ amountSat: IntLike.nullish(), paymentHash: Hex32, serialized: z.string().min(1) });
const Incoming = z.object({
  paymentHash: Hex32,
  preimage: z.string().nullish(),
  isPaid: z.boolean(),
  invoice: z.string().nullish(),
  requestedSat: IntLike.nullish(),
  receivedSat: IntLike,
});
const Sent = z.object({ paymentHash: Hex32, paymentPreimage: z.string(), routingFeeSat: IntLike });
const NotSent = z.object({ reason: z.string() });
const Outgoing = z.object({
  paymentHash: Hex32,
  preimage: z.string().nullish(),
  isPaid: z.boolean(),
  fees: IntLike.nullish(), // msat
  completedAt: IntLike.nullish(),
});
const Balance = z.object({ balanceSat: IntLike, feeCreditSat: IntLike.nullish() });
const Event = z.object({ type: z.string() });
const ReceivedEvent = z.object({ type: z.literal('payment_received'), paymentHash: Hex32, amountSat: IntLike.optional(), externalId: z.string().nullish() });

export function createPhoenixdProvider(options: PhoenixdOptions): LightningProvider {
  const http = backendHttp({
    backend: BACKEND,
    baseUrl: options.url,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
    headers: { authorization: `Basic ${utf8ToBase64(`:${options.password}`)}` },
    credentialSetting: 'PHOENIXD_PASSWORD',
  });

  /** Pays `invoice`; `amountMsat` only for an invoice without an amount. */
  async function pay(invoice: string, maxFeeMsat: number, amountMsat?: number): Promise<PaidInvoice> {
    // Phoenixd takes no fee limit: it pays through ACINQ's trampoline at ACINQ's fee (see docs/lightning-backends.md).
    // Phoenixd takes the amount of an invoice without one in whole satoshis.
    if (amountMsat !== undefined && amountMsat % 1000 !== 0) throw new PaymentFailed(`${BACKEND} pays whole satoshis; ${amountMsat} msat is not`);
    const response = await http.send({
      method: 'POST',
      path: '/payinvoice',
      form: { invoice, ...(amountMsat === undefined ? {} : { amountSat: amountMsat / 1000 }) },
    });
    if (response.status >= 400 && response.status < 500) {
      // Refused before sending: the invoice did not parse, an amount was missing.
      throw new PaymentFailed(`Phoenixd refused the payment: ${errorMessage(response.body) || `HTTP ${response.status}`}`);
    }
    if (response.status >= 500) throw new ProviderUnavailable(`Phoenixd answered HTTP ${response.status} to a payment; outcome unknown`);
    const answer = parseJson(response.body);
    const failed = NotSent.safeParse(answer);
    if (failed.success && !(answer as Record<string, unknown>).paymentPreimage)
      throw new PaymentFailed(`Phoenixd could not pay: ${failed.data.reason.slice(0, 200)}`);
    const sent = http.parse(response, Sent);
    const preimage = checkedPreimage(BACKEND, sent.paymentHash, sent.paymentPreimage);
    if (!preimage) throw new ProviderUnavailable('Phoenixd reported a payment without its preimage');
    const feeMsat = satToMsat(sent.routingFeeSat);
    if (feeMsat > maxFeeMsat)
      console.warn(`[lightning] Phoenixd paid ${feeMsat} msat in fees, over the ${maxFeeMsat} msat asked (Phoenixd has no per-payment fee limit)`);
    return { paymentHash: sent.paymentHash, preimage, feeMsat };
  }

  /** /createinvoice; without `amountSat` (optional in Phoenixd's API), one whose payer names the amount. */
  async function createinvoice(request: CreateAmountlessInvoiceRequest, amountSat?: number) {
    const created = await http.json(
      {
        method: 'POST',
        path: '/createinvoice',
        form: {
          amountSat,
          ...(request.descriptionHash
            ? { descriptionHash: request.descriptionHash }
            : { description: [...(request.memo ?? '')].slice(0, MAX_DESCRIPTION_CHARS).join('') }),
          expirySeconds: request.expirySeconds,
          webhookUrl: request.webhookUrl,
        },
      },
      Created,
    );
    if (created.amountSat != null && created.amountSat !== amountSat)
      throw new ProviderUnavailable(`Phoenixd reported ${created.amountSat} sat instead of ${amountSat ?? 'no amount'}`);
    return created;
  }

  return {
    name: 'phoenixd',

    ...invoicingMethods(BACKEND, options.network, {
      issue: async (request, amountMsat) => {
        const created = await createinvoice(request, amountMsat === undefined ? undefined : wholeSats(amountMsat, BACKEND));
        return { invoice: created.serialized, paymentHash: created.paymentHash };
      },
      pay,
    }),

    async lookupInvoice(paymentHash): Promise<InvoiceStatus | null> {
      const response = await http.send({ method: 'GET', path: `/payments/incoming/${paymentHash}` });
      if (response.status === 404) return null;
      const found = http.parse(response, Incoming);
      if (found.paymentHash !== paymentHash) throw new ProviderUnavailable('Phoenixd answered about another payment hash');
      // Phoenixd knows the preimage of its own unpaid invoices too; only a paid one's proves anything.
      const preimage = found.isPaid ? checkedPreimage(BACKEND, paymentHash, found.preimage) : undefined;
      return { paymentHash, settled: found.isPaid, amountMsat: invoiceAmountMsat(found), ...(preimage ? { preimage } : {}) };
    },

    async lookupPayment(paymentHash): Promise<PaymentStatus | null> {
      const response = await http.send({ method: 'GET', path: `/payments/outgoingbyhash/${paymentHash}` });
      if (response.status === 404) return null;
      // One attempt as an object, or several (retries of one hash) as a list.
      const attempts = http.parse(response, z.union([Outgoing, z.array(Outgoing)]));
      const list = (Array.isArray(attempts) ? attempts : [attempts]).filter((a) => a.paymentHash === paymentHash);
      if (list.length === 0) return null;
      const paid = list.find((a) => a.isPaid);
      if (paid) {
        const preimage = checkedPreimage(BACKEND, paymentHash, paid.preimage);
        return { paymentHash, state: 'succeeded', ...(preimage ? { preimage } : {}), feeMsat: paid.fees ?? 0 };
      }
      // Completed without being paid = failed; not completed = still in flight.
      return { paymentHash, state: list.some((a) => a.completedAt == null) ? 'pending' : 'failed' };
    },

    async balance() {
      const balance = await http.json({ method: 'GET', path: '/getbalance' }, Balance);
      return { balanceMsat: satToMsat(balance.balanceSat) };
    },

    readWebhook({ headers, body }) {
      if (!options.webhookSecret) throw new WebhookRejected('PHOENIXD_WEBHOOK_SECRET is not set, so Phoenixd webhooks cannot be verified');
      const signature = headers.get(PHOENIX_SIGNATURE_HEADER)?.trim().toLowerCase();
      if (!signature || !/^[0-9a-f]{64}$/.test(signature)) throw new WebhookRejected(`Missing or malformed ${PHOENIX_SIGNATURE_HEADER} header`);
      const expected = hmac(sha256, utf8ToBytes(options.webhookSecret), utf8ToBytes(body));
      if (!equalBytes(expected, hexToBytes(signature))) throw new WebhookRejected('Phoenixd webhook signature does not match');
      const json = parseJson(body);
      const kind = Event.safeParse(json);
      if (!kind.success) throw new WebhookRejected('Phoenixd webhook body is not an event');
      // Phoenixd announces every event (payment_sent too) to the same URL: only received payments matter here.
      if (kind.data.type !== 'payment_received') return null;
      const event = ReceivedEvent.safeParse(json);
      if (!event.success) throw new WebhookRejected('Phoenixd payment_received event without a payment hash');
      return { paymentHash: event.data.paymentHash };
    },
  };
}

function invoiceAmountMsat(found: z.output<typeof Incoming>): number {
  if (found.requestedSat != null) return satToMsat(found.requestedSat);
  if (found.invoice) {
    try {
      const amount = decodeInvoice(found.invoice).amountMsat;
      if (amount !== null) return amount;
    } catch {
      // fall through to what was received
    }
  }
  return satToMsat(found.receivedSat);
}
