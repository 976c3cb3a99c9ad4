// The paywall as a library user meets it: withL402 around a Web handler, and
// l402Middleware in a real Express 5 app. The provider is a test double that
// mints random preimages (../support/l402.ts); the dev node is covered by
// the integration tests.
import { request as httpRequest } from 'node:http';
import express from 'express';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { l402Middleware } from 'l402-paywall/express';
import { base64UrlEncode, utf8 } from '../../src/crypto/encoding.js';
import { RELEASE_RETRY_DELAYS_MS } from '../../src/core/release.js';
import {
  Keyring,
  createPaywall,
  decodeToken,
  getPayment,
  memoryReplayStore,
  mintToken,
  withL402,
  type L402Options,
  type Payment,
  type ReplayStore,
} from 'l402-paywall';
import { newPreimage, payChallenge, recordingProvider, withPaymentHash, type ChallengeBody, type RecordingProvider } from '../support/l402.js';
import { listenNode, type Listening } from '../support/listen.js';

const SECRET = 'unit-test-secret-0123456789abcdef0123456789abcdef';
const BASE = 'http://shop.example';

type Behaviour = (request: Request) => Response | Promise<Response>;

/** A paywalled handler whose answer each test can script; every call is recorded. */
function setup(options: Partial<L402Options> = {}) {
  const provider = recordingProvider();
  const calls: { request: Request; payment: Payment | undefined }[] = [];
  let behaviour: Behaviour = () => Response.json({ ok: true });
  const onError = vi.fn();
  const handler = withL402(
    async (request: Request) => {
      calls.push({ request, payment: getPayment(request) });
      return behaviour(request);
    },
    { priceSats: 10, provider, secret: SECRET, onError, ...options },
  );
  return {
    provider,
    handler,
    calls,
    onError,
    answer(next: Behaviour) {
      behaviour = next;
    },
  };
}

function get(path = '/paid', authorization?: string): Request {
  return new Request(BASE + path, authorization === undefined ? {} : { headers: { authorization } });
}

/** GET without a credential, pay the invoice, return the Authorization value and the challenge. */
async function buy(handler: (r: Request) => Promise<Response>, provider: RecordingProvider, path = '/paid') {
  const challenge = await handler(get(path));
  expect(challenge.status).toBe(402);
  const body = (await challenge.clone().json()) as ChallengeBody;
  const authorization = await payChallenge(challenge, provider);
  return { authorization, body, preimage: authorization.slice(authorization.lastIndexOf(':') + 1) };
}

async function expectChallenge(response: Response, code: string): Promise<ChallengeBody> {
  expect(response.status).toBe(402);
  const body = (await response.json()) as ChallengeBody;
  expect(body.code).toBe(code);
  // Every refusal is a fresh, payable challenge.
  expect(body.macaroon).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
  expect(body.invoice).toMatch(/^lnbcrt-test-/);
  expect(response.headers.get('www-authenticate')).toContain(`L402 macaroon="${body.macaroon}", invoice="${body.invoice}"`);
  expect(response.headers.get('cache-control')).toBe('no-store');
  return body;
}

