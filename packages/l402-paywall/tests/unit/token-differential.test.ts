// Differential fuzz of the token reader: verifyToken (hand-written byte
// readers, cached keyed states, SHA-256 by blocks) against a plain reference
// written from the documented format with atob, JSON.parse and node:crypto
// only. Same answer (the refusal code, or the token's fields) on every input:
// valid tokens, tokens edited byte by byte, re-serialised in other JSON
// layouts, signed by other or rotated keys, expired, with wrong preimages, and
// random text. A fixed seed, printed; FUZZ_SEED=<n> replays another.
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Keyring, verifyToken } from 'l402-paywall';
import { mintLegacyToken } from '../support/legacy-token.js';

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_125);
const NOW = 1_800_000_000;
const SECRETS = ['differential-current-secret-0123456789abcdef', 'differential-previous-secret-0123456789abcdef'];
const OTHER = 'differential-unknown-secret-0123456789abcdef0';
const keyring = new Keyring(SECRETS);
const otherKeyring = new Keyring([OTHER]);

type Answer = { ok: true; kid: string; hash: string; exp: number; caveats: string[] } | { ok: false; code: string };

// ---------------------------------------------------------------------------
// The reference, from the format as documented (packages/l402-paywall/src/schemes/l402/token.ts header, docs/library-reference.md "Token format").

const kidOf = (secret: string) => createHmac('sha256', secret).update('L402/v1 key id').digest('hex').slice(0, 8);
const KIDS = new Map(SECRETS.map((s) => [kidOf(s), s]));
const LOWER_HEX_64 = /^[0-9a-f]{64}$/;
const CAVEAT = /^[a-z][a-z0-9_]{0,31}=[\x20-\x7e]{0,512}$/;

function referenceVerify(token: string, preimage: string, now: number): Answer {
  const malformed = { ok: false, code: 'MALFORMED_TOKEN' } as const;
  if (token.length === 0 || token.length > 8192) return malformed;
  let bytes: string;
  try {
    // Forgiving base64 (padded or not), either alphabet; nothing but its characters.
    if (!/^[A-Za-z0-9+/_=-]*$/.test(token)) return malformed;
    bytes = atob(token.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    return malformed;
  }
  let value: unknown;
  try {
    value = JSON.parse(bytes); // bytes as Latin-1: the JSON itself is ASCII
  } catch {
    return malformed;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return malformed;
  const t = value as Record<string, unknown>;
  if (t.v !== 1) return malformed;
  if (typeof t.kid !== 'string' || !/^[0-9a-f]{8}$/.test(t.kid)) return malformed;
  if (typeof t.hash !== 'string' || !LOWER_HEX_64.test(t.hash)) return malformed;
  if (typeof t.sig !== 'string' || !LOWER_HEX_64.test(t.sig)) return malformed;
  if (typeof t.exp !== 'number' || !Number.isSafeInteger(t.exp) || t.exp <= 0) return malformed;
  if (!Array.isArray(t.caveats) || t.caveats.length > 16 || !t.caveats.every((c) => typeof c === 'string' && !c.includes('\n'))) return malformed;
  const caveats = t.caveats as string[];
  const secret = KIDS.get(t.kid);
  if (!secret) return { ok: false, code: 'UNKNOWN_KEY' };
  if (!caveats.every((c) => CAVEAT.test(c))) return malformed;
  const caveatKey = createHmac('sha256', secret)
    .update(`L402/v1 caveats\n${caveats.join('\n')}`)
    .digest();
  const message = Buffer.alloc(41);
  message[0] = 1;
  Buffer.from(t.hash, 'hex').copy(message, 1);
  message.writeBigUInt64BE(BigInt(t.exp), 33);
  if (createHmac('sha256', caveatKey).update(message).digest('hex') !== t.sig) return { ok: false, code: 'BAD_SIGNATURE' };
  if (t.exp <= now) return { ok: false, code: 'TOKEN_EXPIRED' };
  if (!LOWER_HEX_64.test(preimage) || createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex') !== t.hash)
    return { ok: false, code: 'PREIMAGE_MISMATCH' };
  return { ok: true, kid: t.kid, hash: t.hash, exp: t.exp, caveats };
}

function ours(token: string, preimage: string, now: number): Answer {
  const result = verifyToken(keyring, token, preimage, now);
  if (!result.ok) return { ok: false, code: result.rejection.code };
  const v = result.token;
  return { ok: true, kid: v.kid, hash: v.hash, exp: v.exp, caveats: [...v.caveats] };
}

// ---------------------------------------------------------------------------
// Inputs

const preimageOf = (seed: number) => createHash('sha256').update(`preimage ${seed}`).digest('hex');
const hashOf = (preimage: string) => createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex');
const caveatEntry = fc.oneof(
  fc.constantFrom(['route', '/api/x'], ['price_msat', 1000], ['uses', 3], ['owner', 'alice@example.com'], ['purpose', 'pro']),
  fc.tuple(
    fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/),
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 20 }),
  ),
);
/** A real token: minted by our keyring (either secret's turn to sign) or by an unknown one. */
const minted = fc
  .record({
    seed: fc.nat(1000),
    exp: fc.oneof(fc.integer({ min: NOW + 1, max: NOW + 100_000 }), fc.integer({ min: 1, max: NOW })),
    caveats: fc.array(caveatEntry, { maxLength: 5 }).map((entries) => Object.fromEntries(entries)),
    signer: fc.constantFrom('current', 'previous', 'unknown'),
  })
  .map(({ seed, exp, caveats, signer }) => {
    const preimage = preimageOf(seed);
    const ring = signer === 'current' ? keyring : signer === 'previous' ? new Keyring([SECRETS[1]!]) : otherKeyring;
    return { token: mintLegacyToken(ring, { paymentHash: hashOf(preimage), expiresAt: exp, caveats }), preimage };
  });

