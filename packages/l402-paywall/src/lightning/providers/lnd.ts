// LND over its REST gateway (grpc-gateway): `Grpc-Metadata-macaroon: <hex>`,
// bytes as base64, uint64 as decimal strings, errors as {code, message}.
// Payments use the router's streamed /v2/router/send (one NDJSON line per
// update; with no_inflight_updates the first line is final) and
// /v2/router/track for look-ups. LND sends no webhooks.
import { z } from 'zod';
import { PaymentFailed, ProviderUnavailable } from '../provider.js';
import type { CreateAmountlessInvoiceRequest, InvoiceStatus, LightningProvider, PaidInvoice, PaymentStatus } from '../provider.js';
import { base64ToHex, checkedPreimage, errorMessage, hexToBase64, IntLike, parseJson } from './checks.js';
import { backendHttp, type BackendResponse, type CommonBackendOptions, type Fetch } from './http.js';
import { invoicingMethods } from './invoicing.js';

export interface LndOptions extends CommonBackendOptions {
  url: string;
  /** Hex. */
  macaroon: string;
  /**
   * Default globalThis.fetch. lnd's REST port has a self-signed certificate
   * unless it sits behind a proxy with a public one: on Node, pass
   * `fetchTrustingCa(tlsCert)` from `l402-paywall/node`.
   */
  fetch?: Fetch;
}

const BACKEND = 'LND';
const Base64 = z.string().regex(/^[A-Za-z0-9+/_-]*={0,2}$/, 'must be base64');

const Created = z.object({ r_hash: Base64, payment_request: z.string().min(1) });
const Invoice = z.object({
  r_preimage: Base64.nullish(),
  value_msat: IntLike,
  /** What was received; for an invoice without an amount (value_msat 0) the only amount there is. */
  amt_paid_msat: IntLike.nullish(),
  state: z.enum(['OPEN', 'SETTLED', 'CANCELED', 'ACCEPTED']),
});
const Payment = z.object({
  payment_hash: z.string().regex(/^[0-9a-f]{64}$/),
  payment_preimage: z.string().nullish(),
  status: z.enum(['UNKNOWN', 'IN_FLIGHT', 'SUCCEEDED', 'FAILED', 'INITIATED']),
  fee_msat: IntLike.nullish(),
  failure_reason: z.string().nullish(),
});
const GatewayError = z.object({ code: z.number().int().optional(), message: z.string() });
const StreamLine = z.union([z.object({ result: Payment }), z.object({ error: GatewayError })]);
const ChannelBalance = z.object({ local_balance: z.object({ msat: IntLike }).nullish(), balance: IntLike.nullish() });

// gRPC NotFound (5) through the gateway, or the older "unable to locate" text with Unknown (2).
const NOT_FOUND = /unable to locate invoice|there are no existing invoices|payment isn't initiated|not found/i;
// Refused before any HTLC left: safe to call it failed. Anything else (in transition, already paid) is not.
const REFUSED_BEFORE_SENDING =
  /invoice expired|invalid|checksum|amount must be specified|self-payment|self payment|no route|insufficient|unknown network|not enough/i;