/** The token in URL-safe base64 without padding: another spelling of the same bytes. */
function toUrlSafeBase64(token: string): string {
  return token.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

describe('withL402: the challenge', () => {
  it('answers 402 with a JSON challenge, both WWW-Authenticate forms and no-store', async () => {
    const { handler, provider, calls } = setup({ priceSats: 21 });
    const before = Math.floor(Date.now() / 1000);
    const response = await handler(get());
    expect(response.status).toBe(402);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as ChallengeBody;
    // Our fields, and the RFC 9457 members with the Payment drafts' problem type (docs/mpp.md); no Payment challenge for this test invoice.
    expect(Object.keys(body).sort()).toEqual([
      'code',
      'detail',
      'error',
      'expiresAt',
      'invoice',
      'macaroon',
      'paymentHash',
      'priceSats',
      'status',
      'title',
      'type',
    ]);
    expect(body).toMatchObject({ type: 'https://paymentauth.org/problems/payment-required', status: 402, title: 'Payment Required' });
    expect(body.code).toBe('PAYMENT_REQUIRED');
    expect(typeof body.error).toBe('string');
    expect(body.error.length).toBeGreaterThan(0);
    expect(body.priceSats).toBe(21);
    expect(body.paymentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(provider.preimages.has(body.paymentHash)).toBe(true);
    expect(body.invoice).toBe(`lnbcrt-test-${body.paymentHash.slice(0, 8)}`);
    // One invoice for exactly the price, living as long as the token.
    expect(provider.requests).toEqual([expect.objectContaining({ amountMsat: 21_000, expirySeconds: 3600 })]);
    const expiresAt = Date.parse(body.expiresAt);
    expect(new Date(expiresAt).toISOString()).toBe(body.expiresAt);
    expect(expiresAt / 1000).toBeGreaterThanOrEqual(before + 3600);
    expect(expiresAt / 1000).toBeLessThanOrEqual(before + 3602);

    // The macaroon (docs/l402-token.md): its identifier names the invoice's payment hash, its expires_at caveat the expiry.
    const decoded = decodeToken(body.macaroon)!;
    expect(decoded.hash).toBe(body.paymentHash);
    expect(decoded.exp * 1000).toBe(expiresAt);

    // Three WWW-Authenticate values; Headers.get joins them with ", ".
    const lsatForm = `LSAT macaroon="${body.macaroon}", invoice="${body.invoice}"`;
    const l402Form = `L402 macaroon="${body.macaroon}", invoice="${body.invoice}"`;
    const tokenForm = `L402 version="0", token="${body.macaroon}", invoice="${body.invoice}"`;
    expect(response.headers.get('www-authenticate')).toBe(`${lsatForm}, ${l402Form}, ${tokenForm}`);
    // refined-element l402-requests' parser (docs/architecture.md "Interoperability") finds macaroon= right before invoice=.
    const strict = /(L402|LSAT)\s+macaroon="([^"]+)"\s*,\s*invoice="([^"]+)"/i.exec(response.headers.get('www-authenticate')!);
    expect(strict?.[2]).toBe(body.macaroon);
    expect(strict?.[3]).toBe(body.invoice);
    expect(calls).toHaveLength(0);
  });

  it('never puts a challenge on a paid 200 answer', async () => {
    const { handler, provider } = setup();
    const { authorization } = await buy(handler, provider);
    const response = await handler(get('/paid', authorization));
    expect(response.status).toBe(200);
    expect(response.headers.get('www-authenticate')).toBeNull();
  });
});

describe('withL402: paying and retrying', () => {
  it('runs the handler with the request, exposes the payment and calls onPaid once', async () => {
    const onPaid = vi.fn();
    const { handler, provider, calls } = setup({ priceSats: 7, onPaid });
    const { authorization, body } = await buy(handler, provider);
    const request = get('/paid?x=1', authorization);
    const response = await handler(request);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ok: true });
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.request).toBe(request);
    const payment = { paymentHash: body.paymentHash, route: '/paid', amountMsat: 7000, scheme: 'L402' };
    expect(calls[0]!.payment).toEqual(payment);
    expect(getPayment(request)).toEqual(payment);
    await vi.waitFor(() => expect(onPaid).toHaveBeenCalledTimes(1));
    expect(onPaid.mock.calls[0]![0]).toEqual(payment);
    expect(onPaid.mock.calls[0]![1]).toBe(request);
    await new Promise((r) => setTimeout(r, 10));
    expect(onPaid).toHaveBeenCalledTimes(1);
  });

  it('a failing onPaid does not change the answer and goes to onError', async () => {
    const { handler, provider, onError } = setup({ onPaid: () => Promise.reject(new Error('hook failed')) });
    const { authorization } = await buy(handler, provider);
    const response = await handler(get('/paid', authorization));
    expect(response.status).toBe(200);
    await vi.waitFor(() => expect(onError).toHaveBeenCalledWith(expect.any(Error), 'onPaid failed'));
  });

  it('sets no-store on handler answers whose headers are immutable', async () => {
    const redirect = Response.redirect(`${BASE}/elsewhere`, 302);
    const fetched = await fetch('data:text/plain,hello');
    // Both kinds really are immutable, so the paywall must copy them.
    expect(() => Response.redirect(`${BASE}/x`, 302).headers.set('x', 'y')).toThrow(TypeError);
    expect(() => fetched.clone().headers.set('x', 'y')).toThrow(TypeError);

    const { handler, provider, answer } = setup();
    answer(() => redirect);
    let { authorization } = await buy(handler, provider);
    let response = await handler(get('/paid', authorization));
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe(`${BASE}/elsewhere`);
    expect(response.headers.get('cache-control')).toBe('no-store');

    answer(() => fetched);
    ({ authorization } = await buy(handler, provider));
    response = await handler(get('/paid', authorization));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(await response.text()).toBe('hello');
  });

  it('overrides a cache header the handler set on a paid answer', async () => {
    const { handler, provider, answer } = setup();
    answer(() => Response.json({ ok: true }, { headers: { 'Cache-Control': 'public, max-age=3600' } }));
    const { authorization } = await buy(handler, provider);
    const response = await handler(get('/paid', authorization));
    expect(response.headers.get('cache-control')).toBe('no-store');
  });
});

