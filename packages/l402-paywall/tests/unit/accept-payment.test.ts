// Accept-Payment (the MPP core draft): the header's grammar, the weight of a
// challenge under it, and the order of a real 402's WWW-Authenticate fields
// with and without it (L402, the charge and the session, from withL402's own
// assembly and the dev node).
import { describe, expect, it } from 'vitest';
import { createPaywall, type L402Options } from 'l402-paywall';
import { createDevNode } from 'l402-paywall/backends';
import { lightningSessions, memorySessionLedger } from 'l402-paywall/sessions';
import { parseAcceptPayment, rankByPreference, weightOf } from '../../src/core/accept-payment.js';

const SECRET = 'accept-payment-secret-0123456789abcdef0123456789ab';
const CHARGE = { method: 'lightning', intent: 'charge' };
const SESSION = { method: 'lightning', intent: 'session' };

describe('parseAcceptPayment', () => {
  it('reads ranges with q, wildcards and extension parameters', () => {
    expect(parseAcceptPayment('lightning/charge, lightning/session;q=0.5, */*;q=0, tempo/charge; foo=bar ;q=0.125')).toEqual([
      { method: 'lightning', intent: 'charge', q: 1, specificity: 2 },
      { method: 'lightning', intent: 'session', q: 0.5, specificity: 2 },
      { method: '*', intent: '*', q: 0, specificity: 0 },
      { method: 'tempo', intent: 'charge', q: 0.125, specificity: 2 },
    ]);
    expect(parseAcceptPayment('Lightning/*')).toEqual([{ method: 'lightning', intent: '*', q: 1, specificity: 1 }]);
  });

  it('ignores malformed elements and keeps the others; none left is no header', () => {
    const malformed = [
      'lightning',
      'lightning/charge/x',
      '/charge',
      'lightning/',
      'lightning/charge;q=1.5',
      'lightning/charge;q=0.1234',
      'lightning/charge;q',
      'lightning/charge;q=-1',
      'light ning/charge',
      'l\u00e9/charge',
      '',
    ];
    for (const element of malformed) expect(parseAcceptPayment(element), element).toBeUndefined();
    expect(parseAcceptPayment(`${malformed.join(', ')}, lightning/session;q=0.3`)).toEqual([
      { method: 'lightning', intent: 'session', q: 0.3, specificity: 2 },
    ]);
    expect(parseAcceptPayment(null)).toBeUndefined();
    expect(parseAcceptPayment(`lightning/charge,${' '.repeat(2000)}`)).toBeUndefined();
  });

  it('weighs by the most specific matching range, then by q, then by the first', () => {
    const ranges = parseAcceptPayment('lightning/*;q=0.9, lightning/charge;q=0, */*;q=0.2')!;
    expect(weightOf(CHARGE, ranges)).toBe(0);
    expect(weightOf(SESSION, ranges)).toBe(0.9);
    expect(weightOf({ method: 'tempo', intent: 'charge' }, ranges)).toBe(0.2);
    expect(weightOf(CHARGE, parseAcceptPayment('*/charge;q=0.4, lightning/*;q=0.3')!)).toBe(0.4);
    expect(weightOf(CHARGE, parseAcceptPayment('tempo/charge')!)).toBe(0);
  });

  it('ranks what is taken by weight, ties in the server order, refused ones out', () => {
    const offers = ['charge', 'session', 'other'].map((intent) => ({ method: 'lightning', intent }));
    const rank = (header: string) => rankByPreference(offers, (offer) => offer, parseAcceptPayment(header)!).map((offer) => offer.intent);
    expect(rank('lightning/session, lightning/charge;q=0.5')).toEqual(['session', 'charge']);
    expect(rank('lightning/*')).toEqual(['charge', 'session', 'other']);
    expect(rank('lightning/*, lightning/charge;q=0')).toEqual(['session', 'other']);
    expect(rank('lightning/other;q=0.7, lightning/*;q=0.7')).toEqual(['charge', 'session', 'other']);
  });
});

