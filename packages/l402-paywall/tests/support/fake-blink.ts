// A local stand-in for Blink's GraphQL API (https://api.blink.sv/graphql), answering
// the operations the Blink provider uses with the shapes of Blink's public schema:
// wallets (me.defaultAccount.wallets), lnInvoiceCreateOnBehalfOfRecipient,
// lnNoAmountInvoiceCreateOnBehalfOfRecipient, lnInvoicePaymentStatusByHash,
// lnInvoiceFeeProbe, lnNoAmountInvoiceFeeProbe, lnInvoicePaymentSend,
// lnNoAmountInvoicePaymentSend and walletById.transactionsByPaymentHash. Each
// mutation's `$input` must be declared with its schema type and carry exactly that
// input type's fields (a missing required field or an unknown one is a GraphQL
// error, as Blink's validation answers). Mutations report refusals in their own
// `errors` array (HTTP 200); transport-level problems are GraphQL `errors`; a wrong
// X-API-KEY is HTTP 401. It keeps a small ledger in sats and issues real BOLT11
// invoices signed with its node key. Tests queue faults per root field.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decodeInvoice, encodeInvoice } from 'l402-paywall/lightning';

export type BlinkField =
  | 'wallets'
  | 'lnInvoiceCreateOnBehalfOfRecipient'
  | 'lnNoAmountInvoiceCreateOnBehalfOfRecipient'
  | 'lnInvoicePaymentStatusByHash'
  | 'lnInvoiceFeeProbe'
  | 'lnNoAmountInvoiceFeeProbe'
  | 'lnInvoicePaymentSend'
  | 'lnNoAmountInvoicePaymentSend'
  | 'transactionsByPaymentHash';

export type BlinkFault =
  | { status: number; body?: string }
  | { graphqlErrors: { message: string; extensions?: { code: string } }[] }
  | { data: unknown }
  | { hang: true };

interface Send {
  status: 'SUCCESS' | 'PENDING' | 'FAILURE';
  feeSats: number;
  amountSats: number;
  preimage?: string;
}

export interface FakeBlink {
  /** GraphQL endpoint URL for BLINK_API_URL. */
  url: string;
  apiKey: string;
  btcWalletId: string;
  usdWalletId: string;
  balanceSats: number;
  /** Routing fee the fee probe announces and the payment spends, sats. */
  feeSats: number;
  /** lnInvoicePaymentSend answers PENDING and the payment stays in flight. */
  holdPayments: boolean;
  readonly requests: { field: BlinkField; variables: Record<string, unknown> }[];
  /** An incoming payment arrives for one of the fake's invoices (`amountSats` for one without an amount). */
  settle(paymentHash: string, amountSats?: number): void;
  addPayable(preimage: string): string;
  completePayment(paymentHash: string, outcome: 'SUCCESS' | 'FAILURE'): void;
  failNext(field: BlinkField, fault: BlinkFault): void;
  close(): Promise<void>;
}