describe('withL402: credentials as real clients send them', () => {
  const variants: [string, (token: string, preimage: string) => string][] = [
    ['legacy LSAT scheme', (t, p) => `LSAT ${t}:${p}`],
    ['lower-case scheme', (t, p) => `l402 ${t}:${p}`],
    ['mixed-case legacy scheme', (t, p) => `lSaT ${t}:${p}`],
    ['upper-case preimage', (t, p) => `L402 ${t}:${p.toUpperCase()}`],
    ['extra spaces and a tab', (t, p) => `  L402 \t  ${t}:${p}   `],
  ];
  for (const [name, build] of variants) {
    it(`accepts ${name}`, async () => {
      const { handler, provider, calls } = setup();
      const { body, preimage } = await buy(handler, provider);
      const response = await handler(get('/paid', build(body.macaroon, preimage)));
      expect(response.status).toBe(200);
      expect(calls).toHaveLength(1);
    });
  }

  it('accepts the token in URL-safe base64 without padding', async () => {
    const { handler, provider, calls } = setup();
    const bought = await buy(handler, provider);
    const urlSafe = toUrlSafeBase64(bought.body.macaroon);
    expect(urlSafe).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(Buffer.from(urlSafe, 'base64url').equals(Buffer.from(bought.body.macaroon, 'base64'))).toBe(true);
    const response = await handler(get('/paid', `L402 ${urlSafe}:${bought.preimage}`));
    expect(response.status).toBe(200);
    expect(calls).toHaveLength(1);
  });

  it('still verifies tokens signed with a previous secret after rotation', async () => {
    const provider = recordingProvider();
    const old = withL402(() => Response.json({ ok: true }), { priceSats: 10, provider, secret: SECRET, onError: () => {} });
    const rotated = withL402(() => Response.json({ ok: true }), {
      priceSats: 10,
      provider,
      secret: ['a-brand-new-secret-0123456789abcdef0123', SECRET],
      onError: () => {},
    });
    const { authorization } = await buy(old, provider);
    expect((await rotated(get('/paid', authorization))).status).toBe(200);
    // ...and a paywall that no longer knows the old secret refuses it.
    const { authorization: another } = await buy(old, provider);
    const dropped = withL402(() => Response.json({ ok: true }), {
      priceSats: 10,
      provider,
      secret: 'a-brand-new-secret-0123456789abcdef0123',
      onError: () => {},
    });
    await expectChallenge(await dropped(get('/paid', another)), 'UNKNOWN_KEY');
  });
});