export function createLndProvider(options: LndOptions): LightningProvider {
  const http = backendHttp({
    backend: BACKEND,
    baseUrl: options.url,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
    headers: { 'Grpc-Metadata-macaroon': options.macaroon },
    credentialSetting: 'LND_MACAROON',
    // LND reports a bad macaroon as gRPC Unknown (HTTP 500), not 401.
    isAuthFailure: (status, body) => status >= 400 && /macaroon|verification failed|permission denied|signature mismatch/i.test(errorMessage(body)),
  });

  function notFound(response: BackendResponse): boolean {
    if (response.status === 404) return true;
    return response.status >= 400 && NOT_FOUND.test(errorMessage(response.body));
  }

  // Payment hash bytes in a REST path are base64url.
  const pathHash = (hex: string) => hexToBase64(hex).replace(/\+/g, '-').replace(/\//g, '_');

  function paymentStatus(paymentHash: string, payment: z.output<typeof Payment>): PaymentStatus {
    if (payment.status === 'SUCCEEDED') {
      const preimage = checkedPreimage(BACKEND, paymentHash, payment.payment_preimage);
      return { paymentHash, state: 'succeeded', ...(preimage ? { preimage } : {}), feeMsat: payment.fee_msat ?? 0 };
    }
    return { paymentHash, state: payment.status === 'FAILED' ? 'failed' : 'pending' };
  }

  /** Pays `invoice`; `amountMsat` only for an invoice without an amount. */
  async function pay(invoice: string, maxFeeMsat: number, amountMsat?: number): Promise<PaidInvoice> {
    if (!Number.isSafeInteger(maxFeeMsat) || maxFeeMsat < 0) throw new RangeError('maxFeeMsat must be a non-negative integer');
    const response = await http.send({
      method: 'POST',
      path: '/v2/router/send',
      json: {
        payment_request: invoice,
        ...(amountMsat === undefined ? {} : { amt_msat: String(amountMsat) }),
        fee_limit_msat: String(maxFeeMsat),
        // LND stops trying new routes before our deadline, so a clear failure can still reach us.
        timeout_seconds: Math.max(1, Math.floor((http.timeoutMs * 0.8) / 1000)),
        no_inflight_updates: true,
      },
      firstLineOnly: true,
    });
    const line =
      response.status >= 200 && response.status < 300
        ? parseJson(response.body)
        : { error: parseJson(response.body) ?? { message: `HTTP ${response.status}` } };
    const parsed = StreamLine.safeParse(line);
    if (!parsed.success) {
      if (response.status >= 500) throw new ProviderUnavailable(`LND answered HTTP ${response.status} to a payment; outcome unknown`);
      throw new ProviderUnavailable('LND answered a payment with something unexpected; outcome unknown');
    }
    if ('error' in parsed.data) {
      const message = parsed.data.error.message.slice(0, 200);
      if (REFUSED_BEFORE_SENDING.test(message)) throw new PaymentFailed(`LND refused the payment: ${message}`);
      throw new ProviderUnavailable(`LND answered a payment with an error (${message}); outcome unknown`);
    }
    const payment = parsed.data.result;
    if (payment.status === 'FAILED') throw new PaymentFailed(`LND could not pay: ${payment.failure_reason ?? 'FAILED'}`);
    if (payment.status !== 'SUCCEEDED') throw new ProviderUnavailable(`LND reports the payment ${payment.status}; outcome unknown`);
    const preimage = checkedPreimage(BACKEND, payment.payment_hash, payment.payment_preimage);
    if (!preimage) throw new ProviderUnavailable('LND reported a payment without its preimage');
    return { paymentHash: payment.payment_hash, preimage, feeMsat: payment.fee_msat ?? 0 };
  }

  /** AddInvoice; without `amountMsat` (value and value_msat both left at 0), one whose payer names the amount. */
  async function addInvoice(request: CreateAmountlessInvoiceRequest, amountMsat?: number) {
    const created = await http.json(
      {
        method: 'POST',
        path: '/v1/invoices',
        json: {
          ...(amountMsat === undefined ? {} : { value_msat: String(amountMsat) }),
          ...(request.descriptionHash ? { description_hash: hexToBase64(request.descriptionHash) } : { memo: request.memo ?? '' }),
          ...(request.expirySeconds ? { expiry: String(request.expirySeconds) } : {}),
        },
      },
      Created,
    );
    return { invoice: created.payment_request, paymentHash: base64ToHex(created.r_hash) };
  }

  return {
    name: 'lnd',

    ...invoicingMethods(BACKEND, options.network, { issue: addInvoice, pay }),

    async lookupInvoice(paymentHash): Promise<InvoiceStatus | null> {
      const response = await http.send({ method: 'GET', path: `/v1/invoice/${paymentHash}` });
      if (notFound(response)) return null;
      const invoice = http.parse(response, Invoice);
      const settled = invoice.state === 'SETTLED';
      // LND knows the preimage of its open invoices too; only a settled one's proves payment.
      const preimage = settled && invoice.r_preimage ? checkedPreimage(BACKEND, paymentHash, base64ToHex(invoice.r_preimage)) : undefined;
      // An invoice without an amount (a session's return invoice): what its payer paid, as the other backends answer.
      const amountMsat = invoice.value_msat === 0 ? (invoice.amt_paid_msat ?? 0) : invoice.value_msat;
      return { paymentHash, settled, amountMsat, ...(preimage ? { preimage } : {}) };
    },

    async lookupPayment(paymentHash): Promise<PaymentStatus | null> {
      // The first update of a track stream is the payment's current state; an in-flight one would stream on.
      const response = await http.send({ method: 'GET', path: `/v2/router/track/${pathHash(paymentHash)}?no_inflight_updates=false`, firstLineOnly: true });
      if (notFound(response)) return null;
      const parsed = http.parse(response, StreamLine);
      if ('error' in parsed) {
        if (NOT_FOUND.test(parsed.error.message) || parsed.error.code === 5) return null;
        throw new ProviderUnavailable(`LND could not look the payment up (${parsed.error.message.slice(0, 200)})`);
      }
      if (parsed.result.payment_hash !== paymentHash) throw new ProviderUnavailable('LND answered about another payment hash');
      return paymentStatus(paymentHash, parsed.result);
    },

    async balance() {
      const balance = await http.json({ method: 'GET', path: '/v1/balance/channels' }, ChannelBalance);
      if (balance.local_balance) return { balanceMsat: balance.local_balance.msat };
      if (balance.balance != null) return { balanceMsat: balance.balance * 1000 }; // lnd before 0.13: sats
      throw new ProviderUnavailable('LND answered the balance without an amount');
    },
  };
}
