// The paywall speaking both schemes (docs/mpp.md): one 402 offers L402 and a
// Payment (Lightning charge) challenge for one invoice; either credential
// opens the route once, however they race, in the in-process store and in
// real Redis; a changed, expired, foreign or unpaid Payment credential is
// refused with a fresh 402 and the drafts' problem type; a paid answer
// carries a Payment-Receipt. mppx, a peer implementation, reads our
// challenges and receipts and builds the credentials. Real paywall, real dev
// Lightning node, real Express app.
import { randomUUID } from 'node:crypto';
import express from 'express';
import { Redis as IORedis } from 'ioredis';
import { Challenge, Credential, Receipt } from 'mppx';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { l402Middleware } from 'l402-paywall/express';
import { decodeInvoice } from 'l402-paywall/lightning';
import { redisReplayStore } from 'l402-paywall/redis';
import { EVENT_TYPES, type L402Event } from 'l402-paywall/events';
import { getPayment, memoryReplayStore, withL402, type L402Options, type Payment, type ReplayStore } from 'l402-paywall';
import { fetchWithL402, getPaymentReceipt, type Wallet } from 'l402-paywall/client';
import { REDIS_URL, redisReachable } from '../support/redis.js';
import { newPreimage } from '../support/l402.js';
import { listenNode, type Listening } from '../support/listen.js';

const SECRET = 'mpp-paywall-test-secret-0123456789abcdef0123';
const OTHER_SECRET = 'another-servers-secret-0123456789abcdef012345';
const BASE = 'https://shop.example';
const node = createDevNode();
const redisUp = await redisReachable();
let redis: IORedis | undefined;
beforeAll(() => {
  if (redisUp) redis = new IORedis(REDIS_URL);
});
afterAll(() => redis?.disconnect());
afterEach(() => vi.restoreAllMocks());

type Handler = (request: Request) => Promise<Response>;

interface Paywalled {
  handler: Handler;
  served: () => number;
  payments: Payment[];
}

function paywalled(
  options: Partial<L402Options> = {},
  answer: (request: Request) => Response | Promise<Response> = () => Response.json({ ok: true }),
): Paywalled {
  let served = 0;
  const payments: Payment[] = [];
  const handler = withL402(
    async (request: Request) => {
      served++;
      payments.push(getPayment(request)!);
      await new Promise((r) => setTimeout(r, 2)); // a handler that takes time widens any race
      return answer(request);
    },
    { priceSats: 21, provider: node, secret: SECRET, onError: () => {}, ...options },
  );
  return { handler, served: () => served, payments };
}

const get = (path = '/paid', authorization?: string, headers: Record<string, string> = {}) =>
  new Request(BASE + path, { headers: { ...headers, ...(authorization === undefined ? {} : { authorization }) } });

interface Bought {
  /** The 402 that was paid. */
  response: Response;
  body: { macaroon?: string; invoice: string; paymentHash: string; code: string; type: string; challengeId?: string };
  challenge: ReturnType<typeof Challenge.fromResponse>;
  preimage: string;
  l402: string;
  payment: string;
}

/** A 402 of `handler`, read by mppx, paid with the dev node: both credentials for the one payment. */
async function buy(handler: Handler, path = '/paid'): Promise<Bought> {
  const response = await handler(get(path));
  expect(response.status).toBe(402);
  const body = (await response.clone().json()) as Bought['body'];
  const challenge = Challenge.fromResponse(response);
  const { preimage } = await node.pay(body.invoice);
  return {
    response,
    body,
    challenge,
    preimage,
    l402: `L402 ${body.macaroon}:${preimage}`,
    payment: Credential.serialize(Credential.from({ challenge, payload: { preimage } })),
  };
}

/** The echoed challenge of a Payment credential, changed by `edit`, re-encoded as a credential. */
function tampered(payment: string, edit: (challenge: Record<string, unknown>) => void): string {
  const credential = Credential.deserialize<{ preimage: string }>(payment);
  const challenge = { ...credential.challenge } as Record<string, unknown>;
  edit(challenge);
  const json = JSON.stringify({ challenge: { ...challenge, request: encodeJson(challenge.request) }, payload: credential.payload });
  return `Payment ${Buffer.from(json).toString('base64url')}`;
}
const encodeJson = (value: unknown) => (typeof value === 'string' ? value : Buffer.from(JSON.stringify(sorted(value))).toString('base64url'));
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, sorted((value as Record<string, unknown>)[k])]),
    );
  return value;
}