describe('withL402: refusals get a fresh challenge with the reason', () => {
  it('refuses malformed Authorization headers', async () => {
    const { handler, provider, calls } = setup();
    const { body, preimage } = await buy(handler, provider);
    for (const header of [
      'Bearer abc',
      'L402',
      'L402 ',
      `L402 ${body.macaroon}`,
      `L402 ${body.macaroon}:`,
      `Basic ${body.macaroon}:${preimage}`,
      `L402${body.macaroon}:${preimage}`,
      `L402 ${body.macaroon}:${preimage}:${preimage}`,
      `L402 ${body.macaroon}:${preimage}, L402 x:y`,
    ]) {
      await expectChallenge(await handler(get('/paid', header)), 'MALFORMED_CREDENTIAL');
    }
    expect(calls).toHaveLength(0);
  });

  it('refuses a preimage that is not 32 bytes of hex', async () => {
    const { handler, provider, calls } = setup();
    const { body, preimage } = await buy(handler, provider);
    for (const bad of [preimage.slice(0, 62), preimage + '00', 'abcd', 'zz'.repeat(32), preimage.slice(0, 63) + 'g']) {
      await expectChallenge(await handler(get('/paid', `L402 ${body.macaroon}:${bad}`)), 'INVALID_PREIMAGE');
    }
    expect(calls).toHaveLength(0);
    // The real preimage still works afterwards: refusals consume nothing.
    expect((await handler(get('/paid', `L402 ${body.macaroon}:${preimage}`))).status).toBe(200);
  });

  it('refuses a preimage that does not hash to the payment hash', async () => {
    const { handler, provider, calls } = setup();
    const { body } = await buy(handler, provider);
    await expectChallenge(await handler(get('/paid', `L402 ${body.macaroon}:${newPreimage().preimage}`)), 'PREIMAGE_MISMATCH');
    // Not even the hash itself passes as a preimage.
    await expectChallenge(await handler(get('/paid', `L402 ${body.macaroon}:${body.paymentHash}`)), 'PREIMAGE_MISMATCH');
    expect(calls).toHaveLength(0);
  });

  describe('expiry', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('refuses a token once its lifetime is over ("Token expired")', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const { handler, provider, calls } = setup({ tokenTtlSeconds: 1 });
      const { authorization } = await buy(handler, provider);
      expect(provider.requests[0]!.expirySeconds).toBe(1);
      vi.setSystemTime(Date.now() + 1500);
      const body = await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_EXPIRED');
      expect(body.error).toBe('Token expired');
      expect(calls).toHaveLength(0);
    });

    it('refuses a correctly signed token whose exp is in the past', async () => {
      const { handler, calls } = setup();
      const { preimage, hash } = newPreimage();
      const token = mintToken(new Keyring([SECRET]), {
        paymentHash: hash,
        expiresAt: Math.floor(Date.now() / 1000) - 1,
        caveats: { route: '/paid', price_msat: 10_000 },
      });
      const body = await expectChallenge(await handler(get('/paid', `L402 ${token}:${preimage}`)), 'TOKEN_EXPIRED');
      expect(body.error).toBe('Token expired');
      expect(calls).toHaveLength(0);
    });
  });

  it('refuses a token bought for another route', async () => {
    const { handler, provider, calls } = setup();
    const { authorization } = await buy(handler, provider, '/cheap');
    await expectChallenge(await handler(get('/other', authorization)), 'WRONG_ROUTE');
    expect(calls).toHaveLength(0);
    // Still good where it was bought.
    expect((await handler(get('/cheap', authorization))).status).toBe(200);
  });

  it('refuses a 1-sat token on a 1000-sat route sharing secret and replay store', async () => {
    const replayStore = memoryReplayStore();
    const provider = recordingProvider();
    const served: string[] = [];
    const common = { provider, secret: SECRET, replayStore, route: '/api/data', onError: () => {} };
    const cheap = withL402(() => (served.push('cheap'), Response.json({ tier: 'cheap' })), { ...common, priceSats: 1 });
    const dear = withL402(() => (served.push('dear'), Response.json({ tier: 'dear' })), { ...common, priceSats: 1000 });
    const { authorization } = await buy(cheap, provider, '/api/data');
    const body = await expectChallenge(await dear(get('/api/data', authorization)), 'INSUFFICIENT_PRICE');
    expect(body.priceSats).toBe(1000);
    expect(served).toEqual([]);
    expect((await cheap(get('/api/data', authorization))).status).toBe(200);
  });

  it('still checks the caveats of each new token after serving others', async () => {
    const replayStore = memoryReplayStore();
    const provider = recordingProvider();
    const paid: number[] = [];
    const common = { provider, secret: SECRET, replayStore, route: '/api/data', onError: () => {} };
    const cheap = withL402(() => Response.json({ tier: 'cheap' }), { ...common, priceSats: 1 });
    const dear = withL402((request) => (paid.push(getPayment(request)!.amountMsat), Response.json({ tier: 'dear' })), { ...common, priceSats: 1000 });
    const first = await buy(dear, provider, '/api/data');
    expect((await dear(get('/api/data', first.authorization))).status).toBe(200);
    const { authorization } = await buy(cheap, provider, '/api/data');
    await expectChallenge(await dear(get('/api/data', authorization)), 'INSUFFICIENT_PRICE');
    const second = await buy(dear, provider, '/api/data');
    expect((await dear(get('/api/data', second.authorization))).status).toBe(200);
    await expectChallenge(await dear(get('/api/data', authorization)), 'INSUFFICIENT_PRICE');
    expect(paid).toEqual([1_000_000, 1_000_000]);
  });

  it('refuses tokens a client forged with its own preimage', async () => {
    const { handler, provider, calls } = setup();
    const { body: real } = await buy(handler, provider);
    const kid = decodeToken(real.macaroon)!.kid;
    const { preimage, hash } = newPreimage();
    const exp = Math.floor(Date.now() / 1000) + 3600;
    const encode = (payload: unknown) => base64UrlEncode(utf8(JSON.stringify(payload)));
    const caveats = ['price_msat=10000', 'route=/paid'];
    const forged: [string, string][] = [
      // The seed spec's unsigned {hash, exp}.
      [encode({ hash, exp }), 'MALFORMED_TOKEN'],
      // Our shape without a signature.
      [encode({ v: 1, kid, hash, exp, caveats }), 'MALFORMED_TOKEN'],
      // A made-up signature with the server's key id.
      [encode({ v: 1, kid, hash, exp, caveats, sig: newPreimage().hash }), 'BAD_SIGNATURE'],
      // A made-up key id.
      [encode({ v: 1, kid: kid === '00000000' ? '11111111' : '00000000', hash, exp, caveats, sig: newPreimage().hash }), 'UNKNOWN_KEY'],
      // The real macaroon's signature over the forger's hash.
      [withPaymentHash(real.macaroon, hash), 'BAD_SIGNATURE'],
    ];
    for (const [token, code] of forged) {
      await expectChallenge(await handler(get('/paid', `L402 ${token}:${preimage}`)), code);
    }
    // A token signed with another secret.
    const foreign = mintToken(new Keyring(['some-other-secret-0123456789abcdef012345']), {
      paymentHash: hash,
      expiresAt: exp,
      caveats: { route: '/paid', price_msat: 10_000 },
    });
    await expectChallenge(await handler(get('/paid', `L402 ${foreign}:${preimage}`)), 'UNKNOWN_KEY');
    expect(calls).toHaveLength(0);
  });

  it('refuses the second use of a token', async () => {
    const { handler, provider, calls } = setup();
    const { authorization, body: bought, preimage } = await buy(handler, provider);
    expect((await handler(get('/paid', authorization))).status).toBe(200);
    const body = await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_ALREADY_USED');
    expect(body.error).toBe('Token has already been used');
    // Another spelling of the same credential is not a new token.
    await expectChallenge(await handler(get('/paid', `lsat ${toUrlSafeBase64(bought.macaroon)}:${preimage.toUpperCase()}`)), 'TOKEN_ALREADY_USED');
    expect(calls).toHaveLength(1);
  });
});

