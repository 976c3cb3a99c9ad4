// fetchWithL402 against real servers: this project's demo through the real
// local server, an Express app and a Hono app using the library, and
// stand-ins for Aperture and misbehaving servers. The properties an agent's
// money relies on: what is refused is never paid, a budget holds under 100
// concurrent calls, an invoice is never paid twice, a failed payment leaves
// the budget as it was.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { encodeInvoice } from 'l402-paywall/lightning';
import { Keyring, mintToken } from 'l402-paywall';
import { createBudget, createTokenStore, devWallet, fetchWithL402, getL402Receipt, L402ClientError, type TokenStore } from 'l402-paywall/client';
import { useDevServer } from '../support/server.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import {
  apertureStandIn,
  recordingWallet,
  startExpressApp,
  startHonoApp,
  startStandIn,
  type RecordingWallet,
  type StandIn,
} from '../../packages/l402-paywall/tests/support/paid-apps.js';

const server = useDevServer();
const node = createDevNode();
let wallet: RecordingWallet;
let tokens: TokenStore;
let expressApp: Awaited<ReturnType<typeof startExpressApp>>;
let honoApp: Awaited<ReturnType<typeof startHonoApp>>;
let standIn: StandIn;

beforeAll(async () => {
  // The demo logs its payment to the in-process database: opened (and migrated) here, not in the middle of a test.
  await server.ctx.database();
  [expressApp, honoApp, standIn] = await Promise.all([startExpressApp(node), startHonoApp(node), startStandIn()]);
});
afterAll(async () => {
  await Promise.all([expressApp?.close(), honoApp?.close(), standIn?.close()]);
});
beforeEach(() => {
  wallet = recordingWallet(node);
  tokens = createTokenStore();
  standIn.requests.length = 0;
});

