// Lightning charge challenges: what the server writes, and reading Payment
// challenges out of WWW-Authenticate the way servers send them, hostile ones
// included.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BindingKeyring,
  MAX_AUTHENTICATE_LENGTH,
  MAX_PAYMENT_CHALLENGES,
  formatChallenge,
  lightningChargeChallenge,
  parsePaymentChallenges,
  readLightningCharge,
  type PaymentChallenge,
} from '../../src/mpp.js';
import { PaymentChallengeSchema } from '../../src/schemes/payment/challenge.js';
import { encodeJson } from '../../src/schemes/payment/wire.js';
import { anyText, chargeFixture, ISSUED_AT, LIFETIME_SECONDS, MPP_SECRET, requestOf } from '../support/mpp.js';

describe('lightningChargeChallenge', () => {
  it('binds a JCS request, the expiry and the binding fields under the newest key', () => {
    const { challenge, invoice, paymentHash, ring } = chargeFixture();
    expect(challenge).toEqual({
      id: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      realm: 'api.example.com',
      method: 'lightning',
      intent: 'charge',
      request: encodeJson({ amount: '21', currency: 'sat', description: 'Weather for 94107', methodDetails: { invoice, paymentHash, network: 'regtest' } }),
      expires: new Date((ISSUED_AT + LIFETIME_SECONDS) * 1000).toISOString().replace('.000Z', 'Z'),
      opaque: encodeJson({ owner: 'alice@example.com', route: '/weather' }),
    });
    const { id, ...bound } = challenge;
    expect(ring.verify(id, bound)).toBe(true);
  });

  it('leaves out opaque when nothing is bound, and writes the payment hash lower-case', () => {
    const { challenge, paymentHash } = chargeFixture(undefined, { binding: {}, paymentHash: undefined });
    expect(challenge.opaque).toBeUndefined();
    const upper = chargeFixture(undefined, { paymentHash: 'AB'.repeat(32) });
    expect(requestOf(upper.challenge).methodDetails.paymentHash).toBe('ab'.repeat(32));
    expect(paymentHash).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses options that cannot make a valid challenge', () => {
    const ring = BindingKeyring.fromSecrets(MPP_SECRET);
    const good = chargeFixture(ring);
    const base = {
      realm: 'api.example.com',
      invoice: good.invoice,
      paymentHash: good.paymentHash,
      amountSats: 21,
      network: 'regtest' as const,
      expires: new Date(ISSUED_AT * 1000),
    };
    expect(() => lightningChargeChallenge(ring, base)).not.toThrow();
    for (const [what, change] of [
      ['realm with |', { realm: 'a|b' }],
      ['realm with a newline', { realm: 'a\nb' }],
      ['non-ASCII realm', { realm: 'ápi' }],
      ['zero amount', { amountSats: 0 }],
      ['fractional amount', { amountSats: 1.5 }],
      ['amount too large for msat', { amountSats: 2 ** 50 }],
      ['testnet', { network: 'testnet' }],
      ['short payment hash', { paymentHash: 'ab' }],
      ['not an invoice', { invoice: 'hello world' }],
      ['invalid date', { expires: new Date(Number.NaN) }],
      ['a binding name that is not caveat-like', { binding: { Route: '/x' } }],
      ['a binding value that is not a string', { binding: { route: 1 } }],
      ['a description longer than BOLT 11 takes', { description: 'x'.repeat(640) }],
    ] as const) {
      expect(() => lightningChargeChallenge(ring, { ...base, ...change } as never), what).toThrow(TypeError);
    }
  });
});

