// A fake Core Lightning CLNRest: every RPC is POST /v1/<method> with a JSON body
// and a `Rune` header; RPC errors are {code, message} with HTTP 500 (401 for a
// refused rune); amounts are integer msat. `pay` blocks until the payment ends.
import { createHash } from 'node:crypto';
import { FakeNode, serveFake, type FakeServer } from './node.js';

export interface FakeCln extends FakeServer {
  node: FakeNode;
  rune: string;
}

// lightning-invoice(7)'s parameters; CLN refuses any other name.
const INVOICE_PARAMS = new Set(['amount_msat', 'label', 'description', 'expiry', 'fallbacks', 'preimage', 'exposeprivatechannels', 'cltv', 'deschashonly']);

export async function startFakeCln(node = new FakeNode()): Promise<FakeCln> {
  const rune =
    'tU-RLjMiDpY2U0o3W1oFowar36RFGpWloPbW9-RuZdo9MyZpZD0wMjRiOWExZmE4ZTAwNmYxZTM5MzdmNjVmNjZjNDA4ZTZkYThlMWNhNzI4ZWE0MzIyMmE3MzgxZGYxY2M0NDk2MDUmbWV0aG9kPWxpc3RwZWVycyZwbnVtPTEmcG5hbWVpZF4wMjRiOWExZmE4ZTAwNmYxZTM5M3xwYXJyMF4wMjRiOWExZmE4ZTAwNmYxZTM5MyZ0aW1lPDE2NTY5MjA1MzgmcmF0ZT0y';
  const rpcError = (code: number, message: string) => ({ status: 500, body: { code, message } });
  const labels = new Set<string>();

  const server = await serveFake(node, {
    errorBody: { code: -32603, message: 'Internal error' },
    handle(request) {
      if (request.headers.rune !== rune) return { status: 401, body: { code: 1502, message: 'Not authorized: Not derived from master' } };
      if (request.method !== 'POST') return { status: 405, body: { code: -32600, message: 'Method not allowed' } };
      const params = (request.body ? JSON.parse(request.body) : {}) as Record<string, unknown>;
      switch (request.path) {
        case '/v1/invoice': {
          // lightning-invoice(7): amount_msat (msat, or "any"), label and description are required.
          const unknown = Object.keys(params).find((name) => !INVOICE_PARAMS.has(name));
          if (unknown) return rpcError(-32602, `unknown parameter: ${unknown}`);
          for (const required of ['amount_msat', 'label', 'description'])
            if (params[required] === undefined) return rpcError(-32602, `missing required parameter: ${required}`);
          const amount = params.amount_msat;
          const any = amount === 'any';
          if (!any && !(Number.isSafeInteger(amount) && (amount as number) > 0) && !/^\d+msat$/.test(String(amount)))
            return rpcError(-32602, `amount_msat: should be positive msat or 'any': invalid token '${JSON.stringify(amount)}'`);
          const label = String(params.label);
          if (labels.has(label)) return rpcError(900, `Duplicate label '${label}'`);
          labels.add(label);
          const description = String(params.description ?? '');
          const i = node.createInvoice({
            ...(any ? {} : { amountMsat: Number(String(amount).replace('msat', '')) }),
            ...(params.deschashonly ? { descriptionHash: createHash('sha256').update(description, 'utf8').digest('hex') } : { description }),
            ...(params.expiry ? { expirySeconds: Number(params.expiry) } : {}),
            label,
          });
          return {
            status: 201,
            body: {
              payment_hash: i.paymentHash,
              expires_at: i.expiresAt,
              bolt11: i.invoice,
              payment_secret: '00'.repeat(32),
              created_index: node.invoices.size,
            },
          };
        }
        case '/v1/listinvoices': {
          const i = node.invoices.get(String(params.payment_hash));
          if (!i) return { status: 201, body: { invoices: [] } };
          return {
            status: 201,
            body: {
              invoices: [
                {
                  label: i.label,
                  bolt11: i.invoice,
                  payment_hash: i.paymentHash,
                  amount_msat: i.amountMsat,
                  status: i.settled ? 'paid' : 'unpaid',
                  description: i.description,
                  expires_at: i.expiresAt,
                  ...(i.settled ? { amount_received_msat: i.amountMsat, paid_at: Math.floor(Date.now() / 1000), payment_preimage: i.preimage } : {}),
                },
              ],
            },
          };
        }
        case '/v1/pay': {
          const paid = node.pay(
            String(params.bolt11 ?? ''),
            params.maxfee === undefined ? undefined : Number(params.maxfee),
            params.amount_msat === undefined ? undefined : Number(params.amount_msat),
          );
          if ('refused' in paid) {
            if (paid.refused.startsWith('invalid invoice')) return rpcError(-32602, `Invalid bolt11: ${paid.refused}`);
            return rpcError(205, `Could not find a route: ${paid.refused}`);
          }
          const p = paid.payment;
          if (p.state === 'pending') return { status: 201, body: null, hold: true };
          if (p.state === 'failed')
            return p.reason === 'route too expensive' ? rpcError(206, 'Route wanted fee too high') : rpcError(210, 'Ran out of routes to try after 3 attempts');
          return {
            status: 201,
            body: {
              destination: '02'.padEnd(66, '1'),
              payment_hash: p.paymentHash,
              created_at: p.createdAt / 1000,
              parts: 1,
              amount_msat: p.amountMsat,
              amount_sent_msat: p.amountMsat + p.feeMsat,
              payment_preimage: p.preimage,
              status: 'complete',
            },
          };
        }
        case '/v1/listpays': {
          const p = node.payments.get(String(params.payment_hash));
          if (!p) return { status: 201, body: { pays: [] } };
          const status = p.state === 'succeeded' ? 'complete' : p.state;
          return {
            status: 201,
            body: {
              pays: [
                {
                  payment_hash: p.paymentHash,
                  status,
                  created_at: Math.floor(p.createdAt / 1000),
                  amount_msat: p.amountMsat,
                  ...(p.state === 'succeeded' ? { amount_sent_msat: p.amountMsat + p.feeMsat, preimage: p.preimage } : {}),
                },
              ],
            },
          };
        }
        case '/v1/listfunds':
          return {
            status: 201,
            body: {
              outputs: [{ txid: 'aa'.repeat(32), output: 0, amount_msat: 5_000_000, status: 'confirmed', reserved: false }],
              channels: [
                {
                  peer_id: '02'.padEnd(66, '2'),
                  connected: true,
                  state: 'CHANNELD_NORMAL',
                  our_amount_msat: node.balanceMsat,
                  amount_msat: node.balanceMsat * 2,
                },
                { peer_id: '02'.padEnd(66, '3'), connected: false, state: 'ONCHAIN', our_amount_msat: 123_000, amount_msat: 500_000 },
              ],
            },
          };
      }
      return rpcError(-32601, `Unknown command '${request.path.slice(4)}'`);
    },
  });
  return { ...server, node, rune };
}
