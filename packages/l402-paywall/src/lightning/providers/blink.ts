// Blink (custodial, GraphQL API at https://api.blink.sv/graphql, `X-API-KEY`).
// Amounts at Blink are whole satoshis in the BTC wallet; we speak msat and refuse
// what Blink cannot express rather than round. Webhooks come through Svix and are
// verified here (signature over the raw body, constant time, 5-minute tolerance).
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { base64 } from '@scure/base';
import { z } from 'zod';
import { decodeInvoice } from '../bolt11.js';
import { PaymentFailed, ProviderUnavailable, WebhookRejected, ProviderConfigError, ProviderUnsupported } from '../provider.js';
import type { CreatedInvoice, InvoiceStatus, LightningProvider, PaidInvoice, PaymentStatus, WebhookDelivery, WebhookEvent } from '../provider.js';
import {
  checkAmountlessPayment,
  checkedPreimage,
  equalBytes,
  issuedAmountlessInvoice,
  issuedInvoice,
  Hex32,
  invoiceToPay,
  satToMsat,
  wholeSats,
} from './checks.js';
import { backendHttp, type CommonBackendOptions } from './http.js';

export interface BlinkOptions extends CommonBackendOptions {
  apiKey: string;
  /** The BTC wallet to use; by default the account's first BTC wallet. */
  walletId?: string;
  /** e.g. https://api.blink.sv/graphql */
  apiUrl: string;
  /** Svix signing secret of the callback endpoint (`whsec_…`); without it every webhook is refused. */
  webhookSecret?: string;
}

const WEBHOOK_TOLERANCE_SECONDS = 5 * 60;

const sats = z.number().int().nonnegative();

const GraphqlAnswer = z.object({
  data: z.unknown().optional(),
  errors: z.array(z.object({ message: z.string(), extensions: z.object({ code: z.string().optional() }).loose().optional() }).loose()).optional(),
});
/** The `errors` list every Blink mutation payload carries (refusals, not transport failures). */
const PayloadErrors = z.array(z.object({ message: z.string(), code: z.string().nullish() }).loose());

const Wallets = z.object({
  me: z
    .object({
      defaultAccount: z.object({
        wallets: z.array(z.object({ id: z.string(), walletCurrency: z.string(), balance: z.number().int() })),
      }),
    })
    .nullable(),
});

const InvoiceCreated = z.object({
  lnInvoiceCreateOnBehalfOfRecipient: z.object({
    errors: PayloadErrors,
    invoice: z.object({ paymentRequest: z.string().min(1), paymentHash: Hex32 }).nullish(),
  }),
});

const InvoiceStatusAnswer = z.object({
  lnInvoicePaymentStatusByHash: z.object({
    paymentHash: Hex32.nullish(),
    paymentPreimage: z.string().nullish(),
    paymentRequest: z.string().nullish(),
    status: z.enum(['PAID', 'PENDING', 'EXPIRED']).nullish(),
  }),
});

const NoAmountInvoiceCreated = z.object({
  lnNoAmountInvoiceCreateOnBehalfOfRecipient: z.object({
    errors: PayloadErrors,
    invoice: z.object({ paymentRequest: z.string().min(1), paymentHash: Hex32 }).nullish(),
  }),
});

const ProbePayload = z.object({ errors: PayloadErrors, amount: sats.nullish() });
const FeeProbe = z.object({ lnInvoiceFeeProbe: ProbePayload });
const NoAmountFeeProbe = z.object({ lnNoAmountInvoiceFeeProbe: ProbePayload });

const Settlement = z.object({ __typename: z.string().optional(), preImage: z.string().nullish() }).loose().nullish();
const BlinkTransaction = z.object({
  direction: z.enum(['SEND', 'RECEIVE']),
  status: z.enum(['SUCCESS', 'PENDING', 'FAILURE']),
  settlementFee: z.number().int(),
  settlementVia: Settlement,
});

const SendPayload = z.object({
  errors: PayloadErrors,
  status: z.enum(['SUCCESS', 'FAILURE', 'PENDING', 'ALREADY_PAID']).nullish(),
  transaction: BlinkTransaction.partial().nullish(),
});
const PaymentSent = z.object({ lnInvoicePaymentSend: SendPayload });
const NoAmountPaymentSent = z.object({ lnNoAmountInvoicePaymentSend: SendPayload });

const TransactionsByHash = z.object({
  me: z
    .object({
      defaultAccount: z.object({
        walletById: z.object({ transactionsByPaymentHash: z.array(BlinkTransaction).optional() }).loose(),
      }),
    })
    .nullable(),
});