describe('withL402: prices', () => {
  it('prices each request with a function of the request', async () => {
    const priceSats = (request: Request) => (new URL(request.url).searchParams.get('size') === 'big' ? 100 : 10);
    const { handler, provider, calls } = setup({ priceSats });
    const small = await buy(handler, provider, '/paid?size=small');
    const big = await buy(handler, provider, '/paid?size=big');
    expect(small.body.priceSats).toBe(10);
    expect(big.body.priceSats).toBe(100);
    expect(provider.requests.map((r) => r.amountMsat)).toEqual([10_000, 100_000]);
    // Paying for the small one does not buy the big one...
    const refused = await expectChallenge(await handler(get('/paid?size=big', small.authorization)), 'INSUFFICIENT_PRICE');
    expect(refused.priceSats).toBe(100);
    expect(calls).toHaveLength(0);
    // ...but each opens what it was bought for.
    expect((await handler(get('/paid?size=big', big.authorization))).status).toBe(200);
    expect((await handler(get('/paid?size=small', small.authorization))).status).toBe(200);
    expect(calls.map((c) => c.payment?.amountMsat)).toEqual([100_000, 10_000]);
  });

  it('awaits an async price', async () => {
    const { handler, provider } = setup({ priceSats: async () => new Promise<number>((r) => setTimeout(() => r(21), 5)) });
    const { authorization, body } = await buy(handler, provider);
    expect(body.priceSats).toBe(21);
    expect(provider.requests[0]!.amountMsat).toBe(21_000);
    expect((await handler(get('/paid', authorization))).status).toBe(200);
  });

  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])('throws (a programming error, not a 402) for price %s', async (price) => {
    // A fixed price may be refused when the wrapper is built or when it is called; a price function when called.
    const thrown = async (options: Partial<L402Options>) => {
      try {
        const { handler } = setup(options);
        await handler(get());
      } catch (error) {
        return error;
      }
      return undefined;
    };
    expect(await thrown({ priceSats: price })).toEqual(expect.objectContaining({ message: expect.stringMatching(/priceSats/) }));
    const dynamic = setup({ priceSats: async () => price });
    await expect(dynamic.handler(get())).rejects.toThrow(/priceSats/);
    await expect(dynamic.handler(get('/paid', `L402 abc:${'00'.repeat(32)}`))).rejects.toThrow(/priceSats/);
    expect(dynamic.provider.requests).toHaveLength(0);
  });
});

describe('withL402: a failed request gives the use back', () => {
  it('rethrows a handler error and accepts the same token again', async () => {
    const { handler, provider, answer, calls } = setup();
    const { authorization } = await buy(handler, provider);
    const boom = new Error('handler exploded');
    answer(() => {
      throw boom;
    });
    await expect(handler(get('/paid', authorization))).rejects.toBe(boom);
    answer(() => Response.json({ ok: true }));
    expect((await handler(get('/paid', authorization))).status).toBe(200);
    await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_ALREADY_USED');
    expect(calls).toHaveLength(2);
  });

  it.each([500, 502, 503])('accepts the same token again after the handler answered %i', async (status) => {
    const { handler, provider, answer } = setup();
    const { authorization } = await buy(handler, provider);
    answer(() => Response.json({ error: 'down' }, { status }));
    const failed = await handler(get('/paid', authorization));
    expect(failed.status).toBe(status);
    expect(failed.headers.get('www-authenticate')).toBeNull();
    answer(() => Response.json({ ok: true }));
    expect((await handler(get('/paid', authorization))).status).toBe(200);
  });

  it.each([200, 204, 404])('consumes the token when the handler answered %i', async (status) => {
    const { handler, provider, answer } = setup();
    const { authorization } = await buy(handler, provider);
    answer(() => new Response(status === 204 ? null : 'x', { status }));
    expect((await handler(get('/paid', authorization))).status).toBe(status);
    answer(() => Response.json({ ok: true }));
    await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_ALREADY_USED');
  });
});

describe('withL402: multi-use tokens', () => {
  it('serves exactly `uses` requests per payment', async () => {
    const { handler, provider, calls } = setup({ uses: 3 });
    const { authorization } = await buy(handler, provider);
    for (let i = 0; i < 3; i++) expect((await handler(get('/paid', authorization))).status).toBe(200);
    await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_ALREADY_USED');
    expect(calls).toHaveLength(3);
  });

  it('does not let a single-use token into a multi-use paywall', async () => {
    const provider = recordingProvider();
    const single = withL402(() => Response.json({}), { priceSats: 10, provider, secret: SECRET, onError: () => {} });
    const multi = withL402(() => Response.json({}), { priceSats: 10, provider, secret: SECRET, uses: 3, onError: () => {} });
    const { authorization } = await buy(single, provider);
    await expectChallenge(await multi(get('/paid', authorization)), 'CAVEAT_NOT_SATISFIED');
  });

  it('rejects nonsense uses and ttl at construction', () => {
    const provider = recordingProvider();
    for (const bad of [{ uses: 0 }, { uses: 1.5 }, { tokenTtlSeconds: 0 }, { tokenTtlSeconds: -5 }]) {
      expect(() => createPaywall({ priceSats: 1, provider, secret: SECRET, ...bad })).toThrow();
    }
  });
});