/**
 * A refusal: 402, both schemes' fresh challenges, our code and the problem type. `first`: the
 * scheme of the first challenge, that of the refused credential (a Payment client gets its
 * challenges first, as mppx's validator expects).
 */
async function expectRefused(response: Response, problem: string, code?: string, first: 'L402' | 'Payment' = 'Payment') {
  expect(response.status).toBe(402);
  const authenticate = response.headers.get('www-authenticate')!;
  // The L402 family's first challenge is LSAT (Aperture's order: LSAT, then L402).
  expect(authenticate.startsWith(first === 'L402' ? 'LSAT ' : 'Payment ')).toBe(true);
  const fresh = Challenge.fromResponse(response);
  expect(fresh.method).toBe('lightning');
  const body = (await response.json()) as Bought['body'] & { status: number; detail: string };
  expect(body.type).toBe(`https://paymentauth.org/problems/${problem}`);
  expect(body.status).toBe(402);
  expect(body.challengeId).toBe(fresh.id);
  if (code) expect(body.code).toBe(code);
  return body;
}

describe('the 402 carries both schemes for one invoice', () => {
  it('mppx reads the Payment challenge of a withL402 route: lightning charge, the same invoice, expiring with it', async () => {
    const { handler } = paywalled({ memo: () => 'Weather for 94107' });
    const before = Math.floor(Date.now() / 1000);
    const response = await handler(get('/paid'));
    expect(response.status).toBe(402);
    const values = response.headers.get('www-authenticate')!;
    // The L402 family first (LSAT, then L402); then Payment.
    expect(values.indexOf('LSAT ')).toBe(0);
    expect(values.indexOf('Payment ')).toBeGreaterThan(values.lastIndexOf('L402 '));
    const body = (await response.clone().json()) as Bought['body'];
    const challenge = Challenge.fromResponse(response);
    // No realm option: the host name of the request's URL, without its port.
    expect(challenge).toMatchObject({ realm: new URL(get('/paid').url).hostname, method: 'lightning', intent: 'charge' });
    expect(challenge.request).toEqual({
      amount: '21',
      currency: 'sat',
      description: 'Weather for 94107',
      methodDetails: { invoice: body.invoice, paymentHash: body.paymentHash, network: 'regtest' },
    });
    const invoice = decodeInvoice(body.invoice);
    const expires = Date.parse(challenge.expires!) / 1000;
    expect(expires).toBeLessThanOrEqual(invoice.timestamp + invoice.expirySeconds);
    expect(expires).toBeGreaterThanOrEqual(before + 3600 - 1);
    expect(body.challengeId).toBe(challenge.id);
    expect(body.type).toBe('https://paymentauth.org/problems/payment-required');
    expect(response.headers.get('content-type')).toBe('application/json');
  });

  it('serves application/problem+json to a client that asks for it', async () => {
    const { handler } = paywalled();
    const response = await handler(get('/paid', undefined, { accept: 'application/problem+json, application/json' }));
    expect(response.headers.get('content-type')).toBe('application/problem+json');
  });

  it('the realm option names the protection space; a credential for another realm is refused', async () => {
    const a = paywalled({ realm: 'api.example.com' });
    const { challenge, payment } = await buy(a.handler);
    expect(challenge.realm).toBe('api.example.com');
    const b = paywalled({ realm: 'other.example.com' });
    await expectRefused(await b.handler(get('/paid', payment)), 'invalid-challenge', 'WRONG_REALM');
    expect((await a.handler(get('/paid', payment))).status).toBe(200);
  });

  it('either scheme can be turned off; uses > 1 offers L402 only', async () => {
    const l402Only = await paywalled({ schemes: { payment: false } }).handler(get());
    expect(l402Only.headers.get('www-authenticate')).not.toContain('Payment ');
    const multi = await paywalled({ uses: 3 }).handler(get());
    expect(multi.headers.get('www-authenticate')).not.toContain('Payment ');
    expect(() => paywalled({ uses: 3, schemes: { payment: true } })).toThrow(/uses/);
    expect(() => paywalled({ schemes: { payment: false, l402: false } })).toThrow(/both/);
    expect(() => paywalled({ realm: 'a|b' })).toThrow(/realm/);
    expect(() => paywalled({ schemes: 'payment' as never })).toThrow(/schemes/);
    expect(() => paywalled({ keepPaymentOnFailure: 'yes' as never })).toThrow(/keepPaymentOnFailure/);

    const paymentOnly = paywalled({ schemes: { l402: false } });
    const { response, body, l402, payment } = await buy(paymentOnly.handler);
    expect(response.headers.get('www-authenticate')).toMatch(/^Payment /);
    expect(body.macaroon).toBeUndefined();
    expect(l402).toBe(`L402 undefined:${l402.slice(-64)}`);
    await expectRefused(await paymentOnly.handler(get('/paid', 'L402 abc:' + '0'.repeat(64))), 'lightning/malformed-credential', 'MALFORMED_CREDENTIAL');
    expect((await paymentOnly.handler(get('/paid', payment))).status).toBe(200);
  });
});