describe('formatChallenge', () => {
  it('writes every parameter as a quoted-string, in the drafts’ order', () => {
    const { challenge, header } = chargeFixture();
    expect(header).toBe(
      `Payment id="${challenge.id}", realm="api.example.com", method="lightning", intent="charge", request="${challenge.request}", expires="${challenge.expires}", opaque="${challenge.opaque}"`,
    );
  });

  it('escapes quotes and backslashes, and refuses what a header cannot carry', () => {
    const challenge: PaymentChallenge = { id: 'x', realm: 'say "hi" \\o/', method: 'lightning', intent: 'charge', request: 'e30' };
    expect(formatChallenge(challenge)).toBe('Payment id="x", realm="say \\"hi\\" \\\\o/", method="lightning", intent="charge", request="e30"');
    expect(parsePaymentChallenges(formatChallenge(challenge)).challenges).toEqual([challenge]);
    for (const realm of ['a\r\nSet-Cookie: x=1', 'é', '\u0000'])
      expect(() => formatChallenge({ ...challenge, realm }), JSON.stringify(realm)).toThrow(TypeError);
  });
});

describe('parsePaymentChallenges', () => {
  const { challenge, header } = chargeFixture();

  it('reads back what formatChallenge writes', () => {
    expect(parsePaymentChallenges(header)).toEqual({ challenges: [challenge], refusals: [] });
  });

  it('finds Payment challenges among other schemes, in one value or several', () => {
    const l402 = 'L402 macaroon="abc", invoice="lnbc1"';
    expect(parsePaymentChallenges(`Basic realm="x", ${header}, Bearer error="invalid_token", ${l402}`).challenges).toEqual([challenge]);
    expect(parsePaymentChallenges([l402, header, header.replace('Payment', 'payment')]).challenges).toEqual([challenge, challenge]);
    expect(parsePaymentChallenges(`${header}, ${header}`).challenges).toEqual([challenge, challenge]);
  });

  it('takes token values, spacing around "=", escapes inside quotes, and ignores unknown parameters', () => {
    const text = `Payment  id=abc , realm = "r \\"q\\" \\\\ r", method=lightning, intent="charge", header="X-Pay", request="${challenge.request}", foo=bar, expires="2030-01-01T00:00:00Z"`;
    expect(parsePaymentChallenges(text)).toEqual({
      challenges: [{ id: 'abc', realm: 'r "q" \\ r', method: 'lightning', intent: 'charge', request: challenge.request, expires: '2030-01-01T00:00:00Z' }],
      refusals: [],
    });
  });

  it('refuses, with a reason, challenges the schema does not take', () => {
    for (const [what, text] of [
      ['no id', 'Payment realm="r", method="lightning", intent="charge", request="e30"'],
      ['an empty id', 'Payment id="", realm="r", method="lightning", intent="charge", request="e30"'],
      ['no request', 'Payment id="a", realm="r", method="lightning", intent="charge"'],
      ['a method in capitals', 'Payment id="a", realm="r", method="Lightning", intent="charge", request="e30"'],
      ['a request that is not base64url', 'Payment id="a", realm="r", method="lightning", intent="charge", request="{}"'],
      ['an expiry that is not RFC 3339', 'Payment id="a", realm="r", method="lightning", intent="charge", request="e30", expires="tomorrow"'],
      ['a token68', 'Payment eyJhIjoxfQ=='],
      ['an id too long', `Payment id="${'a'.repeat(257)}", realm="r", method="lightning", intent="charge", request="e30"`],
    ]) {
      const parsed = parsePaymentChallenges(text);
      expect(parsed.challenges, what).toEqual([]);
      expect(parsed.refusals, what).toEqual([{ reason: 'malformed', detail: expect.any(String) }]);
    }
  });

  it('reads no further than its bound', () => {
    const padding = `Other x="${'a'.repeat(MAX_AUTHENTICATE_LENGTH)}"`;
    expect(parsePaymentChallenges([padding, header])).toEqual({ challenges: [], refusals: [{ reason: 'too-long', detail: expect.any(String) }] });
    const many = parsePaymentChallenges(Array(MAX_PAYMENT_CHALLENGES + 5).fill(header));
    expect(many.challenges).toHaveLength(MAX_PAYMENT_CHALLENGES);
    expect(many.refusals).toEqual([{ reason: 'too-many', detail: expect.any(String) }]);
    // Thousands of bare schemes cost one refusal, not thousands of schema checks.
    expect(parsePaymentChallenges('Payment '.repeat(4000)).refusals).toHaveLength(MAX_PAYMENT_CHALLENGES + 1);
    expect(parsePaymentChallenges(null)).toEqual({ challenges: [], refusals: [] });
    expect(parsePaymentChallenges('')).toEqual({ challenges: [], refusals: [] });
  });

  it('never throws, and every challenge it answers is one the schema takes', () => {
    const piece = fc.oneof(
      fc.constantFrom(
        'Payment',
        'payment',
        'Bearer',
        'id',
        'realm',
        'method',
        'intent',
        'request',
        'expires',
        'opaque',
        '=',
        '"',
        '\\',
        ',',
        ' ',
        'lightning',
        'charge',
        'e30',
      ),
      fc.string({ maxLength: 20 }),
      anyText({ maxLength: 8 }),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 40 }), (pieces) => {
        const parsed = parsePaymentChallenges(pieces.join(''));
        for (const c of parsed.challenges) expect(PaymentChallengeSchema.safeParse(c).success).toBe(true);
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(anyText(), fc.nat(header.length), (noise, at) => {
        parsePaymentChallenges(header.slice(0, at) + noise + header.slice(at));
      }),
      { numRuns: 500 },
    );
  });
});