/** The error a call rejects with, checked to be an L402ClientError. */
async function refusal(work: Promise<unknown>): Promise<L402ClientError> {
  const error = await work.then(
    () => expect.fail('expected the call to be refused'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(L402ClientError);
  return error as L402ClientError;
}

const hex32 = () => randomBytes(32).toString('hex');
/** A real, signed BOLT11 invoice from some node, with what the test needs changed. */
function invoiceWith(fields: { network?: 'bitcoin' | 'regtest'; amountMsat?: number; timestamp?: number; expirySeconds?: number }) {
  return encodeInvoice(
    {
      network: fields.network ?? 'regtest',
      ...('amountMsat' in fields ? (fields.amountMsat === undefined ? {} : { amountMsat: fields.amountMsat }) : { amountMsat: 1000 }),
      timestamp: fields.timestamp ?? Math.floor(Date.now() / 1000),
      expirySeconds: fields.expirySeconds ?? 600,
      paymentHash: hex32(),
      paymentSecret: hex32(),
      description: 'scripted',
    },
    hex32(),
  );
}
/** The same invoice with its last bech32 character changed: the checksum no longer matches. */
const breakChecksum = (invoice: string) => invoice.slice(0, -1) + (invoice.endsWith('q') ? 'p' : 'q');
const challengeWith = (invoice: string) => ({
  status: 402,
  headers: [['WWW-Authenticate', `L402 macaroon="bWFj", invoice="${invoice}"`]] as [string, string][],
});

describe('pays on first try', () => {
  it("this project's demo, through the real local server and its dev wallet", async () => {
    const response = await fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, {
      wallet: devWallet({ serviceUrl: server.url }),
      maxPriceSats: 5,
      tokens,
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { usd: number; source: string };
    expect(body.source).toBe('simulated');
    expect(getL402Receipt(response)).toMatchObject({ amountMsat: 1000, feeMsat: 0, paidByThisCall: true, host: new URL(server.url).host });
  });

  it("the demo through a fetch that keeps a tee()'d copy of each answer (Next.js's fetch inside route handlers)", async () => {
    // Next.js shares GET answers within a request this way (createDedupeFetch): the caller gets one
    // branch, Next keeps the other unread. Cancelling the caller's branch then never settles, so a
    // client that waited for it after the 402 hung there, before paying.
    const kept: ReadableStream<Uint8Array>[] = [];
    const teeingFetch = async (input: string | URL | Request, init?: RequestInit) => {
      const answer = await fetch(input, init);
      if (!answer.body) return answer;
      const [handedOut, keptBranch] = answer.body.tee();
      kept.push(keptBranch);
      return new Response(handedOut, { status: answer.status, statusText: answer.statusText, headers: answer.headers });
    };
    const call = fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, {
      wallet: devWallet({ serviceUrl: server.url }),
      maxPriceSats: 5,
      tokens: false,
      fetch: teeingFetch,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const stuck = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('fetchWithL402 did not settle within 5 s')), 5_000)));
    try {
      const response = await Promise.race([call, stuck]);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { source: string }).source).toBe('simulated');
      expect(getL402Receipt(response)).toMatchObject({ amountMsat: 1000, paidByThisCall: true });
      expect(kept).toHaveLength(2); // the 402 and the paid answer
    } finally {
      clearTimeout(timer);
      await Promise.all(kept.map((branch) => branch.cancel()));
    }
  });

  it('an Express app using l402Middleware, GET and a POST whose body goes out again on the retry', async () => {
    const got = await fetchWithL402(`${expressApp.url}/paid`, undefined, { wallet, maxPriceSats: 2, tokens });
    expect(got.status).toBe(200);
    expect(await got.json()).toEqual({ app: 'express', ok: true });
    const posted = await fetchWithL402(
      `${expressApp.url}/echo`,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ question: 42 }) },
      { wallet, maxPriceSats: 2, tokens },
    );
    expect(await posted.json()).toEqual({ app: 'express', echo: { question: 42 } });
    const request = new Request(`${expressApp.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ as: 'Request' }),
    });
    expect(await (await fetchWithL402(request, undefined, { wallet, maxPriceSats: 2, tokens })).json()).toEqual({ app: 'express', echo: { as: 'Request' } });
    expect(wallet.invoices).toHaveLength(3);
  });

  it('a Hono app using withL402', async () => {
    const response = await fetchWithL402(`${honoApp.url}/paid`, undefined, { wallet, maxPriceSats: 1, tokens });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ app: 'hono', path: '/paid' });
    expect(wallet.invoices).toHaveLength(1);
  });

  it('an Aperture-style server (LSAT and L402 fields, opaque base64 macaroon), then reuses its token without paying again', async () => {
    const aperture = apertureStandIn(node, 3);
    standIn.respond = (req) => aperture.respond(req);
    const first = await fetchWithL402(`${standIn.url}/aperture`, undefined, { wallet, maxPriceSats: 3, tokens });
    expect(first.status).toBe(200);
    expect(await first.text()).toBe('aperture served');
    expect(standIn.requests[1]!.headers.authorization).toMatch(/^L402 [A-Za-z0-9+/=]+:[0-9a-f]{64}$/);
    const second = await fetchWithL402(`${standIn.url}/aperture`, undefined, { wallet, maxPriceSats: 3, tokens });
    expect(await second.text()).toBe('aperture served');
    expect(getL402Receipt(second)).toBeUndefined();
    expect(wallet.invoices).toHaveLength(1);
    expect(aperture.served).toBe(2);
  });

  it('answers an LSAT-only challenge with the LSAT scheme', async () => {
    const { invoice, paymentHash } = await node.createInvoice({ amountMsat: 1000 });
    standIn.respond = (req) =>
      req.headers.authorization
        ? { status: 200, body: req.headers.authorization.split(' ')[0] }
        : { status: 402, headers: [['WWW-Authenticate', `LSAT macaroon="bWFjYXJvb24=", invoice="${invoice}"`]] };
    const response = await fetchWithL402(`${standIn.url}/lsat`, undefined, { wallet, maxPriceSats: 1, tokens: false });
    expect(await response.text()).toBe('LSAT');
    expect(getL402Receipt(response)?.paymentHash).toBe(paymentHash);
  });

  it('pays an L402 challenge sent with 401 (what the spec says for an invalid credential)', async () => {
    const { invoice } = await node.createInvoice({ amountMsat: 1000 });
    standIn.respond = (req) =>
      req.headers.authorization
        ? { status: 200, body: 'after 401' }
        : { status: 401, headers: [['WWW-Authenticate', `L402 token="dG9r", invoice="${invoice}"`]] };
    expect(await (await fetchWithL402(`${standIn.url}/401`, undefined, { wallet, maxPriceSats: 1, tokens: false })).text()).toBe('after 401');
    standIn.respond = () => ({ status: 401, headers: [['WWW-Authenticate', 'Bearer realm="api"']], body: 'login' });
    expect((await fetchWithL402(`${standIn.url}/401`, undefined, { wallet, maxPriceSats: 1, tokens: false })).status).toBe(401);
    expect(wallet.invoices).toEqual([invoice]);
  });

  it('passes free answers and 402s without an L402 challenge through untouched, paying nothing', async () => {
    standIn.respond = () => ({ status: 200, body: 'free' });
    expect(await (await fetchWithL402(`${standIn.url}/free`, undefined, { wallet, maxPriceSats: 1 })).text()).toBe('free');
    standIn.respond = () => ({
      status: 402,
      headers: [
        ['WWW-Authenticate', 'Bearer realm="x"'],
        ['PAYMENT-REQUIRED', 'e30='],
      ],
      body: 'x402',
    });
    const other = await fetchWithL402(`${standIn.url}/x402`, undefined, { wallet, maxPriceSats: 1 });
    expect(other.status).toBe(402);
    expect(await other.text()).toBe('x402');
    expect(wallet.invoices).toEqual([]);
  });
});

describe('never pays what it refuses', () => {
  it('refuses an invoice above maxPriceSats, whatever the server claims elsewhere', async () => {
    const error = await refusal(fetchWithL402(`${honoApp.url}/dear`, undefined, { wallet, maxPriceSats: 49, tokens }));
    expect(error.code).toBe('PRICE_ABOVE_MAXIMUM');
    expect(error.refused).toBe(true);
    expect(error.details).toMatchObject({ amountMsat: 50_000, maxPriceMsat: 49_000 });
    // The server's JSON body says 1 sat; the invoice is what counts.
    const lie = invoiceWith({ amountMsat: 21_000 });
    standIn.respond = () => ({
      ...challengeWith(lie),
      headers: [...challengeWith(lie).headers, ['content-type', 'application/json']],
      body: JSON.stringify({ priceSats: 1, invoice: lie }),
    });
    expect((await refusal(fetchWithL402(`${standIn.url}/lie`, undefined, { wallet, maxPriceSats: 20 }))).code).toBe('PRICE_ABOVE_MAXIMUM');
    expect(wallet.invoices).toEqual([]);
  });

  it.each([
    ['WRONG_NETWORK', () => invoiceWith({ network: 'bitcoin' })],
    ['INVOICE_EXPIRED', () => invoiceWith({ timestamp: Math.floor(Date.now() / 1000) - 700, expirySeconds: 600 })],
    ['INVOICE_WITHOUT_AMOUNT', () => invoiceWith({ amountMsat: undefined })],
    ['INVOICE_INVALID', () => breakChecksum(invoiceWith({}))],
    ['INVOICE_INVALID', () => 'lnbcrt10n1notaninvoice'],
  ])('refuses %s without paying', async (code, invoice) => {
    standIn.respond = () => challengeWith(invoice());
    const budget = createBudget({ totalSats: 100 });
    const error = await refusal(fetchWithL402(`${standIn.url}/bad`, undefined, { wallet, maxPriceSats: 100, budget }));
    expect(error.code).toBe(code);
    expect(wallet.invoices).toEqual([]);
    expect(budget.spent().totalMsat).toBe(0);
    expect(standIn.requests).toHaveLength(1); // no retry either
  });

  it("refuses a challenge whose token (this project's format) names another payment than its invoice", async () => {
    const { invoice } = await node.createInvoice({ amountMsat: 1000 });
    const token = mintToken(new Keyring(['stand-in-secret-0123456789abcdef0123456789']), {
      paymentHash: hex32(),
      expiresAt: Math.floor(Date.now() / 1000) + 600,
      caveats: {},
    });
    standIn.respond = () => ({ status: 402, headers: [['WWW-Authenticate', `L402 ${token}, invoice="${invoice}"`]] });
    expect((await refusal(fetchWithL402(`${standIn.url}/mismatch`, undefined, { wallet, maxPriceSats: 1 }))).code).toBe('TOKEN_INVOICE_MISMATCH');
    expect(wallet.invoices).toEqual([]);
  });

  it('pays the cheapest acceptable one of several challenges', async () => {
    const cheap = await node.createInvoice({ amountMsat: 1000 });
    const dear = await node.createInvoice({ amountMsat: 5000 });
    standIn.respond = (req) =>
      req.headers.authorization
        ? { status: 200, body: req.headers.authorization.split(' ')[1]!.split(':')[0] }
        : {
            status: 402,
            headers: [
              [
                'WWW-Authenticate',
                `L402 macaroon="ZGVhcg==", invoice="${dear.invoice}", L402 macaroon="Y2hlYXA=", invoice="${cheap.invoice}", L402 token="d3Jvbmc=", invoice="${invoiceWith({ network: 'bitcoin' })}"`,
              ],
            ],
          };
    const response = await fetchWithL402(`${standIn.url}/several`, undefined, { wallet, maxPriceSats: 10, tokens: false });
    expect(await response.text()).toBe('Y2hlYXA=');
    expect(wallet.invoices).toEqual([cheap.invoice]);
  });
});

describe('budget', () => {
  it('100 concurrent 1-sat calls against a 10-sat budget pay exactly 10 times', async () => {
    const budget = createBudget({ totalSats: 10 });
    const results = await Promise.allSettled(
      Array.from({ length: 100 }, () => fetchWithL402(`${honoApp.url}/paid`, undefined, { wallet, maxPriceSats: 1, budget, tokens: false })),
    );
    const served = results.filter((r) => r.status === 'fulfilled' && r.value.status === 200);
    const other = results.filter(
      (r) => !(r.status === 'fulfilled' && r.value.status === 200) && !(r.status === 'rejected' && (r.reason as L402ClientError).code === 'BUDGET_EXCEEDED'),
    );
    expect(other.map((r) => (r.status === 'rejected' ? String(r.reason) : r.value.status))).toEqual([]);
    const refused = results.filter((r) => r.status === 'rejected' && (r.reason as L402ClientError).code === 'BUDGET_EXCEEDED');
    expect(served).toHaveLength(10);
    expect(refused).toHaveLength(90);
    expect(wallet.invoices).toHaveLength(10);
    expect(budget.spent()).toEqual({ totalMsat: 10_000, totalSats: 10, byHost: { [new URL(honoApp.url).host]: { msat: 10_000, sats: 10 } } });
  }, 60_000);

  it('holds per host', async () => {
    const budget = createBudget({ totalSats: 100, perHostSats: 2 });
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => fetchWithL402(`${honoApp.url}/paid`, undefined, { wallet, maxPriceSats: 1, budget, tokens: false })),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    expect(budget.spent().totalSats).toBe(2);
  });

  it('a failed payment leaves the budget as it was, and a later call may pay', async () => {
    const budget = createBudget({ totalSats: 1 });
    wallet.failing = true;
    const error = await refusal(fetchWithL402(`${honoApp.url}/paid`, undefined, { wallet, maxPriceSats: 1, budget, tokens: false }));
    expect(error.code).toBe('PAYMENT_FAILED');
    expect(error.refused).toBe(false);
    expect(budget.spent().totalMsat).toBe(0);
    expect(budget.remainingMsat()).toBe(1000);
    wallet.failing = false;
    expect((await fetchWithL402(`${honoApp.url}/paid`, undefined, { wallet, maxPriceSats: 1, budget, tokens: false })).status).toBe(200);
    expect(budget.spent().totalMsat).toBe(1000);
  });

  it('the dev wallet with nothing listening at its URL surely did not pay: PAYMENT_FAILED, the budget given back', async () => {
    const budget = createBudget({ totalSats: 2 });
    const nobody = devWallet({ serviceUrl: `http://127.0.0.1:${await closedPort()}` });
    const error = await refusal(fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, { wallet: nobody, maxPriceSats: 2, budget, tokens: false }));
    expect(error.code).toBe('PAYMENT_FAILED');
    expect((error.cause as { code?: string }).code).toBe('DEV_WALLET_UNREACHABLE');
    expect(error.message).toMatch(/\(ECONNREFUSED\), so nothing was paid/);
    expect(budget.remainingMsat()).toBe(2000);
    // The budget can still pay the call once the wallet is there.
    const paid = await fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, {
      wallet: devWallet({ serviceUrl: server.url }),
      maxPriceSats: 2,
      budget,
      tokens: false,
    });
    expect(paid.status).toBe(200);
  });

  it('a wallet that cannot tell whether it paid keeps the budget charged and the invoice is not paid again', async () => {
    const budget = createBudget({ totalSats: 5 });
    const { invoice } = await node.createInvoice({ amountMsat: 2000 });
    standIn.respond = () => challengeWith(invoice);
    let asked = 0;
    const unsure = {
      network: 'regtest' as const,
      payInvoice: async () => {
        asked++;
        throw Object.assign(new Error('timeout'), { outcomeUnknown: true });
      },
    };
    expect((await refusal(fetchWithL402(`${standIn.url}/unsure`, undefined, { wallet: unsure, maxPriceSats: 5, budget }))).code).toBe(
      'PAYMENT_OUTCOME_UNKNOWN',
    );
    expect((await refusal(fetchWithL402(`${standIn.url}/unsure`, undefined, { wallet: unsure, maxPriceSats: 5, budget }))).code).toBe(
      'PAYMENT_OUTCOME_UNKNOWN',
    );
    expect(asked).toBe(1);
    expect(budget.spent().totalMsat).toBe(2000);
  });
});