describe('a Payment credential opens the route, with a receipt', () => {
  it('a credential built with mppx is served 200 with a Payment-Receipt mppx reads', async () => {
    const route = paywalled();
    const { payment, challenge, body, preimage } = await buy(route.handler);
    const response = await route.handler(get('/paid', payment));
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const receipt = Receipt.fromResponse(response);
    expect(receipt).toMatchObject({ method: 'lightning', challengeId: challenge.id, reference: body.paymentHash, status: 'success' });
    expect(Math.abs(Date.parse(receipt.timestamp) - Date.now())).toBeLessThan(5000);
    expect(response.headers.get('payment-receipt')).not.toContain(preimage);
    expect(Buffer.from(response.headers.get('payment-receipt')!, 'base64url').toString()).not.toContain(preimage);
    expect(route.payments).toEqual([{ paymentHash: body.paymentHash, route: '/paid', amountMsat: 21_000, scheme: 'Payment', challengeId: challenge.id }]);
  });

  it('our own client pays it either way: L402 by default, Payment when asked, with the receipt checked', async () => {
    const { handler, served } = paywalled();
    const paid: string[] = [];
    const wallet: Wallet = {
      network: 'regtest',
      payInvoice: async ({ invoice }) => {
        paid.push(invoice);
        return { preimage: (await node.pay(invoice)).preimage };
      },
    };
    const fetch = (input: string | URL | Request, init?: RequestInit) => handler(new Request(input, init));
    const byDefault = await fetchWithL402(`${BASE}/paid`, undefined, { wallet, maxPriceSats: 21, fetch });
    expect(byDefault.status).toBe(200);
    expect(getPaymentReceipt(byDefault)).toMatchObject({ scheme: 'L402', offered: ['L402', 'Payment'] });
    const asked = await fetchWithL402(`${BASE}/paid`, undefined, { wallet, maxPriceSats: 21, fetch, scheme: 'Payment' });
    expect(asked.status).toBe(200);
    const receipt = getPaymentReceipt(asked)!;
    expect(receipt).toMatchObject({
      scheme: 'Payment',
      challengeId: expect.any(String),
      serverReceipt: { challengeId: expect.any(String), reference: expect.stringMatching(/^[0-9a-f]{64}$/) },
    });
    expect(receipt.serverReceiptProblem).toBeUndefined();
    expect(paid).toHaveLength(2);
    expect(served()).toBe(2);
  });

  it('audit events name the scheme: request.served and token.rejected', async () => {
    const events: L402Event[] = [];
    const route = paywalled({ onEvent: (event) => void events.push(event) });
    const { payment, l402 } = await buy(route.handler);
    expect((await route.handler(get('/paid', payment))).status).toBe(200);
    expect((await route.handler(get('/paid', l402))).status).toBe(402);
    expect((await route.handler(get('/paid', payment))).status).toBe(402);
    await vi.waitFor(() => expect(events.filter((e) => e.type !== EVENT_TYPES.challengeIssued)).toHaveLength(3));
    const named = events.filter((e) => e.type !== EVENT_TYPES.challengeIssued).map((e) => [e.type, e.data.scheme]);
    expect(named).toEqual([
      [EVENT_TYPES.serverRequestServed, 'Payment'],
      [EVENT_TYPES.tokenRejected, 'L402'],
      [EVENT_TYPES.tokenRejected, 'Payment'],
    ]);
  });

  it('an L402 credential gets no receipt', async () => {
    const route = paywalled();
    const { l402 } = await buy(route.handler);
    const response = await route.handler(get('/paid', l402));
    expect(response.status).toBe(200);
    expect(response.headers.get('payment-receipt')).toBeNull();
  });

  it('no receipt on an error answer; a 5xx gives the use back, so the same credential is served on retry', async () => {
    let status = 500;
    const route = paywalled({}, () => new Response('{}', { status }));
    const { payment } = await buy(route.handler);
    const failed = await route.handler(get('/paid', payment));
    expect(failed.status).toBe(500);
    expect(failed.headers.get('payment-receipt')).toBeNull();
    status = 404;
    const notFound = await route.handler(get('/paid', payment));
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('payment-receipt')).toBeNull();
    // The 404 spent it.
    await expectRefused(await route.handler(get('/paid', payment)), 'lightning/unknown-challenge', 'TOKEN_ALREADY_USED');
  });

  it('keepPaymentOnFailure: a 5xx spends a Payment credential, as draft-lightning-charge says; an L402 one is still given back', async () => {
    const route = paywalled({ keepPaymentOnFailure: true }, () => new Response('{}', { status: 503 }));
    const first = await buy(route.handler);
    expect((await route.handler(get('/paid', first.payment))).status).toBe(503);
    await expectRefused(await route.handler(get('/paid', first.payment)), 'lightning/unknown-challenge', 'TOKEN_ALREADY_USED');
    const second = await buy(route.handler);
    expect((await route.handler(get('/paid', second.l402))).status).toBe(503);
    expect((await route.handler(get('/paid', second.l402))).status).toBe(503);
  });

  it('the same conditions as L402: another route, or another owner, is refused', async () => {
    const alice = paywalled({ caveats: () => ({ owner: 'alice@example.com' }) });
    const bob = paywalled({ caveats: () => ({ owner: 'bob@example.com' }) });
    const { payment } = await buy(alice.handler, '/a');
    await expectRefused(await alice.handler(get('/b', payment)), 'invalid-challenge', 'WRONG_ROUTE');
    await expectRefused(await bob.handler(get('/a', payment)), 'invalid-challenge', 'CAVEAT_NOT_SATISFIED');
    const dearer = paywalled({ priceSats: 22, caveats: () => ({ owner: 'alice@example.com' }) });
    await expectRefused(await dearer.handler(get('/a', payment)), 'payment-insufficient', 'INSUFFICIENT_PRICE');
    expect((await alice.handler(get('/a', payment))).status).toBe(200);
  });

  it('two Payment credentials in one request: 400', async () => {
    const route = paywalled();
    const { payment } = await buy(route.handler);
    const response = await route.handler(get('/paid', `${payment}, ${payment}`));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'MULTIPLE_CREDENTIALS', status: 400 });
    expect(route.served()).toBe(0);
  });

  it('a credential for another payment method: 400 method-unsupported', async () => {
    const route = paywalled();
    const { payment } = await buy(route.handler);
    // Not ours any more either, but the method is read first.
    const other = tampered(payment, (c) => {
      c.method = 'tempo';
    });
    const response = await route.handler(get('/paid', other));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ type: 'https://paymentauth.org/problems/method-unsupported', code: 'METHOD_UNSUPPORTED' });
  });
});