const fromJson = (text: string) => Buffer.from(text, 'latin1').toString('base64url');
const toJson = (token: string) => Buffer.from(token, 'base64url').toString('latin1');

// Edits of the JSON text: a byte changed, removed or inserted anywhere.
const editedJson = fc
  .tuple(minted, fc.nat(), fc.constantFrom('replace', 'delete', 'insert'), fc.integer({ min: 0, max: 255 }))
  .map(([{ token, preimage }, at, op, byte]) => {
    const text = toJson(token);
    const i = at % (text.length + 1);
    const c = String.fromCharCode(byte);
    const edited =
      op === 'replace'
        ? text.slice(0, i) + c + text.slice(i + 1)
        : op === 'delete'
          ? text.slice(0, i) + text.slice(i + 1)
          : text.slice(0, i) + c + text.slice(i);
    return { token: fromJson(edited), preimage };
  });
// The same payload in other layouts: key order, spacing, escapes, extra keys, fields of other types.
const relaid = fc
  .tuple(
    minted,
    fc.boolean(),
    fc.constantFrom('', ' ', '\n  '),
    fc.boolean(),
    fc.option(fc.jsonValue({ maxDepth: 1 })),
    fc.constantFrom('none', 'exp-float', 'exp-string', 'hash-upper', 'v2', 'caveats-17', 'caveat-newline', 'kid-short'),
  )
  .map(([{ token, preimage }, reverse, space, escapeKid, extra, change]) => {
    const payload = JSON.parse(toJson(token)) as Record<string, unknown>;
    if (change === 'exp-float') payload.exp = (payload.exp as number) + 0.5;
    if (change === 'exp-string') payload.exp = String(payload.exp);
    if (change === 'hash-upper') payload.hash = (payload.hash as string).toUpperCase();
    if (change === 'v2') payload.v = 2;
    if (change === 'caveats-17') payload.caveats = Array.from({ length: 17 }, (_, i) => `c${i}=1`);
    if (change === 'caveat-newline') payload.caveats = ['a=1\nb=2'];
    if (change === 'kid-short') payload.kid = (payload.kid as string).slice(1);
    if (extra !== null) payload.extra = extra;
    const entries = Object.entries(payload);
    if (reverse) entries.reverse();
    let text = JSON.stringify(Object.fromEntries(entries), null, space);
    if (escapeKid) text = text.replace(/"kid"/, '"\\u006bid"');
    return { token: fromJson(text), preimage };
  });
// Spellings of the base64 itself: standard alphabet, padding, cut or extended.
const respelled = fc
  .tuple(minted, fc.constantFrom('standard', 'padded', 'cut', 'extra-padding', 'inner-padding', 'space'))
  .map(([{ token, preimage }, how]) => {
    const standard = Buffer.from(token, 'base64url').toString('base64');
    const spelled = {
      standard: standard.replace(/=+$/, ''),
      padded: standard,
      cut: token.slice(0, -1),
      'extra-padding': `${token}===`,
      'inner-padding': `${token.slice(0, 8)}=${token.slice(8)}`,
      space: `${token.slice(0, 8)} ${token.slice(8)}`,
    }[how];
    return { token: spelled, preimage };
  });
const otherPreimage = fc
  .tuple(minted, fc.oneof(fc.stringMatching(/^[0-9a-f]{64}$/), fc.stringMatching(/^[0-9A-F]{64}$/), fc.string({ maxLength: 70 })))
  .map(([{ token }, preimage]) => ({ token, preimage }));
const randomText = fc
  .tuple(
    fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.base64String({ maxLength: 400 }),
      fc.jsonValue().map((v) => fromJson(JSON.stringify(v))),
    ),
    fc.stringMatching(/^[0-9a-f]{64}$/),
  )
  .map(([token, preimage]) => ({ token, preimage }));

describe(`the token reader against a plain reference (seed ${SEED})`, () => {
  it('gives the same answer on 30,000 tokens, valid, edited, re-laid, re-spelled, rotated and random', () => {
    console.log(`token-differential: seed ${SEED} (replay: FUZZ_SEED=${SEED} npx vitest run tests/unit/token-differential.test.ts, in packages/l402-paywall)`);
    const answers = new Map<string, number>();
    fc.assert(
      fc.property(fc.oneof(minted, editedJson, relaid, respelled, otherPreimage, randomText), ({ token, preimage }) => {
        const expected = referenceVerify(token, preimage, NOW);
        const answer = ours(token, preimage, NOW);
        // The same answer written the same way is equal; anything else goes to toEqual, which says how they differ
        // (an expect on every one of the 30,000 cost seconds).
        if (JSON.stringify(answer) !== JSON.stringify(expected)) expect(answer, JSON.stringify({ token, preimage })).toEqual(expected);
        const key = expected.ok ? 'ok' : expected.code;
        answers.set(key, (answers.get(key) ?? 0) + 1);
      }),
      { seed: SEED, numRuns: 30_000 },
    );
    console.log(`token-differential: answers ${JSON.stringify(Object.fromEntries(answers))}`);
    // Every answer the reader can give was reached.
    expect([...answers.keys()].sort()).toEqual(['BAD_SIGNATURE', 'MALFORMED_TOKEN', 'PREIMAGE_MISMATCH', 'TOKEN_EXPIRED', 'UNKNOWN_KEY', 'ok']);
  }, 120_000);
});