describe('withL402: backends failing', () => {
  it('answers 503 PROVIDER_UNAVAILABLE with Retry-After and no challenge when the provider fails', async () => {
    const { handler, provider, onError, calls } = setup();
    provider.failing = true;
    const response = await handler(get());
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect(response.headers.get('content-type')).toBe('application/json');
    const body = (await response.json()) as { error: string; code: string; retryAfter: number };
    expect(body.code).toBe('PROVIDER_UNAVAILABLE');
    expect(body.error).not.toContain('backend down'); // no internal messages leave the server
    expect(body.retryAfter).toBe(Number(response.headers.get('retry-after')));
    expect(onError).toHaveBeenCalledWith(expect.any(Error), expect.any(String));
    expect(calls).toHaveLength(0);
  });

  it.each(['rejects', 'throws'])('answers 503 STORE_UNAVAILABLE without running the handler when the replay store %s, and the token survives', async (how) => {
    let storeUp = true;
    const inner = memoryReplayStore();
    const fail = () => {
      const error = new Error('ECONNREFUSED');
      if (how === 'throws') throw error;
      return Promise.reject(error);
    };
    const replayStore: ReplayStore = {
      claim: (...args) => (storeUp ? inner.claim(...args) : fail()),
      release: (hash) => inner.release(hash),
    };
    const { handler, provider, calls, onError } = setup({ replayStore });
    const { authorization } = await buy(handler, provider);
    storeUp = false;
    const response = await handler(get('/paid', authorization));
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
    expect(response.headers.get('www-authenticate')).toBeNull();
    expect(((await response.json()) as { code: string }).code).toBe('STORE_UNAVAILABLE');
    expect(calls).toHaveLength(0);
    expect(onError).toHaveBeenCalled();
    storeUp = true;
    expect((await handler(get('/paid', authorization))).status).toBe(200);
  });
});

describe('withL402: a claim whose answer was lost', () => {
  /** A store keeping attempts (the library's in-process one, which keeps them as the shared stores do) whose answers can be lost after the claim ran. */
  function losingStore() {
    const inner = memoryReplayStore();
    const store = {
      loseNext: 0,
      failReleases: 0,
      releases: [] as string[],
      usedCount: (hash: string) => inner.usedCount(hash),
      async claim(hash: string, maxUses: number, expiresAt: number, attempt: string) {
        const claimed = await inner.claim(hash, maxUses, expiresAt, attempt);
        if (store.loseNext > 0) {
          store.loseNext -= 1;
          throw new Error('socket hang up');
        }
        return claimed;
      },
      async release(hash: string, attempt: string, expiresAt: number) {
        store.releases.push(attempt);
        if (store.failReleases > 0) {
          store.failReleases -= 1;
          throw new Error('ECONNRESET');
        }
        await inner.release(hash, attempt, expiresAt);
      },
    };
    return store;
  }
  const hashOf = (body: ChallengeBody) => body.paymentHash;

  it('gives that attempt\u2019s use back: 503 now, the same token served on the retry, once', async () => {
    const replayStore = losingStore();
    const { handler, provider, calls } = setup({ replayStore });
    const { authorization, body } = await buy(handler, provider);
    replayStore.loseNext = 1;
    const refused = await handler(get('/paid', authorization));
    expect(refused.status).toBe(503);
    expect(calls).toHaveLength(0);
    expect(replayStore.releases).toHaveLength(1);
    expect(await replayStore.usedCount(hashOf(body))).toBe(0);
    expect((await handler(get('/paid', authorization))).status).toBe(200);
    await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_ALREADY_USED');
    expect(calls).toHaveLength(1);
  });

  it('never gives back a use another request holds: a refused claim whose answer was lost releases nothing', async () => {
    const replayStore = losingStore();
    const { handler, provider, calls } = setup({ replayStore });
    const { authorization, body } = await buy(handler, provider);
    expect((await handler(get('/paid', authorization))).status).toBe(200);
    replayStore.loseNext = 1; // this claim is refused in the store (the token is used), then its answer is lost
    expect((await handler(get('/paid', authorization))).status).toBe(503);
    expect(await replayStore.usedCount(hashOf(body))).toBe(1);
    await expectChallenge(await handler(get('/paid', authorization)), 'TOKEN_ALREADY_USED');
    expect(calls).toHaveLength(1);
  });

  it('retries a release the store did not take, in the background, until it is taken', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      const replayStore = losingStore();
      const kept: Promise<unknown>[] = [];
      const { handler, provider, onError } = setup({ replayStore, waitUntil: (work) => kept.push(work) });
      const { authorization, body } = await buy(handler, provider);
      replayStore.loseNext = 1;
      replayStore.failReleases = 3;
      expect((await handler(get('/paid', authorization))).status).toBe(503);
      expect(await replayStore.usedCount(hashOf(body))).toBe(1); // held until the store takes the release
      expect(kept).toHaveLength(1); // a serverless function stays up for the retries
      let retriesDone = false;
      void kept[0]!.then(() => (retriesDone = true));
      await vi.advanceTimersByTimeAsync(RELEASE_RETRY_DELAYS_MS[0]! + RELEASE_RETRY_DELAYS_MS[1]!);
      expect(retriesDone).toBe(false);
      await vi.advanceTimersByTimeAsync(RELEASE_RETRY_DELAYS_MS[2]!);
      expect(retriesDone).toBe(true);
      expect(replayStore.releases).toHaveLength(4);
      expect(new Set(replayStore.releases).size).toBe(1); // always the same attempt
      expect(await replayStore.usedCount(hashOf(body))).toBe(0);
      expect(onError).toHaveBeenCalledWith(expect.any(Error), 'releasing a use failed');
      await vi.advanceTimersByTimeAsync(120_000);
      expect(replayStore.releases).toHaveLength(4); // taken: no more tries
      expect((await handler(get('/paid', authorization))).status).toBe(200);
    } finally {
      vi.useRealTimers();
    }
  });

  it('gives up on a release after about a minute of failures, without throwing', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      const replayStore = losingStore();
      const { handler, provider } = setup({ replayStore });
      const { authorization } = await buy(handler, provider);
      replayStore.loseNext = 1;
      replayStore.failReleases = 100;
      expect((await handler(get('/paid', authorization))).status).toBe(503);
      await vi.advanceTimersByTimeAsync(10 * 60_000);
      expect(replayStore.releases).toHaveLength(1 + RELEASE_RETRY_DELAYS_MS.length);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('withL402: concurrency', () => {
  it('lets exactly one of 100 simultaneous requests with one token through', async () => {
    const { handler, provider, calls } = setup();
    const { authorization } = await buy(handler, provider);
    const responses = await Promise.all(Array.from({ length: 100 }, () => handler(get('/paid', authorization))));
    const statuses = responses.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 402)).toHaveLength(99);
    const codes = await Promise.all(responses.filter((r) => r.status === 402).map(async (r) => ((await r.json()) as ChallengeBody).code));
    expect(new Set(codes)).toEqual(new Set(['TOKEN_ALREADY_USED']));
    expect(calls).toHaveLength(1);
  });
});