describe('changed, expired, foreign and unpaid credentials are refused with a fresh 402', () => {
  const route = paywalled();
  const edits: [string, (c: Record<string, unknown>) => void][] = [
    ['amount', (c) => ((c.request as { amount: string }).amount = '1')],
    [
      'paymentHash',
      (c) => {
        (c.request as { methodDetails: { paymentHash: string } }).methodDetails.paymentHash = newPreimage().hash;
      },
    ],
    ['route (opaque)', (c) => (c.opaque = Buffer.from(JSON.stringify({ route: '/other' })).toString('base64url'))],
    ['expiry', (c) => (c.expires = new Date(Date.now() + 7 * 86_400_000).toISOString().replace(/\.\d+Z$/, 'Z'))],
    ['realm', (c) => (c.realm = 'evil.example')],
  ];
  for (const [what, edit] of edits) {
    it(`a changed ${what}: unknown-challenge`, async () => {
      const { payment } = await buy(route.handler);
      const changed = tampered(payment, (c) => {
        c.request = structuredClone(c.request);
        edit(c);
      });
      await expectRefused(await route.handler(get('/paid', changed)), 'lightning/unknown-challenge', 'UNKNOWN_CHALLENGE');
      // The original still opens the route once.
      expect((await route.handler(get('/paid', payment))).status).toBe(200);
    });
  }

  it('an expired challenge: expired-invoice', async () => {
    const { payment } = await buy(route.handler);
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 3601_000);
    await expectRefused(await route.handler(get('/paid', payment)), 'lightning/expired-invoice', 'TOKEN_EXPIRED');
  });

  it("another server's challenge (another secret): unknown-challenge", async () => {
    const other = paywalled({ secret: OTHER_SECRET });
    const { payment } = await buy(other.handler);
    await expectRefused(await route.handler(get('/paid', payment)), 'lightning/unknown-challenge', 'UNKNOWN_CHALLENGE');
    expect((await other.handler(get('/paid', payment))).status).toBe(200);
  });

  it('a wrong preimage: invalid-preimage', async () => {
    const { challenge } = await buy(route.handler);
    const wrong = Credential.serialize(Credential.from({ challenge, payload: { preimage: newPreimage().preimage } }));
    await expectRefused(await route.handler(get('/paid', wrong)), 'lightning/invalid-preimage', 'PREIMAGE_MISMATCH');
  });

  it('a malformed credential: malformed-credential', async () => {
    for (const bad of ['Payment !!!', 'Payment e30', `Payment ${Buffer.from('{"challenge":{}}').toString('base64url')}`]) {
      await expectRefused(await route.handler(get('/paid', bad)), 'lightning/malformed-credential', 'MALFORMED_CREDENTIAL');
    }
  });
});

