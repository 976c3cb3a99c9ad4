// The paywall verifies a Payment charge in one pass over the decoded
// credential (verifyChargeReading: the echoed request decoded once, its
// alphabet checked by that decode, a route's opaque reading kept). It must
// answer exactly as the two steps the codecs take (verifyCharge: read the
// credential with the schema's checks, then verify it): the same verified
// charge, and for every refusal the same problem and the same words, whatever
// the credential holds.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BindingKeyring, formatCredential, type PaymentChallenge } from '../../src/mpp.js';
import { verifyPaymentAuthorization } from '../../src/schemes/charge/charge-scheme.js';
import { readPaymentAuthorization, verifyCharge, verifyChargeReading } from '../../src/schemes/payment/charge.js';
import { encodeJson } from '../../src/schemes/payment/wire.js';
import { anyText, authorizationFor, chargeFixture, ISSUED_AT, LIFETIME_SECONDS, OTHER_SECRET } from '../support/mpp.js';

const NOW = ISSUED_AT + 1;

const onePass = (ring: BindingKeyring, authorization: string, now = NOW) => verifyChargeReading(ring, readPaymentAuthorization(authorization), now);
const twoSteps = (ring: BindingKeyring, authorization: string, now = NOW) => verifyCharge(ring, authorization, now);

function expectSame(ring: BindingKeyring, authorization: string, now = NOW) {
  const expected = twoSteps(ring, authorization, now);
  expect(onePass(ring, authorization, now), authorization.slice(0, 120)).toEqual(expected);
  return expected;
}

describe('verifyChargeReading answers as verifyCharge', () => {
  it('on the credential a payer sends, with and without opaque, and after its opaque reading was kept', () => {
    const { ring, credential } = chargeFixture();
    const first = expectSame(ring, credential);
    expect(first.ok).toBe(true);
    // The second time the opaque's reading is the kept one: the same answer, and the same fields.
    expect(onePass(ring, credential)).toEqual(first);
    const bare = chargeFixture(ring, { binding: undefined });
    expect(expectSame(ring, bare.credential)).toMatchObject({ ok: true, binding: {} });
  });

  it("on requests whose text only the schema's pattern or only the decode refuses, alone or with another method", () => {
    const { ring, challenge, preimage } = chargeFixture();
    const { request } = challenge;
    const texts = [
      `+${request.slice(1)}`, // base64, not base64url: the pattern refuses it, the decode would not
      `${request.slice(0, 30)}/${request.slice(31)}`,
      `${request.slice(0, 10)}=${request.slice(11)}`, // padding inside
      `${request}===`,
      request.length % 4 === 1 ? request.slice(0, -1) : `${request}${'A'.repeat((5 - (request.length % 4)) % 4)}`, // 1 digit past a group: the pattern takes it, the decode does not
      `${request}${request.length % 4 === 3 ? '==' : '='}`, // padding that does not complete the last group
      `${request.slice(0, 20)}.${request.slice(21)}`,
      '',
      'A',
      '==',
      'x'.repeat(9000),
    ];
    for (const text of texts) {
      for (const changes of [{}, { method: 'tempo' }, { intent: 'session' }, { opaque: `${challenge.opaque!}A` }]) {
        const result = expectSame(ring, formatCredential({ ...challenge, request: text, ...changes } as PaymentChallenge, preimage));
        expect(result.ok, `${text.length} ${text.slice(-12)} ${JSON.stringify(changes)}`).toBe(false);
      }
    }
  });

  it('on every refusal the codecs have: tampering, another server, expiry, wrong preimage, other intents', () => {
    const { ring, challenge, preimage } = chargeFixture();
    const other = chargeFixture(BindingKeyring.fromSecrets(OTHER_SECRET));
    const pad = (text: string) => text + '='.repeat((4 - (text.length % 4)) % 4);
    const credentials = [
      formatCredential({ ...challenge, opaque: encodeJson({ route: '/premium' }) }, preimage),
      formatCredential({ ...challenge, opaque: pad(challenge.opaque!) }, preimage),
      formatCredential({ ...challenge, request: pad(challenge.request) }, preimage),
      formatCredential({ ...challenge, opaque: `${challenge.opaque!}A` }, preimage),
      formatCredential({ ...challenge, opaque: undefined }, preimage),
      formatCredential({ ...challenge, expires: undefined }, preimage),
      formatCredential({ ...challenge, id: `${challenge.id.slice(0, -1)}B` }, preimage),
      formatCredential({ ...challenge, realm: 'a|b' }, preimage),
      formatCredential({ ...challenge, method: 'tempo' }, preimage),
      formatCredential(challenge, other.preimage),
      other.credential,
      authorizationFor({ challenge, payload: { preimage: preimage.toUpperCase() } }),
      authorizationFor({ challenge, payload: {} }),
      authorizationFor({ challenge }),
      authorizationFor(null),
      'Payment !!',
      'Payment',
      'Basic abc',
    ];
    for (const credential of credentials) expectSame(ring, credential);
    const valid = formatCredential(challenge, preimage);
    for (const now of [ISSUED_AT + LIFETIME_SECONDS - 1, ISSUED_AT + LIFETIME_SECONDS, ISSUED_AT + 10 * LIFETIME_SECONDS]) expectSame(ring, valid, now);
  });

  it('whatever a field of the echoed challenge holds, and whatever the header holds', () => {
    const { ring, challenge, preimage } = chargeFixture();
    fc.assert(fc.property(anyText(), (text) => void expectSame(ring, `Payment ${Buffer.from(text).toString('base64url')}`)));
    fc.assert(fc.property(fc.jsonValue(), (value) => void expectSame(ring, authorizationFor(value))));
    const field = fc.oneof(fc.jsonValue(), fc.string(), fc.constant(undefined), fc.stringMatching(/^[A-Za-z0-9_+/=-]{0,12}$/));
    fc.assert(
      fc.property(
        fc.constantFrom('id', 'realm', 'method', 'intent', 'request', 'expires', 'digest', 'opaque'),
        field,
        fc.oneof(fc.constant(preimage), field),
        (name, value, paid) => void expectSame(ring, authorizationFor({ challenge: { ...challenge, [name]: value }, payload: { preimage: paid } })),
      ),
      { numRuns: 400 },
    );
  });

  it('verifies an edited credential only when the edit left the bytes as they were, as the two steps do', () => {
    const { ring, credential } = chargeFixture();
    const encoded = credential.slice('Payment '.length);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/=';
    fc.assert(
      fc.property(fc.nat(encoded.length - 1), fc.constantFrom(...alphabet), (at, c) => {
        void expectSame(ring, `Payment ${encoded.slice(0, at)}${c}${encoded.slice(at + 1)}`);
      }),
      { numRuns: 500 },
    );
  });
});