describe('one invoice, one payment', () => {
  it('20 calls racing on the same invoice pay it once and all use its preimage', async () => {
    const { invoice, paymentHash } = await node.createInvoice({ amountMsat: 1000 });
    standIn.respond = (req) => (req.headers.authorization ? { status: 200, body: 'ok' } : challengeWith(invoice));
    const budget = createBudget({ totalSats: 100 });
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => fetchWithL402(`${standIn.url}/same`, undefined, { wallet, maxPriceSats: 1, budget, tokens: false })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(20).fill(200));
    expect(wallet.invoices).toEqual([invoice]);
    expect(budget.spent().totalMsat).toBe(1000);
    expect(responses.filter((r) => getL402Receipt(r)?.paidByThisCall)).toHaveLength(1);
    expect(new Set(responses.map((r) => getL402Receipt(r)?.paymentHash))).toEqual(new Set([paymentHash]));
    // Later, the same invoice again: still not paid a second time.
    await fetchWithL402(`${standIn.url}/same`, undefined, { wallet, maxPriceSats: 1, tokens: false });
    expect(wallet.invoices).toHaveLength(1);
  });

  it("is one wallet's memory: a client with a wallet of its own is never handed another's proof, its wallet is asked", async () => {
    const { invoice } = await node.createInvoice({ amountMsat: 1000 });
    standIn.respond = (req) => (req.headers.authorization ? { status: 200, body: 'ok' } : challengeWith(invoice));
    const mine = await fetchWithL402(`${standIn.url}/same`, undefined, { wallet, maxPriceSats: 1, tokens: false });
    expect(mine.status).toBe(200);
    expect(getL402Receipt(mine)?.paidByThisCall).toBe(true);
    // Another client, its own wallet and budget: the invoice goes to its wallet, which the node refuses (paid already).
    const otherWallet = recordingWallet(node);
    const otherBudget = createBudget({ totalSats: 10 });
    const error = await refusal(fetchWithL402(`${standIn.url}/same`, undefined, { wallet: otherWallet, maxPriceSats: 1, budget: otherBudget, tokens: false }));
    expect(error.code).toBe('PAYMENT_FAILED');
    expect(otherWallet.invoices).toEqual([invoice]);
    expect(otherBudget.spent().totalMsat).toBe(0);
    expect(wallet.invoices).toEqual([invoice]);
  });

  it('never uses a preimage that does not hash to the payment hash', async () => {
    wallet.lyingPreimage = hex32();
    const budget = createBudget({ totalSats: 10 });
    const error = await refusal(fetchWithL402(`${expressApp.url}/paid`, undefined, { wallet, maxPriceSats: 2, budget, tokens }));
    expect(error.code).toBe('PREIMAGE_MISMATCH');
    expect(budget.spent().totalMsat).toBe(2000); // the wallet says it paid: that money is counted
  });
});

