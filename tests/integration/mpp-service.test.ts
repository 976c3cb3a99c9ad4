// The hosted service speaks the Payment scheme where its paywall is (docs/mpp.md),
// through the real local server: the demo route's 402 read by mppx, an mppx
// credential served with a Payment-Receipt (CORS exposes it), and POST
// /api/verify checking a Payment credential as it checks an L402 token, on
// the same replay record.
import { Challenge, Credential, Receipt } from 'mppx';
import { describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';
import { newPreimage } from '../../packages/l402-paywall/tests/support/l402.js';

const server = useDevServer();

interface Verified {
  valid: boolean;
  code?: string;
  paymentHash?: string;
  amountSats?: number;
  route?: string | null;
  caveats?: Record<string, string>;
  scheme?: string;
  challengeId?: string;
}

/** The demo's 402, read by mppx, paid with the dev wallet: both credentials for one payment. */
async function buyDemo() {
  const response = await fetch(`${server.url}/api/demo/btc-price`);
  expect(response.status).toBe(402);
  const challenge = Challenge.fromResponse(response);
  const body = (await response.json()) as { macaroon: string; invoice: string; paymentHash: string; type: string };
  const paid = await fetch(`${server.url}/api/dev/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice: body.invoice }),
  });
  expect(paid.status).toBe(200);
  const { preimage } = (await paid.json()) as { preimage: string };
  return {
    challenge,
    body,
    preimage,
    l402: `L402 ${body.macaroon}:${preimage}`,
    payment: Credential.serialize(Credential.from({ challenge, payload: { preimage } })),
  };
}

const verify = async (body: unknown): Promise<Verified> => {
  const response = await fetch(`${server.url}/api/verify`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status).toBe(200);
  return (await response.json()) as Verified;
};

describe('the demo route (local dev server) speaks both schemes', () => {
  it('mppx reads its 402: a 1-sat lightning charge on regtest, realm the host name it is configured with, the route bound', async () => {
    const { challenge, body } = await buyDemo();
    // Without PUBLIC_URL, where the local server listens, without the port (mppx validates the realm against the host name).
    expect(challenge).toMatchObject({ method: 'lightning', intent: 'charge', realm: new URL(server.url).hostname });
    expect(challenge.request).toMatchObject({
      amount: '1',
      currency: 'sat',
      methodDetails: { invoice: body.invoice, paymentHash: body.paymentHash, network: 'regtest' },
    });
    expect(JSON.parse(Buffer.from(challenge.opaque ?? '', 'base64url').toString())).toEqual({ route: '/api/demo/btc-price' });
    expect(body.type).toBe('https://paymentauth.org/problems/payment-required');
  });

  it('an mppx credential is served 200 with a Payment-Receipt, exposed to browsers; the L402 token of the same payment is then spent', async () => {
    const { challenge, body, payment, l402 } = await buyDemo();
    const response = await fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization: payment } });
    expect(response.status).toBe(200);
    expect(Receipt.fromResponse(response)).toMatchObject({ method: 'lightning', challengeId: challenge.id, reference: body.paymentHash, status: 'success' });
    expect(response.headers.get('access-control-expose-headers')).toContain('Payment-Receipt');
    const again = await fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization: l402 } });
    expect(again.status).toBe(402);
    expect(await again.json()).toMatchObject({ code: 'TOKEN_ALREADY_USED', type: 'https://paymentauth.org/problems/lightning/unknown-challenge' });
  });
});

describe('POST /api/verify checks a Payment credential like an L402 token', () => {
  it('says what it is good for, with the same expectations; consume: true spends the payment for both schemes', async () => {
    const { challenge, body, payment, l402 } = await buyDemo();
    expect(await verify({ token: payment })).toEqual({
      valid: true,
      paymentHash: body.paymentHash,
      expiresAt: expect.any(String),
      amountSats: 1,
      amountMsat: 1000,
      route: '/api/demo/btc-price',
      caveats: { price_msat: '1000', route: '/api/demo/btc-price' },
      uses: 1,
      scheme: 'Payment',
      challengeId: challenge.id,
    });
    expect(await verify({ token: payment, route: '/v1/report', priceSats: 1 })).toMatchObject({ valid: false, code: 'WRONG_ROUTE' });
    expect(await verify({ token: payment, route: '/api/demo/btc-price', priceSats: 2 })).toMatchObject({ valid: false, code: 'INSUFFICIENT_PRICE' });
    expect(await verify({ token: payment, priceSats: 1, caveats: { owner: 'a@example.com' } })).toMatchObject({ valid: false, code: 'CAVEAT_NOT_SATISFIED' });
    expect(await verify({ token: payment, route: '/api/demo/btc-price', priceSats: 1, consume: true })).toMatchObject({ valid: true });
    expect(await verify({ token: payment })).toMatchObject({ valid: false, code: 'TOKEN_ALREADY_USED' });
    expect(await verify({ token: l402 })).toMatchObject({ valid: false, code: 'TOKEN_ALREADY_USED' });
    // And the route agrees.
    expect((await fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization: payment } })).status).toBe(402);
  });

  it('refuses a wrong preimage, a changed challenge and a malformed credential, with the paywall codes', async () => {
    const { challenge } = await buyDemo();
    const wrong = Credential.serialize(Credential.from({ challenge, payload: { preimage: newPreimage().preimage } }));
    expect(await verify({ token: wrong })).toMatchObject({ valid: false, code: 'PREIMAGE_MISMATCH' });
    const changed = Credential.serialize(
      Credential.from({ challenge: { ...challenge, realm: 'evil.example' }, payload: { preimage: newPreimage().preimage } }),
    );
    expect(await verify({ token: changed })).toMatchObject({ valid: false, code: 'UNKNOWN_CHALLENGE' });
    expect(await verify({ token: 'Payment !!!' })).toMatchObject({ valid: false, code: 'MALFORMED_CREDENTIAL' });
  });
});