describe('verifyPaymentAuthorization', () => {
  it("gives a route's caveats sorted, the same frozen list for each of its credentials, another list for another price or binding", () => {
    const ring = BindingKeyring.fromSecrets(OTHER_SECRET);
    const first = chargeFixture(ring);
    const second = chargeFixture(ring);
    const a = verifyPaymentAuthorization(ring, first.credential, NOW);
    const b = verifyPaymentAuthorization(ring, second.credential, NOW);
    if (!a.ok || !b.ok) throw new Error('the fixtures verify');
    expect(a.caveats).toEqual(['owner=alice@example.com', 'price_msat=21000', 'route=/weather']);
    expect(Object.isFrozen(a.caveats)).toBe(true);
    expect(b.caveats).toBe(a.caveats);
    expect(b.charge.paymentHash).not.toBe(a.charge.paymentHash);
    const dearer = verifyPaymentAuthorization(ring, chargeFixture(ring, { amountSats: 22 }).credential, NOW);
    expect(dearer.ok && dearer.caveats).toEqual(['owner=alice@example.com', 'price_msat=22000', 'route=/weather']);
    const bare = verifyPaymentAuthorization(ring, chargeFixture(ring, { binding: undefined }).credential, NOW);
    expect(bare.ok && bare.caveats).toEqual(['price_msat=21000']);
  });

  it('refuses two credentials, none, and a changed one, with the paywall codes', () => {
    const ring = BindingKeyring.fromSecrets(OTHER_SECRET);
    const { credential, challenge, preimage } = chargeFixture(ring);
    const codeOf = (header: string | undefined) => {
      const result = verifyPaymentAuthorization(ring, header, NOW);
      return result.ok ? 'ok' : result.problem;
    };
    const twice = verifyPaymentAuthorization(ring, `${credential}, ${credential}`, NOW);
    expect(twice.ok || twice.rejection.code).toBe('MULTIPLE_CREDENTIALS');
    expect(codeOf(undefined)).toBe('payment-required');
    expect(codeOf(formatCredential({ ...challenge, realm: 'other.example' }, preimage))).toBe('lightning/unknown-challenge');
    expect(codeOf(credential)).toBe('ok');
  });
});
