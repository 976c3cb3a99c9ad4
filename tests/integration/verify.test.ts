// POST /api/verify says what a token is good for and checks what the caller
// sells with the paywall's own rules, through the real local server on real
// PostgreSQL and real Redis (where the replay marks live).
import { beforeAll, describe, expect, it } from 'vitest';
import type { ChallengeBody } from '../support/server.js';
import { stackSkipReason, useStack } from '../support/stack.js';

const skip = await stackSkipReason();

interface Valid {
  valid: true;
  paymentHash: string;
  expiresAt: string;
  amountSats: number | null;
  amountMsat: number | null;
  route: string | null;
  caveats: Record<string, string>;
  uses: number;
}
type Answer = Valid | { valid: false; error: string; code: string };

describe.skipIf(skip !== undefined)(`POST /api/verify (local server, PostgreSQL, Redis)${skip ? ` [SKIPPED: ${skip}]` : ''}`, () => {
  const stack = useStack(() => ({ INVOICE_RATE_LIMIT_PER_MINUTE: '100000' }));

  const post = (path: string, body: unknown) =>
    fetch(`${stack.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  async function verify(body: unknown): Promise<Answer> {
    const response = await post('/api/verify', body);
    const answer = (await response.json()) as Answer;
    expect(response.status, JSON.stringify(answer)).toBe(200);
    return answer;
  }
  async function pay(invoice: string): Promise<string> {
    const response = await post('/api/dev/pay', { invoice });
    expect(response.status).toBe(200);
    return ((await response.json()) as { preimage: string }).preimage;
  }

  let cheap: string; // 1 sat from POST /api/invoice: no route
  let managed: string; // 1000 sats for an owner, from POST /api/invoice
  let demo: string; // the 1-sat demo token, bound to its route
  beforeAll(async () => {
    const oneSat = (await (await post('/api/invoice', { amountSats: 1 })).json()) as { paymentRequest: string; macaroon: string };
    cheap = `${oneSat.macaroon}:${await pay(oneSat.paymentRequest)}`;
    const owned = (await (await post('/api/invoice', { amountSats: 1000, ownerAddress: 'operator@example.com', endpoint: '/v1/report' })).json()) as {
      paymentRequest: string;
      macaroon: string;
    };
    managed = `${owned.macaroon}:${await pay(owned.paymentRequest)}`;
    const challenge = (await (await fetch(`${stack.url}/api/demo/btc-price`)).json()) as ChallengeBody;
    demo = `${challenge.macaroon}:${await pay(challenge.invoice)}`;
  });

  it('answers what each token is good for: amount, route and caveats', async () => {
    expect(await verify({ token: cheap })).toEqual({
      valid: true,
      paymentHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      expiresAt: expect.any(String),
      amountSats: 1,
      amountMsat: 1000,
      route: null,
      caveats: { price_msat: '1000' },
      uses: 1,
    });
    expect(await verify({ token: demo })).toMatchObject({
      valid: true,
      amountSats: 1,
      route: '/api/demo/btc-price',
      caveats: { price_msat: '1000', route: '/api/demo/btc-price' },
    });
    expect(await verify({ token: managed })).toMatchObject({
      valid: true,
      amountSats: 1000,
      route: null,
      caveats: { price_msat: '1000000', owner: 'operator@example.com' },
    });
  });

  it('an operator selling 1000 sats at a route tells a 1-sat or demo token from a real one', async () => {
    const sells = { route: '/v1/report', priceSats: 1000, caveats: { owner: 'operator@example.com' } };
    expect(await verify({ token: cheap, ...sells })).toMatchObject({ valid: false, code: 'INSUFFICIENT_PRICE' });
    expect(await verify({ token: cheap, priceSats: 1000 })).toMatchObject({ valid: false, code: 'INSUFFICIENT_PRICE' });
    // The 1-sat token names no route: the paywall's rule refuses it for any stated route.
    expect(await verify({ token: cheap, route: '/v1/report' })).toMatchObject({ valid: false, code: 'WRONG_ROUTE' });
    expect(await verify({ token: demo, ...sells })).toMatchObject({ valid: false, code: 'INSUFFICIENT_PRICE' });
    expect(await verify({ token: demo, route: '/v1/report', priceSats: 1 })).toMatchObject({ valid: false, code: 'WRONG_ROUTE' });
    expect(await verify({ token: demo, route: '/api/demo/btc-price', priceSats: 1000 })).toMatchObject({ valid: false, code: 'INSUFFICIENT_PRICE' });
    expect(await verify({ token: demo, route: '/api/demo/btc-price', priceSats: 1 })).toMatchObject({ valid: true });
    // A condition the caller does not state fails closed (the managed token's owner) ...
    expect(await verify({ token: managed, priceSats: 1000 })).toMatchObject({ valid: false, code: 'CAVEAT_NOT_SATISFIED' });
    // ... and so does a stated one the token lacks, or has with another value.
    expect(await verify({ token: cheap, priceSats: 1, caveats: { owner: 'operator@example.com' } })).toMatchObject({
      valid: false,
      code: 'CAVEAT_NOT_SATISFIED',
    });
    expect(await verify({ token: managed, priceSats: 1000, caveats: { owner: 'mallory@example.com' } })).toMatchObject({
      valid: false,
      code: 'CAVEAT_NOT_SATISFIED',
    });
    expect(await verify({ token: managed, priceSats: 1000, caveats: { owner: 'operator@example.com' } })).toMatchObject({ valid: true, amountSats: 1000 });
    expect(await verify({ token: managed, priceSats: 1001, caveats: { owner: 'operator@example.com' } })).toMatchObject({
      valid: false,
      code: 'INSUFFICIENT_PRICE',
    });
  });

  it('a refused expectation consumes nothing; a met one with consume: true uses the token up', async () => {
    expect(await verify({ token: managed, priceSats: 5000, caveats: { owner: 'operator@example.com' }, consume: true })).toMatchObject({
      valid: false,
      code: 'INSUFFICIENT_PRICE',
    });
    expect(await verify({ token: managed, priceSats: 1000, caveats: { owner: 'operator@example.com' }, consume: true })).toMatchObject({ valid: true });
    expect(await verify({ token: managed })).toMatchObject({ valid: false, code: 'TOKEN_ALREADY_USED' });
  });

  it('says the token in the body is malformed, not an Authorization header', async () => {
    for (const token of ['garbage', 'not a credential at all', '💥']) {
      const answer = await verify({ token });
      expect(answer).toMatchObject({ valid: false, code: 'MALFORMED_CREDENTIAL' });
      expect((answer as { error: string }).error).toMatch(/^token is not an L402 credential/);
      expect((answer as { error: string }).error).not.toMatch(/Authorization header/);
    }
  });

  it('refuses expectations it cannot check (400), so a typo never passes for a check', async () => {
    for (const body of [
      { token: cheap, priceSat: 1000 },
      { token: cheap, priceSats: 0 },
      { token: cheap, priceSats: 1.5 },
      { token: cheap, route: '' },
      { token: cheap, caveats: { Owner: 'x' } },
      { token: cheap, caveats: { route: '/x' } },
      { token: cheap, caveats: { owner: 'line\nbreak' } },
    ]) {
      const response = await post('/api/verify', body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'INVALID_REQUEST', error: expect.any(String) });
    }
  });
});
