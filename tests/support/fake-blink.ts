// A local stand-in for Blink's GraphQL API (https://api.blink.sv/graphql), answering
// the operations the Blink provider uses with the shapes of Blink's public schema:
// wallets (me.defaultAccount.wallets), lnInvoiceCreateOnBehalfOfRecipient,
// lnInvoicePaymentStatusByHash, lnInvoiceFeeProbe, lnInvoicePaymentSend and
// walletById.transactionsByPaymentHash. Mutations report refusals in their own
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
  | 'lnInvoicePaymentStatusByHash'
  | 'lnInvoiceFeeProbe'
  | 'lnInvoicePaymentSend'
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
  /** An incoming payment arrives for one of the fake's invoices. */
  settle(paymentHash: string): void;
  addPayable(preimage: string): string;
  completePayment(paymentHash: string, outcome: 'SUCCESS' | 'FAILURE'): void;
  failNext(field: BlinkField, fault: BlinkFault): void;
  close(): Promise<void>;
}

const FIELDS: [BlinkField, RegExp][] = [
  ['lnInvoiceCreateOnBehalfOfRecipient', /\blnInvoiceCreateOnBehalfOfRecipient\s*\(/],
  ['lnInvoicePaymentStatusByHash', /\blnInvoicePaymentStatusByHash\s*\(/],
  ['lnInvoiceFeeProbe', /\blnInvoiceFeeProbe\s*\(/],
  ['lnInvoicePaymentSend', /\blnInvoicePaymentSend\s*\(/],
  ['transactionsByPaymentHash', /\btransactionsByPaymentHash\s*\(/],
  ['wallets', /\bwallets\s*\{/],
];

export async function startFakeBlink(options: { apiKey?: string; balanceSats?: number; feeSats?: number } = {}): Promise<FakeBlink> {
  const nodeKey = bytesToHex(randomBytes(32));
  const invoices = new Map<string, { paymentRequest: string; preimage: string; satoshis: number; paid: boolean }>();
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
    settle(paymentHash) {
      const invoice = invoices.get(paymentHash);
      if (!invoice) throw new Error(`fake Blink: no invoice ${paymentHash}`);
      invoice.paid = true;
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
      case 'lnInvoiceFeeProbe': {
        const decoded = decodeInvoice(String(input.paymentRequest));
        const amountSats = (decoded.amountMsat ?? 0) / 1000;
        if (amountSats + blink.feeSats > blink.balanceSats)
          return { data: { lnInvoiceFeeProbe: { amount: null, ...refusal('Payment amount exceeds balance', 'INSUFFICIENT_BALANCE') } } };
        if (!payable.has(decoded.paymentHash))
          return { data: { lnInvoiceFeeProbe: { amount: 0, ...refusal('Unable to find a route for payment.', 'ROUTE_FINDING_ERROR') } } };
        return { data: { lnInvoiceFeeProbe: { amount: blink.feeSats, errors: [] } } };
      }
      case 'lnInvoicePaymentSend': {
        const decoded = decodeInvoice(String(input.paymentRequest));
        const hash = decoded.paymentHash;
        const amountSats = (decoded.amountMsat ?? 0) / 1000;
        const history = sends.get(hash) ?? [];
        sends.set(hash, history);
        if (history.some((s) => s.status === 'SUCCESS')) return { data: { lnInvoicePaymentSend: { status: 'ALREADY_PAID', errors: [], transaction: null } } };
        if (amountSats + blink.feeSats > blink.balanceSats) {
          return {
            data: { lnInvoicePaymentSend: { status: 'FAILURE', transaction: null, ...refusal('Payment amount exceeds balance', 'INSUFFICIENT_BALANCE') } },
          };
        }
        const preimage = payable.get(hash);
        if (!preimage) {
          history.push({ status: 'FAILURE', feeSats: 0, amountSats });
          return {
            data: { lnInvoicePaymentSend: { status: 'FAILURE', transaction: null, ...refusal('Unable to find a route for payment.', 'ROUTE_FINDING_ERROR') } },
          };
        }
        blink.balanceSats -= amountSats + blink.feeSats;
        const send: Send = { status: blink.holdPayments ? 'PENDING' : 'SUCCESS', feeSats: blink.feeSats, amountSats, ...(!blink.holdPayments && { preimage }) };
        history.push(send);
        const settlementVia = { __typename: 'SettlementViaLn', preImage: send.preimage ?? null };
        return { data: { lnInvoicePaymentSend: { status: send.status, errors: [], transaction: { settlementFee: send.feeSats, settlementVia } } } };
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