describe('l402Middleware in a real Express 5 app', () => {
  let served: Listening;
  let base: string;
  let provider: RecordingProvider;
  let failNext = false;

  const l402Of = (req: unknown) => (req as { l402?: Payment }).l402;

  beforeAll(async () => {
    provider = recordingProvider();
    const options: L402Options = { priceSats: 5, provider, secret: SECRET, onError: () => {} };
    const app = express();
    app.get('/paid', l402Middleware(options), (req, res) => {
      res.json({ ok: true, payment: l402Of(req) });
    });
    app.get('/flaky', l402Middleware(options), (req, res, next) => {
      if (failNext) {
        failNext = false;
        next(new Error('downstream failed'));
        return;
      }
      res.json({ ok: true, payment: l402Of(req) });
    });
    app.all('/any', l402Middleware(options), (_req, res) => {
      res.json({ ok: true });
    });
    app.post('/echo', l402Middleware(options), express.json(), (req, res) => {
      res.json({ received: req.body as unknown, payment: l402Of(req) });
    });
    served = await listenNode(app);
    base = served.url;
  });

  afterAll(async () => {
    await served.close();
  });

  async function buyOver(path: string, init: RequestInit = {}) {
    const challenge = await fetch(base + path, init);
    expect(challenge.status).toBe(402);
    return { challenge, authorization: await payChallenge(challenge.clone(), provider) };
  }

  it('answers 402 with both WWW-Authenticate challenges, a paid retry gets 200, a replay 402', async () => {
    const { challenge, authorization } = await buyOver('/paid');
    const body = (await challenge.json()) as ChallengeBody;
    expect(body.code).toBe('PAYMENT_REQUIRED');
    expect(body.priceSats).toBe(5);
    expect(challenge.headers.get('content-type')).toBe('application/json');
    expect(challenge.headers.get('cache-control')).toBe('no-store');
    const header = challenge.headers.get('www-authenticate')!;
    expect(header).toContain(`LSAT macaroon="${body.macaroon}", invoice="${body.invoice}"`);
    expect(header).toContain(`L402 macaroon="${body.macaroon}", invoice="${body.invoice}"`);
    expect(header).toContain(`L402 version="0", token="${body.macaroon}", invoice="${body.invoice}"`);

    const paid = await fetch(base + '/paid', { headers: { authorization } });
    expect(paid.status).toBe(200);
    expect(paid.headers.get('www-authenticate')).toBeNull();
    expect(paid.headers.get('cache-control')).toBe('no-store');
    expect(await paid.json()).toEqual({ ok: true, payment: { paymentHash: body.paymentHash, route: '/paid', amountMsat: 5000, scheme: 'L402' } });

    const replay = await fetch(base + '/paid', { headers: { authorization } });
    expect(replay.status).toBe(402);
    expect(((await replay.json()) as ChallengeBody).code).toBe('TOKEN_ALREADY_USED');
  });

  it('sends the three challenges as three header lines', async () => {
    const raw = await rawGet(base, '/paid', {});
    expect(raw.status).toBe(402);
    const lines = raw.headerLines('www-authenticate');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^LSAT macaroon="[A-Za-z0-9+/]+={0,2}", invoice="lnbcrt-test-[0-9a-f]{8}"$/);
    expect(lines[1]).toMatch(/^L402 macaroon="[A-Za-z0-9+/]+={0,2}", invoice="lnbcrt-test-[0-9a-f]{8}"$/);
    expect(lines[2]).toMatch(/^L402 version="0", token="[A-Za-z0-9+/]+={0,2}", invoice="lnbcrt-test-[0-9a-f]{8}"$/);
  });

  it('gives the use back when the route handler fails with next(err)', async () => {
    const { authorization } = await buyOver('/flaky');
    failNext = true;
    const failed = await fetch(base + '/flaky', { headers: { authorization } });
    expect(failed.status).toBe(500);
    await failed.text();
    // The release runs on the response's 'finish'; poll rather than race it.
    await vi.waitFor(async () => {
      const retry = await fetch(base + '/flaky', { headers: { authorization } });
      expect(retry.status).toBe(200);
    });
    const replay = await fetch(base + '/flaky', { headers: { authorization } });
    expect(replay.status).toBe(402);
  });

  it('leaves the request body to express.json() placed after it', async () => {
    const post = (authorization?: string) =>
      fetch(base + '/echo', {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ question: 'answer?', n: 42 }),
      });
    const challenge = await post();
    expect(challenge.status).toBe(402);
    const authorization = await payChallenge(challenge, provider);
    const paid = await post(authorization);
    expect(paid.status).toBe(200);
    const body = (await paid.json()) as { received: unknown; payment: Payment };
    expect(body.received).toEqual({ question: 'answer?', n: 42 });
    expect(body.payment.route).toBe('/echo');
  });

  it('refuses methods a Web Request cannot carry (TRACE) with 405, not 500', async () => {
    const raw = await rawGet(base, '/any', {}, 'TRACE');
    expect(raw.status).toBe(405);
    expect(JSON.parse(raw.body)).toMatchObject({ code: 'METHOD_NOT_ALLOWED' });
    expect((await rawGet(base, '/any', {}, 'DELETE')).status).toBe(402);
  });

  it('is not crashed by a hostile Host header', async () => {
    for (const host of ['bad host name', 'x:99999', '[::1', '%%%', 'user@evil.example', 'a:b@c@d', 'evil.example/../../etc']) {
      const raw = await rawGet(base, '/paid', { host });
      expect([host, raw.status]).toEqual([host, 402]);
      expect((JSON.parse(raw.body) as ChallengeBody).code).toBe('PAYMENT_REQUIRED');
    }
    // The same trick in an absolute-form request target.
    const absolute = await rawGet(base, 'http://user:pw@evil.example/paid', {});
    expect(absolute.status).toBe(402);
    // And the token it sells still opens /paid through a normal request.
    const raw = await rawGet(base, '/paid', { host: 'bad host name' });
    const body = JSON.parse(raw.body) as ChallengeBody;
    const paid = await fetch(base + '/paid', { headers: { authorization: `L402 ${body.macaroon}:${provider.preimages.get(body.paymentHash)}` } });
    expect(paid.status).toBe(200);
  });
});

