// The token reader keeps its scratch (bytes, hash and signature words) in the
// module so the hot path allocates nothing. These tests interleave reads of
// good, forged, malformed and half-valid tokens, and calls that throw, and
// check that no token's fields ever show through another's.
import fc from 'fast-check';
import { Keyring, decodeToken, mintToken, verifyToken } from 'l402-paywall';
import { describe, expect, it } from 'vitest';
import { base64UrlEncode, utf8 } from '../../packages/l402-paywall/src/l402/encoding.js';
import { newPreimage } from '../support/l402.js';

const keyring = new Keyring(['scratch-test-secret-0123456789abcdef0123456789']);
const now = Math.floor(Date.now() / 1000);
const caveats = { route: '/paid', price_msat: 1000 };

function token() {
  const { preimage, hash } = newPreimage();
  return { preimage, hash, text: mintToken(keyring, { paymentHash: hash, expiresAt: now + 600, caveats }) };
}
const json = (value: unknown) => base64UrlEncode(utf8(JSON.stringify(value)));
const good = Array.from({ length: 4 }, token);
const decoded = (t: string) => decodeToken(t);

// Tokens that get some way into the reader before it refuses them: a valid hash
// with a broken signature, a broken hash after a valid kid, JSON that is not a token.
const partial = [
  json({ v: 1, kid: '00000000', hash: good[0]!.hash, exp: now + 60, caveats: [], sig: 'zz'.repeat(32) }),
  json({ v: 1, kid: '00000000', hash: 'not hex', exp: now + 60, caveats: [], sig: '00'.repeat(32) }),
  json({ v: 1, kid: '00000000', hash: good[1]!.hash, exp: -1, caveats: [], sig: '11'.repeat(32) }),
  json([1, 2, 3]),
  '!!!!',
  '',
];

describe('token reads do not leak into each other', () => {
  it('any order of reads answers each token as it answers alone', () => {
    const texts = [...good.map((g) => g.text), ...partial];
    const alone = texts.map(decoded);
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: texts.length - 1 }), { minLength: 1, maxLength: 30 }), (order) => {
        for (const i of order) expect(decoded(texts[i]!)).toEqual(alone[i]);
      }),
      { seed: 402, numRuns: 300 },
    );
  });

  it('a verified token keeps its own hash and signature while other tokens are read, refused or throw', () => {
    const [a, b] = good as [ReturnType<typeof token>, ReturnType<typeof token>];
    const verified = verifyToken(keyring, a.text, a.preimage);
    if (!verified.ok) throw new Error('a must verify');
    const hashBefore = verified.token.hash;
    const sigBefore = verified.token.sig;
    // Another token read and verified, a half-valid one refused, and a call that throws midway.
    expect(verifyToken(keyring, b.text, b.preimage).ok).toBe(true);
    for (const p of partial) expect(verifyToken(keyring, p, a.preimage).ok).toBe(false);
    expect(() => verifyToken(keyring, b.text, undefined as unknown as string)).toThrow();
    expect(verified.token.hash).toBe(hashBefore);
    expect(verified.token.hash).toBe(a.hash);
    expect(verified.token.sig).toBe(sigBefore);
    // And the reader answers the next token correctly after the throw.
    expect(decodeToken(b.text)).toMatchObject({ hash: b.hash });
    expect(verifyToken(keyring, a.text, a.preimage).ok).toBe(true);
  });

  it('a refused token right after a good one is refused for its own reason, not judged on the good one\u2019s fields', () => {
    const [a] = good as [ReturnType<typeof token>];
    // The same hash as a, but a signature that is not hex: the reader must not reuse a's signature words.
    const forged = json({
      v: 1,
      kid: decodeToken(a.text)!.kid,
      hash: a.hash,
      exp: now + 600,
      caveats: ['price_msat=1000', 'route=/paid'],
      sig: 'g'.repeat(64),
    });
    expect(verifyToken(keyring, a.text, a.preimage).ok).toBe(true);
    expect(verifyToken(keyring, forged, a.preimage)).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_TOKEN' } });
  });
});