describe('readLightningCharge', () => {
  it('gives a payer what it needs to decide and pay', () => {
    const { challenge, invoice, paymentHash } = chargeFixture();
    expect(readLightningCharge(challenge)).toEqual({
      ok: true,
      charge: {
        challenge,
        amountSats: 21,
        invoice,
        paymentHash,
        network: 'regtest',
        description: 'Weather for 94107',
        expiresAt: ISSUED_AT + LIFETIME_SECONDS,
      },
    });
  });

  it('takes the draft defaults and ignores unknown request fields', () => {
    const request = encodeJson({ amount: '5', currency: 'sat', extra: { x: 1 }, methodDetails: { invoice: 'lnbc50n1xyz', future: true } });
    const read = readLightningCharge({ id: 'a', realm: 'r', method: 'lightning', intent: 'charge', request });
    expect(read).toEqual({ ok: true, charge: expect.objectContaining({ amountSats: 5, invoice: 'lnbc50n1xyz', network: 'mainnet' }) });
    expect(read.ok && 'paymentHash' in read.charge).toBe(false);
  });

  it('refuses other methods and requests that are not a Lightning charge', () => {
    const base = { id: 'a', realm: 'r', method: 'lightning', intent: 'charge' };
    const request = (value: unknown) => ({ ...base, request: encodeJson(value) });
    const invoice = { invoice: 'lnbc50n1xyz' };
    for (const [what, challenge] of [
      ['tempo', { ...request({ amount: '5', currency: 'sat', methodDetails: invoice }), method: 'tempo' }],
      ['session', { ...request({ amount: '5', currency: 'sat', methodDetails: invoice }), intent: 'session' }],
      ['BTC', request({ amount: '5', currency: 'BTC', methodDetails: invoice })],
      ['a number amount', request({ amount: 5, currency: 'sat', methodDetails: invoice })],
      ['a zero amount', request({ amount: '0', currency: 'sat', methodDetails: invoice })],
      ['a leading zero', request({ amount: '05', currency: 'sat', methodDetails: invoice })],
      ['no invoice', request({ amount: '5', currency: 'sat', methodDetails: {} })],
      ['testnet', request({ amount: '5', currency: 'sat', methodDetails: { ...invoice, network: 'testnet' } })],
      ['an upper-case hash', request({ amount: '5', currency: 'sat', methodDetails: { ...invoice, paymentHash: 'AB'.repeat(32) } })],
      ['an array', request([1])],
      ['not JSON', { ...base, request: 'bm90IGpzb24' }],
    ] as const) {
      expect(readLightningCharge(challenge as PaymentChallenge), what).toEqual({ ok: false, detail: expect.any(String) });
    }
  });
});
