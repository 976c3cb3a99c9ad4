// lsat-js (Lightning Labs' JavaScript L402 library, code we did not write;
// its macaroon dependency is the registry's macaroon@3 by npm overrides)
// reads and pays our 402s: the demo through the real local server, and
// withL402 with the dev node's real BOLT11 invoices. Its Lsat.fromHeader reads
// the WWW-Authenticate value, its fromMacaroon finds the invoice's payment hash
// in the macaroon's identifier, and its toToken() (`LSAT <mac>:<preimage>`)
// is served once and refused the second time.
import { Lsat } from 'lsat-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { createDevNode } from 'l402-paywall/backends';
import { useDevServer } from '../support/server.js';

const server = useDevServer();
beforeAll(async () => {
  // The demo logs its payment to the in-process database: opened (and migrated) here, not in the middle of a test.
  await server.ctx.database();
});

interface Paid {
  status: number;
  code?: string;
}

/** lsat-js's whole flow against a 402 source: read the challenge, check the hash, pay, send toToken() twice. */
async function payWithLsatJs(get: (authorization?: string) => Promise<Response>, pay: (invoice: string) => Promise<string>): Promise<[Paid, Paid]> {
  const challenge = await get();
  expect(challenge.status).toBe(402);
  const header = challenge.headers.get('www-authenticate')!;
  const body = (await challenge.json()) as { invoice: string; paymentHash: string; macaroon: string };
  const lsat = Lsat.fromHeader(header);
  expect(lsat.baseMacaroon).toBe(body.macaroon);
  expect(lsat.invoice).toBe(body.invoice);
  expect(lsat.paymentHash).toBe(body.paymentHash);
  // fromMacaroon reads the payment hash from the identifier, and addInvoice checks it against the invoice's.
  const fromMacaroon = Lsat.fromMacaroon(lsat.baseMacaroon, lsat.invoice);
  expect(fromMacaroon.paymentHash).toBe(body.paymentHash);
  lsat.setPreimage(await pay(lsat.invoice));
  expect(lsat.isSatisfied()).toBe(true);
  const token = lsat.toToken();
  expect(token).toMatch(/^LSAT [A-Za-z0-9+/]+={0,2}:[0-9a-f]{64}$/);
  const answer = async (response: Response): Promise<Paid> =>
    response.status === 402
      ? { status: 402, code: ((await response.json()) as { code: string }).code }
      : (await response.arrayBuffer(), { status: response.status });
  return [await answer(await get(token)), await answer(await get(token))];
}

describe('lsat-js pays us', () => {
  it('the demo (GET /api/demo/btc-price through the local server): 200 once, then TOKEN_ALREADY_USED', async () => {
    const get = (authorization?: string) => fetch(`${server.url}/api/demo/btc-price`, authorization ? { headers: { authorization } } : {});
    const pay = async (invoice: string) => {
      const response = await fetch(`${server.url}/api/dev/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ invoice }),
      });
      expect(response.status).toBe(200);
      return ((await response.json()) as { preimage: string }).preimage;
    };
    expect(await payWithLsatJs(get, pay)).toEqual([{ status: 200 }, { status: 402, code: 'TOKEN_ALREADY_USED' }]);
  });

  it('withL402 with the dev node: 200 once, then TOKEN_ALREADY_USED', async () => {
    const node = createDevNode();
    const handler = withL402(() => Response.json({ ok: true }), { priceSats: 3, provider: node, secret: 'interop-secret-0123456789abcdef0123456789abcdef' });
    const get = (authorization?: string) => handler(new Request('http://127.0.0.1/api/paid', authorization ? { headers: { authorization } } : {}));
    const pay = async (invoice: string) => (await node.pay(invoice)).preimage;
    expect(await payWithLsatJs(get, pay)).toEqual([{ status: 200 }, { status: 402, code: 'TOKEN_ALREADY_USED' }]);
  });
});
