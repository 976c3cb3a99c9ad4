// lsat-js (Lightning Labs' JavaScript L402 library, code we did not write;
// its macaroon dependency is the registry's macaroon@3 by npm overrides)
// reads and pays our 402s: the demo through the real local server, and
// withL402 with the dev node's real BOLT11 invoices. Its Lsat.fromHeader reads
// the WWW-Authenticate value, its fromMacaroon finds the invoice's payment hash
// in the macaroon's identifier, and its toToken() (`LSAT <mac>:<preimage>`)
// is served once and refused the second time.
import { beforeAll, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { createDevNode } from 'l402-paywall/backends';
import { payWithLsatJs } from '../support/lsat-js.js';
import { useDevServer } from '../support/server.js';

const server = useDevServer();
beforeAll(async () => {
  // The demo logs its payment to the in-process database: opened (and migrated) here, not in the middle of a test.
  await server.ctx.database();
});

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
