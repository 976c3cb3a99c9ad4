// Verifying Lightning charge credentials: what a payer sends verifies, and
// every change to what was bound, every expired or foreign challenge, every
// wrong preimage and every malformed input is refused with its problem type,
// never thrown.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BindingKeyring,
  PROBLEMS,
  formatCredential,
  parsePaymentCredential,
  verifyLightningCredential,
  type CredentialVerification,
  type PaymentChallenge,
} from '../../src/mpp.js';
import { encodeJson } from '../../src/schemes/payment/wire.js';
import { newPreimage } from '../support/l402.js';
import { anyText, authorizationFor, chargeFixture, ISSUED_AT, LIFETIME_SECONDS, MPP_SECRET, OTHER_SECRET, withRequest } from '../support/mpp.js';

const NOW = ISSUED_AT + 1;
const EXPIRES_AT = ISSUED_AT + LIFETIME_SECONDS;

const verify = (ring: BindingKeyring, authorization: string | null | undefined, now = NOW) => verifyLightningCredential(ring, authorization, now);
const problemOf = (result: CredentialVerification) => (result.ok ? 'ok' : result.problem);

describe('verifyLightningCredential', () => {
  it('verifies the credential a payer sends, and says what was bound', () => {
    const { ring, credential, challenge, paymentHash, invoice } = chargeFixture();
    expect(verify(ring, credential)).toEqual({
      ok: true,
      challengeId: challenge.id,
      realm: 'api.example.com',
      amountSats: 21,
      paymentHash,
      invoice,
      network: 'regtest',
      expiresAt: EXPIRES_AT,
      binding: { owner: 'alice@example.com', route: '/weather' },
    });
  });

  it('returns an empty binding for a challenge without opaque, and the source when given', () => {
    const { ring, challenge, preimage } = chargeFixture(undefined, { binding: undefined });
    const result = verify(ring, formatCredential(challenge, preimage, 'did:key:z6Mk'));
    expect(result).toMatchObject({ ok: true, binding: {}, source: 'did:key:z6Mk' });
  });

  it('refuses a challenge whose bound parameters were changed', () => {
    const { ring, challenge, preimage } = chargeFixture();
    const attacker = newPreimage();
    const opaque = (fields: Record<string, string>) => encodeJson(fields);
    const tampered: [string, PaymentChallenge, string][] = [
      ['amount', withRequest(challenge, (r) => void (r.amount = '1')), preimage],
      ['currency', withRequest(challenge, (r) => void (r.currency = 'msat')), preimage],
      ['invoice', withRequest(challenge, (r) => void (r.methodDetails.invoice = 'lnbcrt10n1cheaper')), preimage],
      // A payment hash of the attacker's choosing, with the attacker's preimage: the one forgery the preimage check alone would pass.
      ['paymentHash', withRequest(challenge, (r) => void (r.methodDetails.paymentHash = attacker.hash)), attacker.preimage],
      ['network', withRequest(challenge, (r) => void (r.methodDetails.network = 'mainnet')), preimage],
      ['route', { ...challenge, opaque: opaque({ owner: 'alice@example.com', route: '/premium' }) }, preimage],
      ['owner', { ...challenge, opaque: opaque({ owner: 'mallory@example.com', route: '/weather' }) }, preimage],
      ['binding removed', { ...challenge, opaque: undefined }, preimage],
      ['expiry', { ...challenge, expires: '2099-01-01T00:00:00Z' }, preimage],
      ['expiry removed', { ...challenge, expires: undefined }, preimage],
      ['realm', { ...challenge, realm: 'other.example.com' }, preimage],
      ['digest added', { ...challenge, digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:' }, preimage],
      ['id', { ...challenge, id: `${challenge.id.slice(0, -2)}AA` }, preimage],
    ];
    for (const [what, changed, paidWith] of tampered) {
      expect(problemOf(verify(ring, formatCredential(changed, paidWith))), what).toBe('lightning/unknown-challenge');
    }
  });

  it('takes the echoed request and opaque with padding: the same bytes were bound', () => {
    const { ring, challenge, preimage } = chargeFixture();
    const pad = (text: string) => text + '='.repeat((4 - (text.length % 4)) % 4);
    const padded = { ...challenge, request: pad(challenge.request), opaque: pad(challenge.opaque!) };
    expect(padded.request + padded.opaque).not.toBe(challenge.request + challenge.opaque);
    expect(verify(ring, formatCredential(padded, preimage)).ok).toBe(true);
  });

  it('ignores the description, which the draft does not bind and nobody may rely on', () => {
    const { ring, challenge, preimage } = chargeFixture();
    expect(verify(ring, formatCredential({ ...challenge, description: 'anything' }, preimage)).ok).toBe(true);
  });

  it('refuses an expired challenge, from the second it expires', () => {
    const { ring, credential } = chargeFixture();
    expect(verify(ring, credential, EXPIRES_AT - 0.001).ok).toBe(true);
    expect(problemOf(verify(ring, credential, EXPIRES_AT))).toBe('lightning/expired-invoice');
    expect(problemOf(verify(ring, credential, EXPIRES_AT + 86_400))).toBe('lightning/expired-invoice');
  });

  it('refuses a wrong preimage', () => {
    const { ring, challenge, preimage } = chargeFixture();
    const wrong = preimage.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(problemOf(verify(ring, formatCredential(challenge, wrong)))).toBe('lightning/invalid-preimage');
    expect(problemOf(verify(ring, formatCredential(challenge, newPreimage().preimage)))).toBe('lightning/invalid-preimage');
    // The payment hash itself is not its own preimage.
    expect(problemOf(verify(ring, formatCredential(challenge, chargeFixture(ring).paymentHash)))).toBe('lightning/invalid-preimage');
  });

  it("refuses another server's challenge, and takes one issued before a rotation", () => {
    const ours = BindingKeyring.fromSecrets(MPP_SECRET);
    const theirs = chargeFixture(BindingKeyring.fromSecrets(OTHER_SECRET));
    expect(problemOf(verify(ours, theirs.credential))).toBe('lightning/unknown-challenge');

    const beforeRotation = chargeFixture(BindingKeyring.fromSecrets(MPP_SECRET));
    const rotated = BindingKeyring.fromSecrets([OTHER_SECRET, MPP_SECRET]);
    expect(verify(rotated, beforeRotation.credential).ok).toBe(true);
    expect(problemOf(verify(BindingKeyring.fromSecrets(OTHER_SECRET), beforeRotation.credential))).toBe('lightning/unknown-challenge');
  });

  it('refuses other methods and intents before anything else', () => {
    const { ring, challenge, preimage } = chargeFixture();
    expect(problemOf(verify(ring, formatCredential({ ...challenge, method: 'tempo' }, preimage)))).toBe('method-unsupported');
    expect(problemOf(verify(ring, formatCredential({ ...challenge, intent: 'session' }, preimage)))).toBe('method-unsupported');
  });

  it('names a missing credential payment-required and a malformed one malformed-credential', () => {
    const { ring, challenge, preimage, credential } = chargeFixture();
    expect(problemOf(verify(ring, null))).toBe('payment-required');
    expect(problemOf(verify(ring, ''))).toBe('payment-required');
    const encoded = credential.slice('Payment '.length);
    const echo = { challenge, payload: { preimage } };
    for (const [what, authorization] of [
      ['another scheme', `Bearer ${encoded}`],
      ['no space', `Payment${encoded}`],
      ['two credentials', `${credential}, ${credential}`],
      ['auth-params', `Payment id="${challenge.id}"`],
      ['not base64', 'Payment ***'],
      ['not JSON', `Payment ${Buffer.from('hello').toString('base64url')}`],
      ['JSON not an object', authorizationFor([echo])],
      ['no challenge', authorizationFor({ payload: { preimage } })],
      ['no payload', authorizationFor({ challenge })],
      ['no preimage', authorizationFor({ challenge, payload: {} })],
      ['an upper-case preimage', authorizationFor({ challenge, payload: { preimage: preimage.toUpperCase() } })],
      ['a short preimage', authorizationFor({ challenge, payload: { preimage: preimage.slice(2) } })],
      ['a 0x preimage', authorizationFor({ challenge, payload: { preimage: `0x${preimage.slice(2)}` } })],
      ['a number id', authorizationFor({ ...echo, challenge: { ...challenge, id: 1 } })],
      ['a request that is not base64url', authorizationFor({ ...echo, challenge: { ...challenge, request: '{"amount":"1"}' } })],
      ['an object opaque', authorizationFor({ ...echo, challenge: { ...challenge, opaque: { route: '/weather' } } })],
      ['too long', `Payment ${'A'.repeat(9000)}`],
    ]) {
      const result = verify(ring, authorization);
      expect(problemOf(result), what).toBe('lightning/malformed-credential');
      expect(result.ok || result.detail.includes(preimage), what).toBe(false);
    }
  });

  it('takes the scheme in any case, padding, and unknown fields', () => {
    const { ring, challenge, preimage, credential } = chargeFixture();
    expect(verify(ring, credential.replace('Payment', 'PAYMENT')).ok).toBe(true);
    expect(verify(ring, `  ${credential.replace('Payment ', 'payment   ')}=  `.replace(/=? {2}$/, '  ')).ok).toBe(true);
    expect(verify(ring, `Payment ${Buffer.from(JSON.stringify({ challenge, payload: { preimage } })).toString('base64')}`).ok).toBe(true);
    expect(verify(ring, authorizationFor({ challenge: { ...challenge, future: 'x' }, payload: { preimage, note: 1 }, extra: [] })).ok).toBe(true);
  });

  it('never throws, whatever the header', () => {
    const { ring, challenge, preimage } = chargeFixture();
    const problems = new Set(Object.keys(PROBLEMS));
    const check = (authorization: string) => {
      const result = verify(ring, authorization);
      if (!result.ok) expect(problems.has(result.problem)).toBe(true);
      return result;
    };
    fc.assert(fc.property(anyText(), (text) => void check(text)));
    fc.assert(fc.property(anyText(), (text) => void check(`Payment ${Buffer.from(text).toString('base64url')}`)));
    fc.assert(fc.property(fc.jsonValue(), (value) => void check(authorizationFor(value))));
    // Credentials shaped like the real one, with fields of any type or value.
    const field = fc.oneof(fc.jsonValue(), fc.string(), fc.constant(undefined));
    fc.assert(
      fc.property(
        fc.constantFrom('id', 'realm', 'method', 'intent', 'request', 'expires', 'digest', 'opaque'),
        field,
        fc.oneof(fc.constant(preimage), field),
        (name, value, paid) => {
          void check(authorizationFor({ challenge: { ...challenge, [name]: value }, payload: { preimage: paid } }));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('verifies an edited credential only when the edit left the bytes as they were', () => {
    const fixture = chargeFixture();
    const valid = verify(fixture.ring, fixture.credential);
    const encoded = fixture.credential.slice('Payment '.length);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    fc.assert(
      fc.property(fc.nat(encoded.length - 1), fc.constantFrom(...alphabet), (at, c) => {
        const edited = `Payment ${encoded.slice(0, at)}${c}${encoded.slice(at + 1)}`;
        const result = verify(fixture.ring, edited);
        if (result.ok) expect(result).toEqual(valid);
      }),
      { numRuns: 500 },
    );
  });
});

describe('parsePaymentCredential and formatCredential', () => {
  it('round-trip, the credential being JCS JSON', () => {
    const { challenge, preimage, credential } = chargeFixture();
    const text = Buffer.from(credential.slice('Payment '.length), 'base64url').toString();
    expect(text.startsWith('{"challenge":{"expires":')).toBe(true);
    expect(parsePaymentCredential(credential)).toEqual({ ok: true, credential: { challenge, payload: { preimage } } });
  });

  it('sends the preimage lower-case and refuses one that is not 32 bytes of hex', () => {
    const { challenge, preimage } = chargeFixture();
    expect(parsePaymentCredential(formatCredential(challenge, preimage.toUpperCase()))).toMatchObject({ ok: true, credential: { payload: { preimage } } });
    for (const bad of ['', 'ab', preimage.slice(1), `${preimage}00`, 'zz'.repeat(32)]) expect(() => formatCredential(challenge, bad), bad).toThrow(TypeError);
  });
});
