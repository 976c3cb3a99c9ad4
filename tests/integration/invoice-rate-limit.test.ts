// Every route that makes an invoice shares one per-client budget
// (INVOICE_RATE_LIMIT_PER_MINUTE): POST /api/invoice, GET /api/dev-token, each
// 402 of GET /api/demo/btc-price (one request, two invoices: the charge's and
// the session deposit's) and the LNURL-pay callback. Above it: 429
// RATE_LIMITED with Retry-After, and no invoice is made. Through the real
// local server on real PostgreSQL and real Redis (the limiter's counters).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChallengeBody } from '../support/server.js';
import { stackSkipReason, useStack } from '../support/stack.js';
import { startWellInsideMinute, useRealClock } from '../support/clock-minute.js';

const skip = await stackSkipReason();
const LIMIT = 4;

describe.skipIf(skip !== undefined)(`invoice rate limit per client (local server, PostgreSQL, Redis)${skip ? ` [SKIPPED: ${skip}]` : ''}`, () => {
  const stack = useStack(() => ({ INVOICE_RATE_LIMIT_PER_MINUTE: String(LIMIT), LNURLP_USERNAMES: 'tips' }));

  const makers: Record<string, () => Promise<Response>> = {
    'GET /api/demo/btc-price': () => fetch(`${stack.url}/api/demo/btc-price`),
    'GET /api/lnurlp/tips?amount=': () => fetch(`${stack.url}/api/lnurlp/tips?amount=5000`),
    'POST /api/invoice': () =>
      fetch(`${stack.url}/api/invoice`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ amountSats: 2 }) }),
    'GET /api/dev-token': () => fetch(`${stack.url}/api/dev-token?address=pro@example.com`),
  };

  /** How many invoices the dev node has made (it keeps each in the key-value store, here Redis). */
  async function invoicesMade(): Promise<number> {
    let cursor = '0';
    let n = 0;
    do {
      const [next, keys] = await stack.redis.scan(cursor, 'MATCH', '*', 'COUNT', 1000);
      cursor = next;
      n += keys.filter((key) => /invoice/i.test(key) && !/ratelimit|demo:invoice/.test(key)).length;
    } while (cursor !== '0');
    return n;
  }

  let paidDemo: { macaroon: string; preimage: string };
  // The limiter's window is a minute: start well inside one so the count below is exact.
  beforeAll(() => void startWellInsideMinute(45_000));
  afterAll(useRealClock);

  it(`the ${LIMIT + 1}th invoice of a client within a minute is refused on every route with 429 and Retry-After`, async () => {
    const before = await invoicesMade();
    // One demo challenge, paid below: a paid request must still be served once the budget is spent.
    const demo = await makers['GET /api/demo/btc-price']!();
    expect(demo.status).toBe(402);
    const challenge = (await demo.json()) as ChallengeBody;
    const pay = await fetch(`${stack.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: challenge.invoice }),
    });
    paidDemo = { macaroon: challenge.macaroon, preimage: ((await pay.json()) as { preimage: string }).preimage };

    expect((await makers['GET /api/lnurlp/tips?amount=']!()).status).toBe(200);
    expect((await makers['POST /api/invoice']!()).status).toBe(200);
    expect((await makers['GET /api/dev-token']!()).status).toBe(200);
    // The demo's 402 made two: the charge's invoice and the session's deposit.
    expect(await invoicesMade()).toBe(before + LIMIT + 1);

    for (const [name, make] of Object.entries(makers)) {
      const response = await make();
      const body = (await response.json()) as { code: string; error: string; retryAfter: number; status?: string };
      expect(response.status, `${name}: ${JSON.stringify(body)}`).toBe(429);
      expect(body.code).toBe('RATE_LIMITED');
      const retryAfter = Number(response.headers.get('retry-after'));
      expect(retryAfter, name).toBeGreaterThanOrEqual(1);
      expect(retryAfter, name).toBeLessThanOrEqual(60);
      expect(body.retryAfter).toBe(retryAfter);
      expect(response.headers.get('www-authenticate'), name).toBeNull(); // no challenge, no invoice
      if (name.includes('lnurlp')) expect(body).toMatchObject({ status: 'ERROR', reason: body.error }); // LUD-06 payers read these
    }
    expect(await invoicesMade()).toBe(before + LIMIT + 1);
  });

  it('a paid request is served whatever the budget: the limit is on making invoices, not on using them', async () => {
    const served = await fetch(`${stack.url}/api/demo/btc-price`, { headers: { authorization: `L402 ${paidDemo.macaroon}:${paidDemo.preimage}` } });
    expect(served.status).toBe(200);
    expect(await served.json()).toMatchObject({ usd: expect.any(Number), source: 'simulated' });
  });

  it('the LNURL-pay metadata step makes no invoice and is not limited', async () => {
    const response = await fetch(`${stack.url}/api/lnurlp/tips`);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ tag: 'payRequest' });
  });
});