/** The scheme of each WWW-Authenticate field of a 402, with the Payment intent: `L402`, `Payment/charge`. */
async function challengeOrder(options: Partial<L402Options>, headers: Record<string, string> = {}): Promise<string[]> {
  const paywall = createPaywall({ priceSats: 5, provider: createDevNode(), secret: SECRET, realm: 'shop.example', onError: () => {}, ...options });
  const decision = await paywall.decide(new Request('http://shop.example/paid', { headers }));
  if (decision.kind !== 'refused') throw new Error(`expected a 402, got ${decision.kind}`);
  expect(decision.status).toBe(402);
  return decision.headers
    .filter(([name]) => name.toLowerCase() === 'www-authenticate')
    .map(([, value]) => {
      const scheme = value.slice(0, value.indexOf(' '));
      return scheme === 'Payment' ? `Payment/${/intent="([^"]+)"/.exec(value)![1]}` : scheme;
    });
}

describe('the order of a 402 challenges', () => {
  const withSession = () => ({ session: lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() }) });
  const l402Family = (order: string[]) => order.filter((scheme) => !scheme.startsWith('Payment/'));

  it('without Accept-Payment: the L402 family first, then the charge, then the session, each in its own field', async () => {
    const order = await challengeOrder(withSession());
    expect(order[0]).not.toMatch(/^Payment/);
    const first = order.findIndex((scheme) => scheme.startsWith('Payment/'));
    expect(order.slice(first)).toEqual(['Payment/charge', 'Payment/session']);
    expect(l402Family(order).length).toBe(first);
  });

  it('with Accept-Payment: lightning/*: the Payment challenges first in the server order, then the L402 family', async () => {
    const order = await challengeOrder(withSession(), { 'accept-payment': 'lightning/*' });
    expect(order.slice(0, 2)).toEqual(['Payment/charge', 'Payment/session']);
    expect(order.slice(2)).toEqual(l402Family(await challengeOrder(withSession())));
  });

  it('ordered by q; a refused intent is left out, with its body members', async () => {
    const order = await challengeOrder(withSession(), { 'accept-payment': 'lightning/session, lightning/charge;q=0.5' });
    expect(order.slice(0, 2)).toEqual(['Payment/session', 'Payment/charge']);
    const paywall = createPaywall({ priceSats: 5, provider: createDevNode(), secret: SECRET, onError: () => {}, ...withSession() });
    const decision = await paywall.decide(
      new Request('http://shop.example/paid', { headers: { 'accept-payment': 'lightning/charge, lightning/session;q=0' } }),
    );
    if (decision.kind !== 'refused') throw new Error('expected a 402');
    const fields = decision.headers.filter(([name]) => name === 'WWW-Authenticate').map(([, value]) => value);
    expect(fields[0]).toMatch(/^Payment .*intent="charge"/);
    expect(fields.some((value) => value.includes('intent="session"'))).toBe(false);
    expect(decision.body.session).toBeUndefined();
    expect(decision.body.challengeId).toEqual(expect.any(String));
  });

  it('a header whose elements are all malformed is ignored: the server order', async () => {
    expect(await challengeOrder({}, { 'accept-payment': 'lightning, charge;q=2' })).toEqual(await challengeOrder({}));
  });

  it('a header refusing every Payment challenge leaves the L402 family alone', async () => {
    const order = await challengeOrder({}, { 'accept-payment': 'tempo/charge' });
    expect(order.length).toBeGreaterThan(0);
    expect(order.every((scheme) => !scheme.startsWith('Payment/'))).toBe(true);
  });

  it('a preference that would leave no challenge at all is not honoured (a Payment-only route)', async () => {
    expect(await challengeOrder({ schemes: { l402: false } }, { 'accept-payment': 'tempo/charge' })).toEqual(['Payment/charge']);
  });

  it('a refused Payment credential is answered with the Payment challenges first', async () => {
    const order = await challengeOrder(withSession(), { authorization: 'Payment dGhpcyBpcyBnYXJiYWdl' });
    expect(order.slice(0, 2)).toEqual(['Payment/charge', 'Payment/session']);
    expect(order.slice(2)).toEqual(l402Family(await challengeOrder(withSession())));
  });
});
