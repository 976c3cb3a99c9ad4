// 200 concurrent paid requests through the proxy to a local upstream (issue
// 39): each credential sent twice at once, all 400 in flight together. Every
// paid request reaches the upstream exactly once (none lost, none served
// twice), each credential's second sending is refused TOKEN_ALREADY_USED and
// never forwarded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { createProxy } from 'l402-paywall/proxy';
import { listenProxy, type ProxyServer } from '../../src/proxy/node-server.js';
import { recordingUpstream, type Upstream } from '../support/proxy-upstream.js';

const REQUESTS = 200;
const devNode = createDevNode({ store: memoryDevNodeStore() });
let upstream: Upstream;
let proxy: ProxyServer;

beforeAll(async () => {
  upstream = await recordingUpstream();
  const handler = createProxy(
    { upstream: upstream.url, routes: [{ path: '/*', priceSats: 2 }] },
    { provider: devNode, secret: 'proxy-load-secret-0123456789abcdef0123456789ab', onError: () => {} },
  );
  proxy = await listenProxy(handler, { port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

describe(`${REQUESTS} concurrent paid requests through the proxy`, () => {
  it('each reaches the upstream exactly once; each credential sent again at the same time is refused', async () => {
    const credentials = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, i) => {
        const challenge = await fetch(`${proxy.url}/echo?n=${i}`);
        expect(challenge.status).toBe(402);
        const { macaroon, invoice } = (await challenge.json()) as { macaroon: string; invoice: string };
        const { preimage } = await devNode.pay(invoice);
        return `L402 ${macaroon}:${preimage}`;
      }),
    );
    expect(upstream.received).toHaveLength(0);
    const send = (i: number) =>
      fetch(`${proxy.url}/echo?n=${i}`, { method: 'POST', headers: { authorization: credentials[i]!, 'x-request-n': String(i) }, body: `body ${i}` }).then(
        async (answer) => ({ i, status: answer.status, body: (await answer.json()) as { code?: string; body?: string } }),
      );
    const answers = await Promise.all(Array.from({ length: REQUESTS * 2 }, (_, k) => send(k % REQUESTS)));
    for (let i = 0; i < REQUESTS; i++) {
      const pair = answers.filter((answer) => answer.i === i);
      const served = pair.filter((answer) => answer.status === 201);
      const refused = pair.filter((answer) => answer.status === 402);
      expect(served, `request ${i}`).toHaveLength(1);
      expect(served[0]!.body.body).toBe(`body ${i}`);
      expect(refused, `request ${i}`).toHaveLength(1);
      expect(refused[0]!.body.code).toBe('TOKEN_ALREADY_USED');
    }
    // The upstream saw each request once: 200 in all, every n once.
    expect(upstream.received).toHaveLength(REQUESTS);
    const seen = upstream.received.map((received) => Number(received.headers['x-request-n'])).sort((a, b) => a - b);
    expect(seen).toEqual(Array.from({ length: REQUESTS }, (_, i) => i));
  }, 60_000);
});