const stores: [string, () => ReplayStore][] = [['the in-process store', () => memoryReplayStore()]];
if (redisUp) stores.push(['real Redis', () => redisReplayStore(redis!, { prefix: `test:mpp:${randomUUID()}:` })]);

describe.each(stores)('one payment, both credentials, %s: served exactly once', (_name, makeStore) => {
  it('sequentially: L402 then Payment, and Payment then L402', async () => {
    const route = paywalled({ replayStore: makeStore() });
    const first = await buy(route.handler);
    expect((await route.handler(get('/paid', first.l402))).status).toBe(200);
    await expectRefused(await route.handler(get('/paid', first.payment)), 'lightning/unknown-challenge', 'TOKEN_ALREADY_USED');
    const second = await buy(route.handler);
    expect((await route.handler(get('/paid', second.payment))).status).toBe(200);
    await expectRefused(await route.handler(get('/paid', second.l402)), 'lightning/unknown-challenge', 'TOKEN_ALREADY_USED', 'L402');
    await expectRefused(await route.handler(get('/paid', second.payment)), 'lightning/unknown-challenge', 'TOKEN_ALREADY_USED');
    expect(route.served()).toBe(2);
  });

  it('50 concurrent requests, half of each scheme, over two instances sharing the store: one 200', async () => {
    const store = makeStore();
    const a = paywalled({ replayStore: store });
    const b = paywalled({ replayStore: store });
    const { l402, payment } = await buy(a.handler);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 4 < 2 ? a : b).handler(get('/paid', i % 2 ? l402 : payment))));
    expect(answers.filter((r) => r.status === 200)).toHaveLength(1);
    const codes = await Promise.all(answers.filter((r) => r.status !== 200).map(async (r) => ((await r.json()) as { code: string }).code));
    expect(codes).toEqual(Array(49).fill('TOKEN_ALREADY_USED'));
    expect(a.served() + b.served()).toBe(1);
  });
});

describe('l402Middleware (Express) speaks both schemes', () => {
  let server: Listening;
  let url = '';
  let status = 200;
  beforeAll(async () => {
    const app = express();
    app.get('/paid', l402Middleware({ priceSats: 21, provider: node, secret: SECRET, realm: 'shop.example' }), (_req, res) => {
      res.status(status).json({ ok: status < 400 });
    });
    server = await listenNode(app);
    url = `${server.url}/paid`;
  });
  afterAll(() => server.close());

  it('a 402 mppx reads; an mppx credential is served with a receipt; an error answer has none', async () => {
    const buyHere = async () => {
      const challenge = await fetch(url);
      expect(challenge.status).toBe(402);
      const parsed = Challenge.fromResponse(challenge);
      const { preimage } = await node.pay((await challenge.json()).invoice);
      return { parsed, credential: Credential.serialize(Credential.from({ challenge: parsed, payload: { preimage } })) };
    };
    const { parsed, credential } = await buyHere();
    status = 200;
    const paid = await fetch(url, { headers: { authorization: credential } });
    expect(paid.status).toBe(200);
    expect(Receipt.fromResponse(paid)).toMatchObject({ challengeId: parsed.id, status: 'success' });
    const replay = await fetch(url, { headers: { authorization: credential } });
    expect(replay.status).toBe(402);
    expect(((await replay.json()) as { type: string }).type).toBe('https://paymentauth.org/problems/lightning/unknown-challenge');
    status = 404;
    const other = await buyHere();
    const notFound = await fetch(url, { headers: { authorization: other.credential } });
    expect(notFound.status).toBe(404);
    expect(notFound.headers.get('payment-receipt')).toBeNull();
  });
});
