// The proxy's 402s pass the clients withL402's pass, none of them written
// here: Alby's fetchWithL402 (@getalby/lightning-tools), lsat-js (its
// macaroon read, paid, its LSAT token served once), mppx's Payment codecs
// (its Challenge read from the proxy's 402, its Credential sent, its Receipt
// read from the answer) and mppx's whole client (Mppx.create's fetch, paying
// on its first try), each with the dev wallet the proxy answers at POST
// /api/dev/pay. Our own client and command line are in the library's proxy
// tests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchWithL402 as albyFetchWithL402 } from '@getalby/lightning-tools/402';
import { Challenge as MppChallenge, Credential as MppCredential, Receipt as MppReceipt } from 'mppx';
import { Mppx } from 'mppx/client';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { listenProxy, type ProxyServer } from 'l402-paywall/node';
import { createProxy } from 'l402-paywall/proxy';
import { payWithLsatJs } from '../support/lsat-js.js';
import { mppxLightningCharge } from '../support/mppx-lightning.js';
import { recordingUpstream, type Upstream } from '../../packages/l402-paywall/tests/support/proxy-upstream.js';

let upstream: Upstream;
let proxy: ProxyServer;

const devPay = async (invoice: string): Promise<string> => {
  const answer = await fetch(`${proxy.url}/api/dev/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice }),
  });
  if (!answer.ok) throw new Error(`dev wallet refused: ${answer.status} ${await answer.text()}`);
  return ((await answer.json()) as { preimage: string }).preimage;
};

beforeAll(async () => {
  upstream = await recordingUpstream();
  const devNode = createDevNode({ store: memoryDevNodeStore() });
  const handler = createProxy(
    { upstream: upstream.url, realm: 'proxy.example', routes: [{ path: '/*', priceSats: 3 }] },
    { provider: devNode, devNode, secret: 'proxy-interop-secret-0123456789abcdef012345678', onError: () => {} },
  );
  proxy = await listenProxy(handler, { port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

describe("third-party clients pay the proxy's 402", () => {
  it("Alby's fetchWithL402 pays it and gets the upstream's answer", async () => {
    const paid: string[] = [];
    const wallet = {
      async payInvoice({ invoice }: { invoice: string }) {
        paid.push(invoice);
        return { preimage: await devPay(invoice) };
      },
    };
    const before = upstream.received.length;
    const answer = await albyFetchWithL402(`${proxy.url}/echo?client=alby`, {}, { wallet });
    expect(answer.status).toBe(201);
    expect(await answer.json()).toMatchObject({ method: 'GET', url: '/echo?client=alby' });
    expect(paid).toHaveLength(1);
    expect(paid[0]).toMatch(/^lnbcrt30n1/);
    expect(upstream.received).toHaveLength(before + 1);
    expect(upstream.received.at(-1)!.headers.authorization).toBeUndefined();
  });

  it('mppx reads the Payment challenge, its credential is served once, and its receipt reads back', async () => {
    const first = await fetch(`${proxy.url}/echo?client=mppx`, { method: 'POST', body: 'from mppx' });
    expect(first.status).toBe(402);
    const body = (await first.clone().json()) as { invoice: string; paymentHash: string };
    const challenge = MppChallenge.fromResponse(first);
    expect(challenge).toMatchObject({ method: 'lightning', intent: 'charge', realm: 'proxy.example' });
    const preimage = await devPay(body.invoice);
    const authorization = MppCredential.serialize(MppCredential.from({ challenge, payload: { preimage } }));
    const before = upstream.received.length;
    const served = await fetch(`${proxy.url}/echo?client=mppx`, { method: 'POST', body: 'from mppx', headers: { authorization } });
    expect(served.status).toBe(201);
    expect(MppReceipt.fromResponse(served)).toMatchObject({ method: 'lightning', status: 'success', challengeId: challenge.id, reference: body.paymentHash });
    expect(await served.json()).toMatchObject({ method: 'POST', body: 'from mppx' });
    const again = await fetch(`${proxy.url}/echo?client=mppx`, { method: 'POST', body: 'again', headers: { authorization } });
    expect(again.status).toBe(402);
    expect(upstream.received).toHaveLength(before + 1);
  });

  it('lsat-js reads the macaroon, pays, and its LSAT token is served once, then refused unforwarded', async () => {
    const before = upstream.received.length;
    const get = (authorization?: string) => fetch(`${proxy.url}/echo?client=lsat-js`, authorization ? { headers: { authorization } } : {});
    expect(await payWithLsatJs(get, devPay)).toEqual([{ status: 201 }, { status: 402, code: 'TOKEN_ALREADY_USED' }]);
    expect(upstream.received).toHaveLength(before + 1);
    expect(upstream.received.at(-1)!.headers.authorization).toBeUndefined();
  });

  it("mppx's client (Mppx.create) pays on its first try and gets the upstream's answer with a receipt", async () => {
    const counter = { payments: 0 };
    const mppx = Mppx.create({ methods: [mppxLightningCharge(devPay, counter)], polyfill: false });
    const before = upstream.received.length;
    const served = await mppx.fetch(`${proxy.url}/echo?client=mppx-client`, { method: 'PUT', body: 'from the mppx client' });
    expect(served.status).toBe(201);
    expect(await served.json()).toMatchObject({ method: 'PUT', url: '/echo?client=mppx-client', body: 'from the mppx client' });
    expect(MppReceipt.fromResponse(served)).toMatchObject({ method: 'lightning', status: 'success' });
    expect(counter.payments).toBe(1);
    expect(upstream.received).toHaveLength(before + 1);
  });
});