/** node:http, because fetch cannot set Host and joins repeated header lines. */
function rawGet(base: string, path: string, headers: Record<string, string>, method = 'GET') {
  const { hostname, port } = new URL(base);
  return new Promise<{ status: number; body: string; headerLines(name: string): string[] }>((resolve, reject) => {
    const req = httpRequest({ hostname, port, path, method, headers, setHost: !('host' in headers) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
          headerLines: (name) => res.rawHeaders.filter((_, i) => i % 2 === 1 && res.rawHeaders[i - 1]!.toLowerCase() === name),
        }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('limitInvoices: a limit on making invoices, asked before each 402', () => {
  it('answers 429 RATE_LIMITED with Retry-After and makes no invoice when the limit says so; paid requests never ask', async () => {
    const provider = recordingProvider();
    let limited = false;
    const asked: string[] = [];
    const handler = withL402(() => Response.json({ ok: true }), {
      priceSats: 2,
      provider,
      secret: SECRET,
      limitInvoices: (request) => {
        asked.push(request.headers.get('authorization') ?? 'none');
        return limited ? { retryAfterSeconds: 12.2, message: 'slow down' } : undefined;
      },
    });
    const first = await handler(new Request(`${BASE}/x`));
    expect(first.status).toBe(402);
    const authorization = await payChallenge(first, provider);
    limited = true;
    const refused = await handler(new Request(`${BASE}/x`));
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toBe('13');
    expect(refused.headers.get('www-authenticate')).toBeNull();
    expect(await refused.json()).toEqual({ error: 'slow down', code: 'RATE_LIMITED', retryAfter: 13 });
    expect(provider.requests).toHaveLength(1);
    // A paid request is served and the limit is not asked.
    expect((await handler(new Request(`${BASE}/x`, { headers: { authorization } }))).status).toBe(200);
    expect(asked).toEqual(['none', 'none']);
  });

  it('answers 503 with Retry-After, and makes no invoice, when the limit cannot be checked', async () => {
    const provider = recordingProvider();
    const onError = vi.fn();
    const handler = withL402(() => Response.json({ ok: true }), {
      priceSats: 2,
      provider,
      secret: SECRET,
      onError,
      limitInvoices: () => Promise.reject(new Error('store down')),
    });
    const response = await handler(new Request(`${BASE}/x`));
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(provider.requests).toEqual([]);
    expect(onError).toHaveBeenCalledWith(expect.any(Error), 'checking the invoice limit failed');
  });
});
