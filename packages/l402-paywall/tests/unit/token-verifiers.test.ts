// Each Keyring is its tokens' verifier, and owns everything that makes
// verifying fast: the reader's scratch and caches (token-reader.ts), the
// signing-key cache and the SHA-256 words (token.ts). Nothing is kept at
// module level. Here two keyrings (one of them rotated, so with two keys)
// verify interleaved, with refused, half-valid and throwing calls and
// decodeToken in between: every answer equals what a fresh keyring answers
// for that token alone, and every token that verified keeps its own fields.
import fc from 'fast-check';
import { Keyring, decodeToken, mintToken, verifyAuthorization, verifyToken, type VerifyResult } from 'l402-paywall';
import { describe, expect, it } from 'vitest';
import { base64UrlEncode, utf8 } from '../../src/crypto/encoding.js';
import type { VerifiedToken } from '../../src/schemes/l402/token.js';
import { newPreimage } from '../support/l402.js';
import { mintLegacyToken } from '../support/legacy-token.js';

const A_NEW = 'verifiers-a-new-secret-0123456789abcdef01234567';
const A_OLD = 'verifiers-a-old-secret-0123456789abcdef01234567';
const B = 'verifiers-b-secret-0123456789abcdef0123456789ab';
const SECRETS = { a: [A_NEW, A_OLD], b: [B] } as const;
const now = Math.floor(Date.now() / 1000);

const json = (value: unknown) => base64UrlEncode(utf8(JSON.stringify(value)));

interface Subject {
  name: string;
  text: string;
  preimage: string;
}

function minted(name: string, secrets: string[], caveats: Record<string, string | number>, expiresAt = now + 600): Subject {
  const { preimage, hash } = newPreimage();
  return { name, text: mintToken(new Keyring(secrets), { paymentHash: hash, expiresAt, caveats }), preimage };
}

const aNew = [1, 2, 3].map((i) => minted(`a-new-${i}`, [A_NEW], { route: '/a', price_msat: 1000 }));
const aOld = [1, 2].map((i) => minted(`a-old-${i}`, [A_OLD], { route: '/a', price_msat: 2000 }));
const b = [1, 2, 3].map((i) => minted(`b-${i}`, [B], { route: '/b', price_msat: 5000, uses: 3 }));
// Tokens of format 1 (JSON), read by the legacy reader until they expire.
const legacy = [1, 2].map((i) => {
  const { preimage, hash } = newPreimage();
  return {
    name: `a-new legacy ${i}`,
    text: mintLegacyToken(new Keyring([A_NEW]), { paymentHash: hash, expiresAt: now + 600, caveats: { route: '/a', price_msat: 1000 } }),
    preimage,
  };
});
const first = legacy[0]!;
/** A macaroon with one byte of its signature (its last) changed. */
const resigned = (text: string) => {
  const bytes = Buffer.from(text, 'base64');
  bytes[bytes.length - 1]! ^= 1;
  return bytes.toString('base64');
};
const subjects: Subject[] = [
  ...aNew,
  ...aOld,
  ...b,
  ...legacy,
  { name: 'a-new macaroon forged', text: resigned(aNew[1]!.text), preimage: aNew[1]!.preimage },
  // Read by JSON.parse rather than by position.
  { name: 'a-new relaid', text: json(decodeToken(first.text)), preimage: first.preimage },
  minted('b expired', [B], { route: '/b', price_msat: 5000, uses: 3 }, now - 1),
  { name: 'a-new wrong preimage', text: first.text, preimage: aNew[1]!.preimage },
  { name: 'a-new macaroon wrong preimage', text: aNew[2]!.text, preimage: aNew[1]!.preimage },
  // A's hash and kid with another caveat list and a made-up signature.
  {
    name: 'a forged',
    text: json({ ...decodeToken(first.text), caveats: ['price_msat=1', 'route=/a'], sig: 'ab'.repeat(32) }),
    preimage: first.preimage,
  },
  // Half-valid: far enough into the reader to fill some of its scratch.
  { name: 'sig not hex', text: json({ ...decodeToken(first.text), sig: 'zz'.repeat(32) }), preimage: first.preimage },
  { name: 'hash not hex', text: json({ ...decodeToken(b[0]!.text), hash: 'not hex' }), preimage: b[0]!.preimage },
  { name: 'not a token', text: json([1, 2, 3]), preimage: first.preimage },
  { name: 'not base64', text: 'AAAAA', preimage: first.preimage },
];

