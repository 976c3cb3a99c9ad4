// The Payment challenges' realm when the `realm` option is unset: the host
// name of the request's URL without its port (what mppx's validator checks a
// realm against), read without parsing the URL; a credential is held to the
// realm of the request it comes with.
import { describe, expect, it } from 'vitest';
import { createPaywall, realmOfRequest } from 'l402-paywall';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { Challenge, Credential } from 'mppx';

const SECRET = 'realm-default-secret-0123456789abcdef0123456789abc';

describe('realmOfRequest', () => {
  it('is the host name without the port, whatever follows it', () => {
    const cases: [string, string][] = [
      ['http://127.0.0.1:3000/api/demo/btc-price', '127.0.0.1'],
      ['https://api.example.com/x?y=1', 'api.example.com'],
      ['https://API.Example.com:8443', 'api.example.com'],
      ['http://shop.example?q=1', 'shop.example'],
      ['http://shop.example#top', 'shop.example'],
      ['http://[::1]:3000/paid', '[::1]'],
      ['http://xn--bcher-kva.example/', 'xn--bcher-kva.example'],
    ];
    for (const [url, realm] of cases) {
      const request = new Request(url);
      expect(realmOfRequest(request), url).toBe(realm);
      // The same as a URL parser says, for every URL a Request holds.
      expect(realmOfRequest(request), url).toBe(new URL(request.url).hostname);
    }
  });
});

describe('the default realm in a 402 and on the credential', () => {
  const net = memoryDevNodeStore();
  const paywall = createPaywall({ priceSats: 3, provider: createDevNode({ store: net }), secret: SECRET, onError: () => {} });
  const wallet = createDevNode({ store: net });

  async function charge(url: string): Promise<{ realm: string; authorization: string }> {
    const decision = await paywall.decide(new Request(url));
    if (decision.kind !== 'refused') throw new Error('expected a 402');
    const value = decision.headers.find(([name, v]) => name === 'WWW-Authenticate' && v.startsWith('Payment '))![1];
    const challenge = Challenge.deserialize(value);
    const { preimage } = await wallet.pay(String((challenge.request as { methodDetails: { invoice: string } }).methodDetails.invoice));
    return { realm: challenge.realm, authorization: Credential.serialize(Credential.from({ challenge, payload: { preimage } })) };
  }

  it('names the host without its port, and the credential is served on that host whatever the port', async () => {
    const { realm, authorization } = await charge('http://127.0.0.1:3000/paid');
    expect(realm).toBe('127.0.0.1');
    const served = await paywall.decide(new Request('http://127.0.0.1:4000/paid', { headers: { authorization } }));
    expect(served.kind).toBe('paid');
  });

  it('a credential for one host is refused on another (WRONG_REALM)', async () => {
    const { authorization } = await charge('http://a.example/paid');
    const refused = await paywall.decide(new Request('http://b.example/paid', { headers: { authorization } }));
    expect(refused.kind).toBe('refused');
    expect(refused.kind === 'refused' && refused.body.code).toBe('WRONG_REALM');
  });
});