describe('a paid request the server could not serve: never paid twice', () => {
  const flaky = () => `${honoApp.url}/flaky`;
  beforeEach(() => {
    honoApp.flaky.failures = [];
    honoApp.flaky.reached = 0;
  });

  it('503 with a short Retry-After: waits, sends the same credential again, and is served; one payment', async () => {
    honoApp.flaky.failures = [{ status: 503, retryAfter: '1' }];
    const response = await fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens });
    expect(response.status).toBe(200);
    expect(honoApp.flaky.reached).toBe(2);
    expect(wallet.invoices).toHaveLength(1);
    expect(getL402Receipt(response)).toMatchObject({ paidByThisCall: true, amountMsat: 1000 });
    expect(tokens.get(flaky())).toBeUndefined(); // single use, now spent
  });

  it('a 500, or a 503 asking a longer wait than maxRetryAfterSeconds, is returned; the next call sends the kept credential and pays nothing', async () => {
    for (const failure of [{ status: 500 }, { status: 503, retryAfter: '30' }, { status: 503, retryAfter: '1' }]) {
      honoApp.flaky.failures = [failure];
      const paying = wallet.invoices.length;
      const failed = await fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens, maxRetryAfterSeconds: failure.retryAfter === '1' ? 0 : 10 });
      expect(failed.status).toBe(failure.status);
      expect(wallet.invoices).toHaveLength(paying + 1);
      expect(tokens.get(flaky())).toMatchObject({ usesLeft: 1 });
      const served = await fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens });
      expect(served.status).toBe(200);
      expect(getL402Receipt(served)).toBeUndefined(); // paid nothing
      expect(wallet.invoices).toHaveLength(paying + 1);
      expect(tokens.get(flaky())).toBeUndefined();
    }
  });

  it('gives up after two more tries, keeping the credential', async () => {
    honoApp.flaky.failures = Array(3).fill({ status: 503, retryAfter: '0' });
    const response = await fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens });
    expect(response.status).toBe(503);
    expect(honoApp.flaky.reached).toBe(3);
    expect(tokens.get(flaky())).toMatchObject({ usesLeft: 1 });
  });

  it('aborted while it waits: rejects with the reason, and the credential is kept for the next call', async () => {
    honoApp.flaky.failures = [{ status: 503, retryAfter: '5' }];
    const controller = new AbortController();
    const call = fetchWithL402(flaky(), { signal: controller.signal }, { wallet, maxPriceSats: 1, tokens });
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort(new Error('caller gave up'));
    await expect(call).rejects.toThrow('caller gave up');
    expect(tokens.get(flaky())).toMatchObject({ usesLeft: 1 });
    expect((await fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens })).status).toBe(200);
    expect(wallet.invoices).toHaveLength(1);
  });

  it('no answer to the paid request (connection refused): rejects, and the next call sends the kept credential', async () => {
    let cut = true;
    const flakyNetwork = (input: string | URL | Request, init?: RequestInit) => {
      const request = new Request(input, init);
      if (cut && request.headers.has('authorization')) {
        cut = false;
        return Promise.reject(new TypeError('fetch failed'));
      }
      return fetch(request);
    };
    await expect(fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens, fetch: flakyNetwork })).rejects.toThrow('fetch failed');
    expect(tokens.get(flaky())).toMatchObject({ usesLeft: 1 });
    expect((await fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens, fetch: flakyNetwork })).status).toBe(200);
    expect(wallet.invoices).toHaveLength(1);
  });

  it('refuses a maxRetryAfterSeconds that is not a number of seconds', async () => {
    for (const maxRetryAfterSeconds of [-1, Number.NaN, 3601]) {
      await expect(fetchWithL402(flaky(), undefined, { wallet, maxPriceSats: 1, tokens, maxRetryAfterSeconds })).rejects.toThrow(/maxRetryAfterSeconds/);
    }
  });
});