// The `receive.*` Svix events name the incoming payment in transaction.initiationVia (dev.blink.sv/api/webhooks).
const WebhookEnvelope = z.object({ eventType: z.string() }).loose();
const WebhookBody = z.object({
  eventType: z.string(),
  transaction: z.object({ initiationVia: z.object({ paymentHash: Hex32 }).loose() }).loose(),
});

const SEND_RESULT = `status
    errors { message code }
    transaction { settlementFee settlementVia { __typename ... on SettlementViaLn { preImage } ... on SettlementViaIntraLedger { preImage } } }`;

const Q = {
  wallets: 'query Wallets { me { defaultAccount { wallets { id walletCurrency balance } } } }',
  createInvoice: `mutation CreateInvoice($input: LnInvoiceCreateOnBehalfOfRecipientInput!) {
  lnInvoiceCreateOnBehalfOfRecipient(input: $input) { invoice { paymentRequest paymentHash satoshis } errors { message code } }
}`,
  // Blink's invoice without an amount has no `satoshis` field, and takes no description hash.
  createNoAmountInvoice: `mutation CreateNoAmountInvoice($input: LnNoAmountInvoiceCreateOnBehalfOfRecipientInput!) {
  lnNoAmountInvoiceCreateOnBehalfOfRecipient(input: $input) { invoice { paymentRequest paymentHash } errors { message code } }
}`,
  invoiceStatus: `query InvoiceStatus($input: LnInvoicePaymentStatusByHashInput!) {
  lnInvoicePaymentStatusByHash(input: $input) { paymentHash paymentPreimage paymentRequest status }
}`,
  feeProbe: `mutation FeeProbe($input: LnInvoiceFeeProbeInput!) { lnInvoiceFeeProbe(input: $input) { amount errors { message code } } }`,
  noAmountFeeProbe: `mutation NoAmountFeeProbe($input: LnNoAmountInvoiceFeeProbeInput!) {
  lnNoAmountInvoiceFeeProbe(input: $input) { amount errors { message code } }
}`,
  pay: `mutation Pay($input: LnInvoicePaymentInput!) {
  lnInvoicePaymentSend(input: $input) { ${SEND_RESULT} }
}`,
  payNoAmount: `mutation PayNoAmount($input: LnNoAmountInvoicePaymentInput!) {
  lnNoAmountInvoicePaymentSend(input: $input) { ${SEND_RESULT} }
}`,
  transactions: `query Transactions($walletId: WalletId!, $paymentHash: PaymentHash!) {
  me { defaultAccount { walletById(walletId: $walletId) { ... on BTCWallet { transactionsByPaymentHash(paymentHash: $paymentHash) {
    direction status settlementFee settlementVia { __typename ... on SettlementViaLn { preImage } ... on SettlementViaIntraLedger { preImage } }
  } } } } }
}`,
};

/** Decodes `whsec_<base64>`; throws ProviderConfigError naming the setting (not its value). */
export function parseSvixSecret(secret: string): Uint8Array {
  const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret.trim());
  const key = match ? decodeBase64(match[1]!) : new Uint8Array(0);
  if (key.length < 16)
    throw new ProviderConfigError(
      'BLINK_WEBHOOK_SECRET',
      "BLINK_WEBHOOK_SECRET must be the endpoint's signing secret as Blink shows it (whsec_ followed by base64)",
    );
  return key;
}

