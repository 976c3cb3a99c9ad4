// A fake LND REST gateway: `Grpc-Metadata-macaroon` (a bad one is gRPC Unknown,
// HTTP 500, like lnd), bytes as base64, uint64 as strings, errors as
// {code, message, details}, and the router's NDJSON streams: /v2/router/send
// (one final line with no_inflight_updates) and /v2/router/track (current
// state first, then stays open while in flight).
import { FakeNode, serveFake, type FakePayment, type FakeServer } from './node.js';

export interface FakeLnd extends FakeServer {
  node: FakeNode;
  macaroon: string;
}

const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

// The fields of lnrpc.Invoice a client may set (lightning.proto); any other name is refused, as a strict proto JSON reader does.
const INVOICE_FIELDS = new Set([
  'memo',
  'r_preimage',
  'value',
  'value_msat',
  'description_hash',
  'expiry',
  'fallback_addr',
  'cltv_expiry',
  'route_hints',
  'private',
  'is_amp',
]);

/** `tls`: serve https with this (self-signed) certificate, as lnd does. */
export async function startFakeLnd(node = new FakeNode(), tls?: { key: string; cert: string }): Promise<FakeLnd> {
  const macaroon = '0201036c6e6402f801030a10' + 'ab'.repeat(40);
  const grpcError = (code: number, message: string) => ({ code, message, details: [] });
  const paymentJson = (p: FakePayment) => ({
    payment_hash: p.paymentHash,
    value_msat: String(p.amountMsat),
    payment_preimage: p.preimage ?? '0'.repeat(64),
    status: p.state === 'succeeded' ? 'SUCCEEDED' : p.state === 'failed' ? 'FAILED' : 'IN_FLIGHT',
    fee_msat: String(p.state === 'succeeded' ? p.feeMsat : 0),
    failure_reason: p.state === 'failed' ? 'FAILURE_REASON_NO_ROUTE' : 'FAILURE_REASON_NONE', // lnd reports a fee limit too low as no route too
    creation_time_ns: String(p.createdAt * 1e6),
    htlcs: [],
  });
  const line = (value: unknown) => JSON.stringify(value) + '\n';

  const server = await serveFake(node, {
    ...(tls ? { tls } : {}),
    errorBody: grpcError(2, 'rpc error: internal'),
    handle(request) {
      const sent = request.headers['grpc-metadata-macaroon'];
      if (!sent) return { status: 500, body: grpcError(2, 'expected 1 macaroon, got 0') };
      if (sent !== macaroon) return { status: 500, body: grpcError(2, 'verification failed: signature mismatch after caveat verification') };

      if (request.method === 'POST' && request.path === '/v1/invoices') {
        // lnrpc.Invoice as AddInvoice reads it: uint64/int64 as decimal strings (or numbers), bytes as base64.
        const body = JSON.parse(request.body) as Record<string, unknown>;
        const unknown = Object.keys(body).find((field) => !INVOICE_FIELDS.has(field));
        if (unknown) return { status: 400, body: grpcError(3, `proto: (line 1:2): unknown field "${unknown}"`) };
        const int = (field: string) => {
          const value = body[field];
          if (value === undefined) return 0;
          if (!/^\d+$/.test(String(value))) throw Object.assign(new Error(field), { invalid: true });
          return Number(value);
        };
        let value: number;
        let valueMsat: number;
        let expiry: number;
        try {
          [value, valueMsat, expiry] = [int('value'), int('value_msat'), int('expiry')];
        } catch (error) {
          return { status: 400, body: grpcError(3, `proto: invalid value for int64 field ${(error as Error).message}`) };
        }
        if (value !== 0 && valueMsat !== 0) return { status: 500, body: grpcError(2, 'value and value_msat are mutually exclusive') };
        // Both 0 (or absent): an invoice without an amount, the payer names it.
        const amountMsat = valueMsat || value * 1000;
        const i = node.createInvoice({
          ...(amountMsat === 0 ? {} : { amountMsat }),
          ...(body.description_hash
            ? { descriptionHash: Buffer.from(String(body.description_hash), 'base64').toString('hex') }
            : { description: String(body.memo ?? '') }),
          ...(expiry ? { expirySeconds: expiry } : {}),
        });
        return {
          status: 200,
          body: { r_hash: b64(i.paymentHash), payment_request: i.invoice, add_index: String(node.invoices.size), payment_addr: b64('00'.repeat(32)) },
        };
      }
      let match = /^\/v1\/invoice\/([0-9a-f]{64})$/.exec(request.path);
      if (request.method === 'GET' && match) {
        const i = node.invoices.get(match[1]!);
        if (!i) return { status: 404, body: grpcError(5, 'unable to locate invoice') };
        return {
          status: 200,
          body: {
            memo: i.description ?? '',
            r_preimage: b64(i.preimage),
            r_hash: b64(i.paymentHash),
            value: String(i.amountMsat / 1000),
            value_msat: String(i.amountMsat),
            settled: i.settled,
            state: i.settled ? 'SETTLED' : 'OPEN',
            amt_paid_msat: String(i.settled ? i.amountMsat : 0),
            payment_request: i.invoice,
            creation_date: String(i.createdAt),
            expiry: String(i.expiresAt - i.createdAt),
          },
        };
      }
      if (request.method === 'POST' && request.path === '/v2/router/send') {
        const body = JSON.parse(request.body) as {
          payment_request?: string;
          amt_msat?: string;
          fee_limit_msat?: string;
          fee_limit_sat?: string;
          no_inflight_updates?: boolean;
        };
        const limit =
          body.fee_limit_msat !== undefined ? Number(body.fee_limit_msat) : body.fee_limit_sat !== undefined ? Number(body.fee_limit_sat) * 1000 : undefined;
        const paid = node.pay(body.payment_request ?? '', limit, body.amt_msat === undefined ? undefined : Number(body.amt_msat));
        if ('refused' in paid) return { status: 200, body: line({ error: grpcError(2, paid.refused) }), contentType: 'application/json' };
        const p = paid.payment;
        if (p.state === 'pending') {
          return body.no_inflight_updates ? { status: 200, body: '', hold: true } : { status: 200, body: line({ result: paymentJson(p) }), keepOpen: true };
        }
        return { status: 200, body: line({ result: paymentJson(p) }), contentType: 'application/json' };
      }
      match = /^\/v2\/router\/track\/([A-Za-z0-9_=-]+)$/.exec(request.path);
      if (request.method === 'GET' && match) {
        const hash = Buffer.from(match[1]!, 'base64url').toString('hex');
        const p = node.payments.get(hash);
        if (!p) return { status: 404, body: { error: grpcError(5, "payment isn't initiated") } };
        const pending = p.state === 'pending';
        return { status: 200, body: line({ result: paymentJson(p) }), contentType: 'application/json', keepOpen: pending };
      }
      if (request.method === 'GET' && request.path === '/v1/balance/channels') {
        const sat = Math.floor(node.balanceMsat / 1000);
        return {
          status: 200,
          body: { balance: String(sat), local_balance: { sat: String(sat), msat: String(node.balanceMsat) }, remote_balance: { sat: '0', msat: '0' } },
        };
      }
      return { status: 404, body: grpcError(5, 'Not Found') };
    },
  });
  return { ...server, node, macaroon };
}