describe('tokens that buy several requests', () => {
  it('reuses a 3-use token twice, then pays again', async () => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetchWithL402(`${honoApp.url}/multi`, undefined, { wallet, maxPriceSats: 1, tokens })).status);
    expect(statuses).toEqual([200, 200, 200, 200]);
    expect(wallet.invoices).toHaveLength(2);
  });

  it("keeps a wallet's tokens for its own calls when none is named: a client with another wallet buys its own", async () => {
    const otherWallet = recordingWallet(node);
    const key = `${honoApp.url}/multi`;
    const call = async (payer: RecordingWallet) => expect((await fetchWithL402(key, undefined, { wallet: payer, maxPriceSats: 1 })).status).toBe(200);
    await call(wallet);
    await call(otherWallet);
    expect(otherWallet.invoices).toHaveLength(1); // not sent on the 3-use token the first wallet bought
    await call(wallet);
    await call(otherWallet);
    // The second call of each on its own token.
    expect(wallet.invoices).toHaveLength(1);
    expect(otherWallet.invoices).toHaveLength(1);
  });

  it('drops a token the server says is used (TOKEN_ALREADY_USED) and pays the fresh challenge in the same answer', async () => {
    await fetchWithL402(`${honoApp.url}/multi`, undefined, { wallet, maxPriceSats: 1, tokens });
    const key = `${honoApp.url}/multi`;
    const kept = tokens.get(key)!;
    const stale = { ...kept, usesLeft: Infinity };
    // Another client spends the remaining uses of the same token.
    for (let i = 0; i < 2; i++) expect((await fetch(key, { headers: { authorization: kept.authorization } })).status).toBe(200);
    tokens.set(key, stale);
    const response = await fetchWithL402(key, undefined, { wallet, maxPriceSats: 1, tokens });
    expect(response.status).toBe(200);
    expect(getL402Receipt(response)?.paidByThisCall).toBe(true);
    expect(tokens.get(key)?.authorization).not.toBe(stale.authorization);
    expect(wallet.invoices).toHaveLength(2);
  });
});