/** Verifies a Svix delivery (svix-id, svix-timestamp, svix-signature) over the raw body; returns the svix-id. */
export function verifySvix(key: Uint8Array, delivery: WebhookDelivery): string {
  const id = delivery.headers.get('svix-id');
  const timestamp = delivery.headers.get('svix-timestamp');
  const signatures = delivery.headers.get('svix-signature');
  if (!id || !timestamp || !signatures) throw new WebhookRejected('Missing Svix signature headers');
  if (!/^\d{1,12}$/.test(timestamp)) throw new WebhookRejected('Bad Svix timestamp');
  const nowSeconds = Math.floor((delivery.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > WEBHOOK_TOLERANCE_SECONDS) throw new WebhookRejected('Svix timestamp outside the 5-minute tolerance');
  const expected = hmac(sha256, key, utf8ToBytes(`${id}.${timestamp}.${delivery.body}`));
  // Several signatures are sent while the secret rotates; any one valid v1 signature is enough.
  let valid = false;
  for (const entry of signatures.split(' ')) {
    const [version, signature] = entry.split(',', 2);
    if (version !== 'v1' || !signature) continue;
    if (equalBytes(decodeBase64(signature), expected)) valid = true;
  }
  if (!valid) throw new WebhookRejected('Svix signature does not match');
  return id;
}

// A malformed signature or secret decodes to nothing, which matches nothing.
function decodeBase64(text: string): Uint8Array {
  try {
    return base64.decode(text);
  } catch {
    return new Uint8Array(0);
  }
}

/** Blink counts an invoice's expiry in minutes. */
const expiresIn = (expirySeconds: number | undefined) => (expirySeconds === undefined ? {} : { expiresIn: Math.max(1, Math.ceil(expirySeconds / 60)) });

const isAuthError = (code: string | undefined | null, message: string) =>
  /^(UNAUTHENTICATED|NOT_AUTHORIZED|UNAUTHORIZED|FORBIDDEN)$/.test(code ?? '') || /not authori[sz]ed|unauthori[sz]ed|invalid api key/i.test(message);

export function createBlinkProvider(options: BlinkOptions): LightningProvider {
  const { apiKey, apiUrl } = options;
  const webhookKey = options.webhookSecret ? parseSvixSecret(options.webhookSecret) : undefined;
  let walletIdPromise: Promise<string> | undefined;

  const http = backendHttp({
    backend: 'Blink',
    baseUrl: apiUrl,
    timeoutMs: options.timeoutMs,
    fetch: options.fetch,
    headers: { 'x-api-key': apiKey },
    credentialSetting: 'BLINK_API_KEY',
  });

  /** One GraphQL operation: transport failures, HTTP errors and top-level `errors` become provider errors. */
  async function graphql<T>(operation: string, query: string, variables: Record<string, unknown>, schema: z.ZodType<T>): Promise<T> {
    const answer = await http.json({ method: 'POST', path: '', json: { query, variables } }, GraphqlAnswer);
    if (answer.errors?.length) {
      if (answer.errors.some((e) => isAuthError(e.extensions?.code, e.message))) {
        throw new ProviderConfigError(
          'BLINK_API_KEY',
          `BLINK_API_KEY may not ${operation} (${answer.errors[0]!.message}); give the key the Read, Receive and Write scopes`,
        );
      }
      throw new ProviderUnavailable(`Blink refused to ${operation}: ${answer.errors.map((e) => e.message).join('; ')}`);
    }
    const data = schema.safeParse(answer.data);
    if (!data.success) throw new ProviderUnavailable(`Blink sent a malformed answer to ${operation}: ${data.error.issues[0]?.message ?? 'invalid'}`);
    return data.data;
  }

  async function wallets() {
    const { me } = await graphql('list wallets', Q.wallets, {}, Wallets);
    if (!me) throw new ProviderConfigError('BLINK_API_KEY', 'BLINK_API_KEY is not an account API key (Blink answered no account)');
    return me.defaultAccount.wallets;
  }

  function pickWallet(list: Awaited<ReturnType<typeof wallets>>) {
    if (options.walletId) {
      const wallet = list.find((w) => w.id === options.walletId);
      if (!wallet) throw new ProviderConfigError('BLINK_WALLET_ID', 'BLINK_WALLET_ID is not a wallet of the account BLINK_API_KEY belongs to');
      if (wallet.walletCurrency !== 'BTC')
        throw new ProviderConfigError('BLINK_WALLET_ID', "BLINK_WALLET_ID names a USD (Stablesats) wallet; use the BTC wallet's id");
      return wallet;
    }
    const wallet = list.find((w) => w.walletCurrency === 'BTC');
    if (!wallet) throw new ProviderConfigError('BLINK_API_KEY', 'The Blink account of BLINK_API_KEY has no BTC wallet');
    return wallet;
  }

  /** The BTC wallet's id, asked once (a failed attempt is forgotten so the next call retries). */
  function walletId(): Promise<string> {
    walletIdPromise ??= wallets().then(
      (list) => pickWallet(list).id,
      (error) => {
        walletIdPromise = undefined;
        throw error;
      },
    );
    return walletIdPromise;
  }

  async function outgoing(paymentHash: string) {
    const { me } = await graphql('look up a payment', Q.transactions, { walletId: await walletId(), paymentHash }, TransactionsByHash);
    if (!me) throw new ProviderConfigError('BLINK_API_KEY', 'BLINK_API_KEY is not an account API key (Blink answered no account)');
    return (me.defaultAccount.walletById.transactionsByPaymentHash ?? []).filter((t) => t.direction === 'SEND');
  }

  async function lookupPayment(paymentHash: string): Promise<PaymentStatus | null> {
    const hash = paymentHash.toLowerCase();
    const sends = await outgoing(hash);
    if (sends.length === 0) return null;
    // A failed attempt may be followed by a retry: any success wins, then anything in flight.
    const success = sends.find((t) => t.status === 'SUCCESS');
    if (success) {
      const preimage = checkedPreimage('Blink', hash, success.settlementVia?.preImage);
      return { paymentHash: hash, state: 'succeeded', ...(preimage && { preimage }), feeMsat: satToMsat(Math.abs(success.settlementFee)) };
    }
    if (sends.some((t) => t.status === 'PENDING')) return { paymentHash: hash, state: 'pending' };
    return { paymentHash: hash, state: 'failed' };
  }

  /** Probes the fee, then pays `invoice`; `amountSats` only for an invoice without an amount (Blink's no-amount mutations). */
  async function pay(invoice: string, maxFeeMsat: number, amountSats?: number): Promise<PaidInvoice> {
    const { paymentHash } = invoiceToPay(invoice);
    const wallet = await walletId();
    const input = { walletId: wallet, paymentRequest: invoice, ...(amountSats !== undefined && { amount: amountSats }) };
    const probe =
      amountSats === undefined
        ? (await graphql('estimate the fee', Q.feeProbe, { input }, FeeProbe)).lnInvoiceFeeProbe
        : (await graphql('estimate the fee', Q.noAmountFeeProbe, { input }, NoAmountFeeProbe)).lnNoAmountInvoiceFeeProbe;
    if (probe.errors.length) throw new PaymentFailed(`Not paid: Blink found no way to pay (${probe.errors.map((e) => e.message).join('; ')})`);
    if (probe.amount === null || probe.amount === undefined) throw new ProviderUnavailable('Blink answered the fee probe without an amount');
    const probedFeeMsat = satToMsat(probe.amount);
    if (probedFeeMsat > maxFeeMsat) throw new PaymentFailed(`Not paid: the routing fee would be ${probedFeeMsat} msat, above the limit of ${maxFeeMsat} msat`);

    const sent =
      amountSats === undefined
        ? (await graphql('pay an invoice', Q.pay, { input }, PaymentSent)).lnInvoicePaymentSend
        : (await graphql('pay an invoice', Q.payNoAmount, { input }, NoAmountPaymentSent)).lnNoAmountInvoicePaymentSend;
    if (sent.status === 'PENDING') throw new ProviderUnavailable('Blink is still sending the payment; look it up later');
    const sentPreimage = checkedPreimage('Blink', paymentHash, sent.transaction?.settlementVia?.preImage);
    if (sent.status === 'ALREADY_PAID' || (sent.status === 'SUCCESS' && !sentPreimage)) {
      const known = await lookupPayment(paymentHash);
      if (known?.state === 'succeeded' && known.preimage) return { paymentHash, preimage: known.preimage, feeMsat: known.feeMsat ?? 0 };
      throw new ProviderUnavailable(`Blink answered ${sent.status} but has no preimage for this payment yet`);
    }
    if (sent.status !== 'SUCCESS') {
      // A refusal comes as FAILURE or as payload errors; no status and no reason is not an answer.
      if (!sent.status && !sent.errors.length) throw new ProviderUnavailable('Blink answered the payment without a status');
      throw new PaymentFailed(`Not paid: Blink refused the payment (${sent.errors.map((e) => e.message).join('; ') || sent.status})`);
    }
    const fee = sent.transaction?.settlementFee;
    return { paymentHash, preimage: sentPreimage!, feeMsat: fee !== undefined ? satToMsat(Math.abs(fee)) : probedFeeMsat };
  }

  return {
    name: 'blink',

    async createInvoice(request): Promise<CreatedInvoice> {
      const amountSats = wholeSats(request.amountMsat, 'Blink');
      const descriptionHash = request.descriptionHash?.toLowerCase();
      const input = {
        recipientWalletId: await walletId(),
        amount: amountSats,
        ...(descriptionHash ? { descriptionHash } : { memo: request.memo ?? '' }),
        ...expiresIn(request.expirySeconds),
      };
      const { lnInvoiceCreateOnBehalfOfRecipient: created } = await graphql('create an invoice', Q.createInvoice, { input }, InvoiceCreated);
      if (created.errors.length || !created.invoice) {
        throw new ProviderUnavailable(`Blink did not create the invoice: ${created.errors.map((e) => e.message).join('; ') || 'no invoice returned'}`);
      }
      return issuedInvoice('Blink', created.invoice.paymentRequest, {
        amountMsat: request.amountMsat,
        paymentHash: created.invoice.paymentHash,
        descriptionHash,
        network: options.network,
      });
    },

    async createAmountlessInvoice(request) {
      if (request.descriptionHash) throw new ProviderUnsupported('Blink makes invoices without an amount with a memo only, not a description hash');
      const input = {
        recipientWalletId: await walletId(),
        memo: request.memo ?? '',
        ...expiresIn(request.expirySeconds),
      };
      const { lnNoAmountInvoiceCreateOnBehalfOfRecipient: created } = await graphql(
        'create an invoice without an amount',
        Q.createNoAmountInvoice,
        { input },
        NoAmountInvoiceCreated,
      );
      if (created.errors.length || !created.invoice) {
        throw new ProviderUnavailable(`Blink did not create the invoice: ${created.errors.map((e) => e.message).join('; ') || 'no invoice returned'}`);
      }
      return issuedAmountlessInvoice('Blink', created.invoice.paymentRequest, { paymentHash: created.invoice.paymentHash, network: options.network });
    },

    async lookupInvoice(paymentHash: string): Promise<InvoiceStatus | null> {
      const hash = paymentHash.toLowerCase();
      let status;
      try {
        ({ lnInvoicePaymentStatusByHash: status } = await graphql(
          'look up an invoice',
          Q.invoiceStatus,
          { input: { paymentHash: hash } },
          InvoiceStatusAnswer,
        ));
      } catch (error) {
        // Blink answers an unknown hash with a GraphQL error, not an empty result.
        if (error instanceof ProviderUnavailable && /not found|could ?n[o']t find/i.test(error.message)) return null;
        throw error;
      }
      if (!status.paymentRequest || !status.status) return null;
      let decoded;
      try {
        decoded = decodeInvoice(status.paymentRequest);
      } catch (error) {
        throw new ProviderUnavailable(`Blink returned an invoice that does not decode: ${(error as Error).message}`);
      }
      if (decoded.paymentHash !== hash || (status.paymentHash && status.paymentHash !== hash))
        throw new ProviderUnavailable('Blink answered about another payment hash');
      if (decoded.amountMsat === null) throw new ProviderUnavailable('Blink returned an invoice without an amount');
      if (status.status !== 'PAID') return { paymentHash: hash, settled: false, amountMsat: decoded.amountMsat };
      const preimage = checkedPreimage('Blink', hash, status.paymentPreimage);
      if (!preimage) throw new ProviderUnavailable('Blink reports the invoice paid without its preimage');
      return { paymentHash: hash, settled: true, preimage, amountMsat: decoded.amountMsat };
    },

    async payInvoice({ invoice, maxFeeMsat }): Promise<PaidInvoice> {
      if (invoiceToPay(invoice).amountMsat === null) throw new PaymentFailed('This invoice names no amount; pay it with payAmountlessInvoice');
      return pay(invoice, maxFeeMsat);
    },

    async payAmountlessInvoice({ invoice, amountMsat, maxFeeMsat }): Promise<PaidInvoice> {
      checkAmountlessPayment(invoice, amountMsat);
      // Blink's no-amount payment takes whole satoshis: a fraction is refused, not rounded.
      if (amountMsat % 1000 !== 0) throw new PaymentFailed(`Blink pays whole satoshis; ${amountMsat} msat is not`);
      return pay(invoice, maxFeeMsat, amountMsat / 1000);
    },

    lookupPayment,

    async balance() {
      const wallet = pickWallet(await wallets());
      return { balanceMsat: satToMsat(wallet.balance) };
    },

    readWebhook(delivery: WebhookDelivery): WebhookEvent | null {
      if (!webhookKey) throw new WebhookRejected('BLINK_WEBHOOK_SECRET is not set, so no Blink webhook can be verified');
      const eventId = verifySvix(webhookKey, delivery);
      let json: unknown;
      try {
        json = JSON.parse(delivery.body);
      } catch {
        throw new WebhookRejected('Signed Blink webhook is not JSON');
      }
      const envelope = WebhookEnvelope.safeParse(json);
      if (!envelope.success) throw new WebhookRejected('Signed Blink webhook has no eventType');
      // Authentic, but not money received over Lightning (send.*, receive.onchain ...): nothing to do.
      if (envelope.data.eventType !== 'receive.lightning') return null;
      const body = WebhookBody.safeParse(json);
      if (!body.success) throw new WebhookRejected('Signed Blink receive.lightning webhook carries no payment hash');
      return { paymentHash: body.data.transaction.initiationVia.paymentHash, eventId };
    },
  };
}