const FIELDS: [BlinkField, RegExp][] = [
  ['lnInvoiceCreateOnBehalfOfRecipient', /\blnInvoiceCreateOnBehalfOfRecipient\s*\(/],
  ['lnNoAmountInvoiceCreateOnBehalfOfRecipient', /\blnNoAmountInvoiceCreateOnBehalfOfRecipient\s*\(/],
  ['lnInvoicePaymentStatusByHash', /\blnInvoicePaymentStatusByHash\s*\(/],
  ['lnInvoiceFeeProbe', /\blnInvoiceFeeProbe\s*\(/],
  ['lnNoAmountInvoiceFeeProbe', /\blnNoAmountInvoiceFeeProbe\s*\(/],
  ['lnInvoicePaymentSend', /\blnInvoicePaymentSend\s*\(/],
  ['lnNoAmountInvoicePaymentSend', /\blnNoAmountInvoicePaymentSend\s*\(/],
  ['transactionsByPaymentHash', /\btransactionsByPaymentHash\s*\(/],
  ['wallets', /\bwallets\s*\{/],
];

/** Each field's `$input` type in Blink's public schema: its name and its fields (true: required). */
const INPUTS: Partial<Record<BlinkField, { type: string; fields: Record<string, boolean> }>> = {
  lnInvoiceCreateOnBehalfOfRecipient: {
    type: 'LnInvoiceCreateOnBehalfOfRecipientInput',
    fields: { amount: true, descriptionHash: false, expiresIn: false, externalId: false, memo: false, recipientWalletId: true },
  },
  lnNoAmountInvoiceCreateOnBehalfOfRecipient: {
    type: 'LnNoAmountInvoiceCreateOnBehalfOfRecipientInput',
    fields: { expiresIn: false, externalId: false, memo: false, recipientWalletId: true },
  },
  lnInvoicePaymentStatusByHash: { type: 'LnInvoicePaymentStatusByHashInput', fields: { paymentHash: true } },
  lnInvoiceFeeProbe: { type: 'LnInvoiceFeeProbeInput', fields: { paymentRequest: true, walletId: true } },
  lnNoAmountInvoiceFeeProbe: { type: 'LnNoAmountInvoiceFeeProbeInput', fields: { amount: true, paymentRequest: true, walletId: true } },
  lnInvoicePaymentSend: { type: 'LnInvoicePaymentInput', fields: { memo: false, paymentRequest: true, walletId: true } },
  lnNoAmountInvoicePaymentSend: { type: 'LnNoAmountInvoicePaymentInput', fields: { amount: true, memo: false, paymentRequest: true, walletId: true } },
};

/** A GraphQL validation error for a request Blink's schema refuses, or undefined for one it accepts. */
function schemaError(field: BlinkField, query: string, variables: Record<string, unknown>): string | undefined {
  const input = INPUTS[field];
  if (!input) return undefined;
  if (!new RegExp(`\\$input\\s*:\\s*${input.type}!`).test(query)) return `Variable "$input" must be declared as ${input.type}!`;
  const given = variables.input;
  if (typeof given !== 'object' || given === null) return `Variable "$input" of required type "${input.type}!" was not provided.`;
  for (const name of Object.keys(given)) if (!(name in input.fields)) return `Field "${name}" is not defined by type "${input.type}".`;
  for (const [name, required] of Object.entries(input.fields))
    if (required && (given as Record<string, unknown>)[name] == null) return `Field "${input.type}.${name}" of required type was not provided.`;
  const amount = (given as Record<string, unknown>).amount;
  // SatAmount: a non-negative whole number of satoshis.
  if ('amount' in input.fields && !(Number.isSafeInteger(amount) && (amount as number) >= 0))
    return `Variable "$input" got invalid value ${JSON.stringify(amount)} at "input.amount"; SatAmount must be a whole number of sats.`;
  // An invoice without an amount has no `satoshis` to select.
  if (field === 'lnNoAmountInvoiceCreateOnBehalfOfRecipient' && /\bsatoshis\b/.test(query)) return 'Cannot query field "satoshis" on type "LnNoAmountInvoice".';
  return undefined;
}

export async function startFakeBlink(options: { apiKey?: string; balanceSats?: number; feeSats?: number } = {}): Promise<FakeBlink> {
  const nodeKey = bytesToHex(randomBytes(32));
  const invoices = new Map<string, { paymentRequest: string; preimage: string; satoshis: number; amountless?: boolean; paid: boolean }>();
  const payable = new Map<string, string>();
  const sends = new Map<string, Send[]>();

  const faults = new Map<BlinkField, BlinkFault>();
  const requests: FakeBlink['requests'] = [];
  const hanging = new Set<ServerResponse>();

  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  const blink: FakeBlink = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`,
    apiKey: options.apiKey ?? `blink_${randomBytes(16).toString('hex')}`,
    btcWalletId: 'b7d5f1a0-0000-4000-8000-00000000b7c0',
    usdWalletId: 'a1b2c3d4-0000-4000-8000-0000000000d5',
    balanceSats: options.balanceSats ?? 0,
    feeSats: options.feeSats ?? 0,
    holdPayments: false,
    requests,
    settle(paymentHash, amountSats) {
      const invoice = invoices.get(paymentHash);
      if (!invoice) throw new Error(`fake Blink: no invoice ${paymentHash}`);
      invoice.paid = true;
      if (invoice.amountless) invoice.satoshis = amountSats ?? 0;
      blink.balanceSats += invoice.satoshis;
    },
    addPayable(preimage) {
      const hash = bytesToHex(sha256(hexToBytes(preimage)));
      payable.set(hash, preimage);
      return hash;
    },
    completePayment(paymentHash, outcome) {
      const send = sends.get(paymentHash)?.find((s) => s.status === 'PENDING');
      if (!send) throw new Error(`fake Blink: no payment in flight for ${paymentHash}`);
      send.status = outcome;
      if (outcome === 'SUCCESS') send.preimage = payable.get(paymentHash);
      else blink.balanceSats += send.amountSats + send.feeSats;
    },
    failNext: (field, fault) => void faults.set(field, fault),
    close: () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  const wallets = () => [
    // Blink lists the USD (Stablesats) wallet too; a provider must not pick it for sats.
    { id: blink.usdWalletId, walletCurrency: 'USD', balance: 1234 },
    { id: blink.btcWalletId, walletCurrency: 'BTC', balance: blink.balanceSats },
  ];

  const refusal = (message: string, code: string) => ({ errors: [{ message, code, path: null }] });

  /** What a probe or payment sends, sats; or why Blink refuses it: the no-amount mutations are for invoices without an amount, and only they take one. */
  function amountToSend(field: BlinkField, invoiceMsat: number | null, given: unknown): number | string {
    const noAmount = field === 'lnNoAmountInvoiceFeeProbe' || field === 'lnNoAmountInvoicePaymentSend';
    if (noAmount && invoiceMsat !== null) return 'Invoice contains an amount; use the invoice payment mutation';
    if (!noAmount && invoiceMsat === null) return 'Invoice has no amount; use the no-amount invoice payment mutation';
    return noAmount ? Number(given) : invoiceMsat! / 1000;
  }

  function answer(field: BlinkField, variables: Record<string, unknown>): unknown {
    const input = (variables.input ?? {}) as Record<string, unknown>;
    switch (field) {
      case 'wallets':
        return { data: { me: { defaultAccount: { wallets: wallets() } } } };
      case 'lnInvoiceCreateOnBehalfOfRecipient': {
        if (input.recipientWalletId !== blink.btcWalletId) {
          return { data: { lnInvoiceCreateOnBehalfOfRecipient: { invoice: null, ...refusal('Invalid wallet for BTC invoice', 'INVALID_INPUT') } } };
        }
        const satoshis = Number(input.amount);
        const preimage = bytesToHex(randomBytes(32));
        const paymentHash = bytesToHex(sha256(hexToBytes(preimage)));
        const expiresIn = typeof input.expiresIn === 'number' ? input.expiresIn : 24 * 60;
        const paymentRequest = encodeInvoice(
          {
            network: 'regtest',
            amountMsat: satoshis * 1000,
            timestamp: Math.floor(Date.now() / 1000),
            paymentHash,
            paymentSecret: bytesToHex(randomBytes(32)),
            ...(typeof input.descriptionHash === 'string' ? { descriptionHash: input.descriptionHash } : { description: String(input.memo ?? '') }),
            expirySeconds: expiresIn * 60,
          },
          nodeKey,
        );
        invoices.set(paymentHash, { paymentRequest, preimage, satoshis, paid: false });
        return { data: { lnInvoiceCreateOnBehalfOfRecipient: { invoice: { paymentRequest, paymentHash, satoshis }, errors: [] } } };
      }
      case 'lnNoAmountInvoiceCreateOnBehalfOfRecipient': {
        if (input.recipientWalletId !== blink.btcWalletId) {
          return { data: { lnNoAmountInvoiceCreateOnBehalfOfRecipient: { invoice: null, ...refusal('Invalid wallet for BTC invoice', 'INVALID_INPUT') } } };
        }
        const preimage = bytesToHex(randomBytes(32));
        const paymentHash = bytesToHex(sha256(hexToBytes(preimage)));
        const expiresIn = typeof input.expiresIn === 'number' ? input.expiresIn : 24 * 60;
        const paymentRequest = encodeInvoice(
          {
            network: 'regtest',
            timestamp: Math.floor(Date.now() / 1000),
            paymentHash,
            paymentSecret: bytesToHex(randomBytes(32)),
            description: String(input.memo ?? ''),
            expirySeconds: expiresIn * 60,
          },
          nodeKey,
        );
        invoices.set(paymentHash, { paymentRequest, preimage, satoshis: 0, amountless: true, paid: false });
        return { data: { lnNoAmountInvoiceCreateOnBehalfOfRecipient: { invoice: { paymentRequest, paymentHash }, errors: [] } } };
      }
      case 'lnInvoicePaymentStatusByHash': {
        const hash = String(input.paymentHash);
        const invoice = invoices.get(hash);
        if (!invoice)
          return { data: null, errors: [{ message: 'Invoice not found', path: ['lnInvoicePaymentStatusByHash'], extensions: { code: 'NOT_FOUND' } }] };
        return {
          data: {
            lnInvoicePaymentStatusByHash: {
              paymentHash: hash,
              paymentPreimage: invoice.paid ? invoice.preimage : null,
              paymentRequest: invoice.paymentRequest,
              status: invoice.paid ? 'PAID' : 'PENDING',
            },
          },
        };
      }
      case 'lnInvoiceFeeProbe':
      case 'lnNoAmountInvoiceFeeProbe': {
        const decoded = decodeInvoice(String(input.paymentRequest));
        const amount = amountToSend(field, decoded.amountMsat, input.amount);
        if (typeof amount === 'string') return { data: { [field]: { amount: null, ...refusal(amount, 'INVALID_INPUT') } } };
        if (amount + blink.feeSats > blink.balanceSats)
          return { data: { [field]: { amount: null, ...refusal('Payment amount exceeds balance', 'INSUFFICIENT_BALANCE') } } };
        if (!payable.has(decoded.paymentHash))
          return { data: { [field]: { amount: 0, ...refusal('Unable to find a route for payment.', 'ROUTE_FINDING_ERROR') } } };
        return { data: { [field]: { amount: blink.feeSats, errors: [] } } };
      }
      case 'lnInvoicePaymentSend':
      case 'lnNoAmountInvoicePaymentSend': {
        const decoded = decodeInvoice(String(input.paymentRequest));
        const hash = decoded.paymentHash;
        const amountSats = amountToSend(field, decoded.amountMsat, input.amount);
        if (typeof amountSats === 'string') return { data: { [field]: { status: 'FAILURE', transaction: null, ...refusal(amountSats, 'INVALID_INPUT') } } };
        const history = sends.get(hash) ?? [];
        sends.set(hash, history);
        if (history.some((s) => s.status === 'SUCCESS')) return { data: { [field]: { status: 'ALREADY_PAID', errors: [], transaction: null } } };
        if (amountSats + blink.feeSats > blink.balanceSats) {
          return { data: { [field]: { status: 'FAILURE', transaction: null, ...refusal('Payment amount exceeds balance', 'INSUFFICIENT_BALANCE') } } };
        }
        const preimage = payable.get(hash);
        if (!preimage) {
          history.push({ status: 'FAILURE', feeSats: 0, amountSats });
          return { data: { [field]: { status: 'FAILURE', transaction: null, ...refusal('Unable to find a route for payment.', 'ROUTE_FINDING_ERROR') } } };
        }
        blink.balanceSats -= amountSats + blink.feeSats;
        const send: Send = { status: blink.holdPayments ? 'PENDING' : 'SUCCESS', feeSats: blink.feeSats, amountSats, ...(!blink.holdPayments && { preimage }) };
        history.push(send);
        const settlementVia = { __typename: 'SettlementViaLn', preImage: send.preimage ?? null };
        return { data: { [field]: { status: send.status, errors: [], transaction: { settlementFee: send.feeSats, settlementVia } } } };
      }
      case 'transactionsByPaymentHash': {
        const hash = String(variables.paymentHash);
        if (variables.walletId !== blink.btcWalletId) return { data: null, errors: [{ message: 'Wallet not found', extensions: { code: 'NOT_FOUND' } }] };
        const invoice = invoices.get(hash);
        const txs = [
          ...(invoice?.paid
            ? [{ direction: 'RECEIVE', status: 'SUCCESS', settlementFee: 0, settlementVia: { __typename: 'SettlementViaLn', preImage: invoice.preimage } }]
            : []),
          ...(sends.get(hash) ?? []).map((s) => ({
            direction: 'SEND',
            status: s.status,
            settlementFee: s.feeSats,
            settlementVia: { __typename: 'SettlementViaLn', preImage: s.preimage ?? null },
          })),
        ];
        return { data: { me: { defaultAccount: { walletById: { transactionsByPaymentHash: txs } } } } };
      }
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const send = (status: number, body: string) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(body);
    };
    if (req.method !== 'POST' || req.url !== '/graphql') return send(404, '{"error":"not found"}');
    if (req.headers['x-api-key'] !== blink.apiKey) return send(401, '{"error":"Unauthorized"}');
    let body: { query?: string; variables?: Record<string, unknown> };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      return send(400, JSON.stringify({ errors: [{ message: 'Invalid JSON' }] }));
    }
    const field = FIELDS.find(([, pattern]) => pattern.test(body.query ?? ''))?.[0];
    if (!field)
      return send(400, JSON.stringify({ errors: [{ message: 'Unknown operation (fake Blink)', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] }));
    requests.push({ field, variables: body.variables ?? {} });
    const invalid = schemaError(field, body.query ?? '', body.variables ?? {});
    if (invalid) return send(200, JSON.stringify({ data: null, errors: [{ message: invalid, extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } }] }));
    const fault = faults.get(field);
    if (fault) {
      faults.delete(field);
      if ('hang' in fault) return void hanging.add(res);
      if ('status' in fault) return send(fault.status, fault.body ?? '');
      if ('graphqlErrors' in fault) return send(200, JSON.stringify({ data: null, errors: fault.graphqlErrors }));
      return send(200, JSON.stringify({ data: fault.data }));
    }
    send(200, JSON.stringify(answer(field, body.variables ?? {})));
  }

  return blink;
}