/** A verification's answer as plain data: the refusal's code, or the token's fields. */
function answer(result: VerifyResult): unknown {
  if (!result.ok) return result.rejection.code;
  const { kid, hash, sig, exp, caveats } = result.token;
  return { kid, hash, sig, exp, caveats: [...caveats] };
}

// What each keyring answers for each subject on its own, from a keyring that has read nothing else.
const alone = {
  a: subjects.map((s) => answer(verifyToken(new Keyring([...SECRETS.a]), s.text, s.preimage))),
  b: subjects.map((s) => answer(verifyToken(new Keyring([...SECRETS.b]), s.text, s.preimage))),
};

describe('two keyrings verifying interleaved', () => {
  it('the answers cover every outcome, so the comparison below can tell them apart', () => {
    const codes = new Set([...alone.a, ...alone.b].map((a) => (typeof a === 'string' ? a : 'ok')));
    expect([...codes].sort()).toEqual(['BAD_SIGNATURE', 'MALFORMED_TOKEN', 'PREIMAGE_MISMATCH', 'TOKEN_EXPIRED', 'UNKNOWN_KEY', 'ok']);
    // A's tokens (both keys) verify on A and are unknown to B, and the other way round.
    expect(aNew.concat(aOld).map((s) => answer(verifyToken(new Keyring([...SECRETS.b]), s.text, s.preimage)))).toEqual(Array(5).fill('UNKNOWN_KEY'));
  });

  it('any order of verifications on either keyring (verifyToken, verifyAuthorization, decodeToken, a throwing call) answers each as alone', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ ring: fc.constantFrom('a' as const, 'b' as const), subject: fc.nat(subjects.length - 1), how: fc.nat(3) }), {
          minLength: 1,
          maxLength: 40,
        }),
        (steps) => {
          const rings = { a: new Keyring([...SECRETS.a]), b: new Keyring([...SECRETS.b]) };
          const kept: { token: VerifiedToken; expected: unknown }[] = [];
          for (const { ring, subject, how } of steps) {
            const s = subjects[subject]!;
            const expected = alone[ring][subject];
            if (how === 3) {
              // A call that throws midway (no preimage: it throws once the signature and expiry passed), then
              // decodeToken: neither may leave anything behind.
              try {
                verifyToken(rings[ring], s.text, undefined as unknown as string);
              } catch {}
              decodeToken(s.text);
              continue;
            }
            const result =
              how === 0
                ? verifyToken(rings[ring], s.text, s.preimage)
                : verifyAuthorization(rings[ring], `${how === 1 ? 'L402' : 'LSAT'} ${s.text}:${s.preimage}`);
            expect(answer(result), `${s.name} on ${ring}`).toEqual(expected);
            if (result.ok) kept.push({ token: result.token, expected });
          }
          // Tokens verified earlier still hold their own fields.
          for (const { token, expected } of kept) expect(answer({ ok: true, token })).toEqual(expected);
        },
      ),
      { seed: 402, numRuns: 300 },
    );
  });

  it('a token read right after another by the same keyring is judged on its own fields, not the other\u2019s', () => {
    const ring = new Keyring([...SECRETS.a]);
    const forged = subjects.find((s) => s.name === 'sig not hex')!;
    expect(verifyToken(ring, first.text, first.preimage).ok).toBe(true);
    // The same hash and kid as the token just read, with a signature that is not hex.
    expect(answer(verifyToken(ring, forged.text, forged.preimage))).toBe('MALFORMED_TOKEN');
  });
});
