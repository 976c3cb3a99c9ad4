// A fake Phoenixd: form-encoded POSTs, HTTP Basic with the password only,
// plain-text errors, `{reason}` (HTTP 200) for a payment it could not make,
// amounts in sat (fees in msat), and signed webhooks (X-Phoenix-Signature =
// hex HMAC-SHA256 of the body keyed with the webhook secret's UTF-8 bytes).
import { createHmac, randomUUID } from 'node:crypto';
import { deliverWebhook, FakeNode, serveFake, type FakeServer } from './node.js';

export interface FakePhoenixd extends FakeServer {
  node: FakeNode;
  password: string;
  webhookSecret: string;
  sign(body: string): string;
  settle(paymentHash: string): Promise<void>;
}

const CREATEINVOICE_PARAMS = new Set(['amountSat', 'description', 'descriptionHash', 'expirySeconds', 'externalId', 'webhookUrl']);

export async function startFakePhoenixd(node = new FakeNode()): Promise<FakePhoenixd> {
  const password = 'phoenix-http-password';
  const webhookSecret = 'phoenix-webhook-secret';
  const sign = (body: string) => createHmac('sha256', Buffer.from(webhookSecret, 'utf8')).update(body, 'utf8').digest('hex');
  const paymentIds = new Map<string, string>();

  const server = await serveFake(node, {
    errorBody: 'java.lang.IllegalStateException: channel not ready',
    handle(request) {
      const auth = request.headers.authorization ?? '';
      if (auth !== `Basic ${Buffer.from(`:${password}`).toString('base64')}`) {
        return { status: 401, body: 'Invalid authentication (use basic auth with the http password set in phoenix.conf)' };
      }
      const form = new URLSearchParams(request.body);
      if (request.method === 'POST' && request.path === '/createinvoice') {
        const description = form.get('description');
        const descriptionHash = form.get('descriptionHash');
        if ((description === null) === (descriptionHash === null)) return { status: 400, body: 'Must provide either a description or descriptionHash' };
        if (description && description.length > 128) return { status: 400, body: 'Request parameter description is too long (max 128 characters)' };
        const unknown = [...form.keys()].find((name) => !CREATEINVOICE_PARAMS.has(name));
        if (unknown) return { status: 400, body: `Unknown parameter ${unknown} (fake Phoenixd: not in /createinvoice's API)` };
        // amountSat is optional: without it the invoice names no amount.
        const amountSat = form.get('amountSat');
        if (amountSat !== null && !/^\d+$/.test(amountSat)) return { status: 400, body: 'Invalid parameter amountSat: expected integer' };
        const i = node.createInvoice({
          ...(amountSat === null ? {} : { amountMsat: Number(amountSat) * 1000 }),
          ...(description !== null ? { description } : { descriptionHash: descriptionHash! }),
          ...(form.get('expirySeconds') ? { expirySeconds: Number(form.get('expirySeconds')) } : {}),
          ...(form.get('webhookUrl') ? { webhookUrl: form.get('webhookUrl')! } : {}),
        });
        // Phoenixd leaves out what is null (explicitNulls = false): no amountSat for an invoice without one.
        return { status: 200, body: { ...(amountSat === null ? {} : { amountSat: Number(amountSat) }), paymentHash: i.paymentHash, serialized: i.invoice } };
      }
      let match = /^\/payments\/incoming\/([0-9a-f]{64})$/.exec(request.path);
      if (request.method === 'GET' && match) {
        const i = node.invoices.get(match[1]!);
        if (!i) return { status: 404, body: 'Unknown endpoint (check api doc)' };
        return {
          status: 200,
          body: {
            type: 'incoming_payment',
            subType: 'lightning',
            paymentHash: i.paymentHash,
            preimage: i.preimage,
            externalId: null,
            description: i.description ?? null,
            invoice: i.invoice,
            isPaid: i.settled,
            isExpired: false,
            ...(i.amountless ? {} : { requestedSat: i.amountMsat / 1000 }),
            receivedSat: i.settled ? i.amountMsat / 1000 : 0,
            fees: 0,
            completedAt: i.settled ? Date.now() : null,
            createdAt: i.createdAt * 1000,
          },
        };
      }
      if (request.method === 'POST' && request.path === '/payinvoice') {
        const invoice = form.get('invoice');
        if (!invoice) return { status: 400, body: 'Missing request parameter invoice' };
        const amountSat = form.get('amountSat');
        const paid = node.pay(invoice, undefined, amountSat === null ? undefined : Number(amountSat) * 1000);
        if ('refused' in paid) {
          if (paid.refused.startsWith('invalid invoice')) return { status: 400, body: 'Invalid parameter invoice: expected bolt11invoice' };
          return { status: 200, body: { paymentHash: null, reason: paid.refused } };
        }
        const p = paid.payment;
        const paymentId = randomUUID();
        paymentIds.set(p.paymentHash, paymentId);
        if (p.state === 'pending') return { status: 200, body: null, hold: true }; // phoenixd answers once the payment settles
        if (p.state === 'failed') return { status: 200, body: { paymentHash: p.paymentHash, reason: p.reason } };
        return {
          status: 200,
          body: {
            recipientAmountSat: p.amountMsat / 1000,
            routingFeeSat: p.feeMsat / 1000,
            paymentId,
            paymentHash: p.paymentHash,
            paymentPreimage: p.preimage,
          },
        };
      }
      match = /^\/payments\/outgoingbyhash\/([0-9a-f]{64})$/.exec(request.path);
      if (request.method === 'GET' && match) {
        const p = node.payments.get(match[1]!);
        if (!p) return { status: 404, body: 'Unknown endpoint (check api doc)' };
        return {
          status: 200,
          body: {
            type: 'outgoing_payment',
            subType: 'lightning',
            paymentId: paymentIds.get(p.paymentHash),
            paymentHash: p.paymentHash,
            ...(p.preimage ? { preimage: p.preimage } : {}),
            isPaid: p.state === 'succeeded',
            sent: p.amountMsat / 1000,
            fees: p.feeMsat,
            ...(p.state !== 'pending' ? { completedAt: Date.now() } : {}),
            createdAt: p.createdAt,
          },
        };
      }
      if (request.method === 'GET' && request.path === '/getbalance')
        return { status: 200, body: { balanceSat: Math.floor(node.balanceMsat / 1000), feeCreditSat: 0 } };
      return { status: 404, body: 'Unknown endpoint (check api doc)' };
    },
  });

  return {
    ...server,
    node,
    password,
    webhookSecret,
    sign,
    async settle(paymentHash) {
      const invoice = node.settle(paymentHash);
      const body = JSON.stringify({ type: 'payment_received', timestamp: Date.now(), amountSat: invoice.amountMsat / 1000, paymentHash, externalId: null });
      if (invoice.webhookUrl) await deliverWebhook(invoice.webhookUrl, body, { 'X-Phoenix-Signature': sign(body) });
    },
  };
}
