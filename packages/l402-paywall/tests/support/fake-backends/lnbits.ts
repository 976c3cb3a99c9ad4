// A fake LNbits (REST API /api/v1, `X-Api-Key`), answering in LNbits' shapes:
// 201 with the payment on creation, FastAPI `{detail}` errors, 520 with
// `{detail, status}` for a payment LNbits tried and failed, amounts in msat.
import { deliverWebhook, FakeNode, serveFake, type FakeServer } from './node.js';

export interface FakeLnbits extends FakeServer {
  node: FakeNode;
  invoiceKey: string;
  adminKey: string;
  /** An outside payer pays the invoice; LNbits posts its (unsigned) webhook. */
  settle(paymentHash: string): Promise<void>;
}

export async function startFakeLnbits(node = new FakeNode()): Promise<FakeLnbits> {
  const invoiceKey = 'inkey-0123456789abcdef';
  const adminKey = 'adminkey-0123456789abcdef';
  const ZERO = '0'.repeat(64);

  const incoming = (hash: string) => {
    const i = node.invoices.get(hash)!;
    return {
      checking_id: hash,
      payment_hash: hash,
      amount: i.amountMsat,
      fee: 0,
      memo: i.description ?? '',
      bolt11: i.invoice,
      status: i.settled ? 'success' : 'pending',
      preimage: i.settled ? i.preimage : ZERO,
      webhook: i.webhookUrl ?? null,
      time: i.createdAt,
    };
  };

  const server = await serveFake(node, {
    errorBody: { detail: 'Internal Server Error' },
    handle(request) {
      const key = request.headers['x-api-key'];
      if (key !== invoiceKey && key !== adminKey) return { status: 401, body: { detail: 'Invalid key' } };
      if (request.method === 'POST' && request.path === '/api/v1/payments') {
        const body = JSON.parse(request.body) as {
          out?: boolean;
          amount?: number;
          memo?: string;
          expiry?: number;
          webhook?: string;
          description_hash?: string;
          bolt11?: string;
        };
        if (body.out === false) {
          if (!Number.isInteger(body.amount) || body.amount! <= 0) return { status: 400, body: { detail: 'Invalid amount' } };
          const i = node.createInvoice({
            amountMsat: body.amount! * 1000,
            description: body.memo ?? '',
            descriptionHash: body.description_hash,
            expirySeconds: body.expiry,
            webhookUrl: body.webhook,
          });
          return { status: 201, body: { ...incoming(i.paymentHash), payment_request: i.invoice } };
        }
        if (key !== adminKey) return { status: 401, body: { detail: 'Invalid adminkey.' } };
        const paid = node.pay(body.bolt11 ?? '', undefined);
        if ('refused' in paid) return { status: 400, body: { detail: paid.refused } };
        const p = paid.payment;
        if (p.state === 'failed') return { status: 520, body: { detail: `Payment failed: ${p.reason}`, status: 'failed' } };
        return {
          status: 201,
          body: {
            checking_id: p.paymentHash,
            payment_hash: p.paymentHash,
            amount: -p.amountMsat,
            fee: -p.feeMsat,
            status: p.state === 'succeeded' ? 'success' : 'pending',
            preimage: p.preimage ?? ZERO,
          },
        };
      }
      const match = /^\/api\/v1\/payments\/([0-9a-f]{64})$/.exec(request.path);
      if (request.method === 'GET' && match) {
        const hash = match[1]!;
        if (node.invoices.has(hash)) {
          const details = incoming(hash);
          return { status: 200, body: { paid: details.status === 'success', status: details.status, preimage: details.preimage, details } };
        }
        const p = node.payments.get(hash);
        if (p) {
          const status = p.state === 'succeeded' ? 'success' : p.state;
          return {
            status: 200,
            body: {
              paid: p.state === 'succeeded',
              status,
              preimage: p.preimage ?? ZERO,
              details: { checking_id: hash, payment_hash: hash, amount: -p.amountMsat, fee: -p.feeMsat, status, preimage: p.preimage ?? ZERO },
            },
          };
        }
        return { status: 404, body: { detail: 'Payment does not exist.' } };
      }
      if (request.method === 'GET' && request.path === '/api/v1/wallet')
        return { status: 200, body: { id: 'wallet-1', name: 'fake', balance: node.balanceMsat } };
      return { status: 404, body: { detail: 'Not Found' } };
    },
  });

  return {
    ...server,
    node,
    invoiceKey,
    adminKey,
    async settle(paymentHash) {
      const invoice = node.settle(paymentHash);
      if (invoice.webhookUrl) await deliverWebhook(invoice.webhookUrl, JSON.stringify(incoming(paymentHash)));
    },
  };
}
