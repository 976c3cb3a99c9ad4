// The contract between the token's two readers (token-reader.ts): on the same
// bytes, readMintedLayout (mintToken's layout, read by byte position) answers
// exactly what readJson (any layout, through JSON.parse) answers, or leaves
// the bytes to it (undefined). This file is what holds the fast reader to the
// plain one; token-differential.test.ts holds the whole verifier to
// a reference written from the documented format.
//
// Texts: minted tokens with random edits near the layout (digits, quotes,
// escapes, brackets, control and non-ASCII bytes), and caveat lists built to
// sit on the readers' edges. One reader reads every text by position, so its
// caches (the last key id and caveat list) are warm and must not change an
// answer; a fresh reader reads each by JSON.parse.
import fc from 'fast-check';
import { Keyring } from 'l402-paywall';
import { mintLegacyToken } from '../support/legacy-token.js';
import { describe, expect, it } from 'vitest';
import { wordsHex } from '../../src/crypto/encoding.js';
import { TokenReader, type TokenFields } from '../../src/schemes/l402/token-reader.js';
import { newPreimage } from '../support/l402.js';

const keyrings = [new Keyring(['reader-contract-secret-0123456789abcdef0123']), new Keyring(['reader-contract-other-0123456789abcdef01234'])];
const now = 1_800_000_000;

/** A read as plain data, so later reads cannot change it. */
function snapshot(t: TokenFields | null): unknown {
  return t && { kid: t.kid, exp: t.exp, caveats: [...t.caveats], hash: wordsHex(t.hashWords), sig: wordsHex(t.sigWords) };
}

const toBase64 = (latin1: string) => Buffer.from(latin1, 'latin1').toString('base64url');
const mintedJson = (keyring: Keyring, caveats: Record<string, string | number>, exp = now) =>
  Buffer.from(mintLegacyToken(keyring, { paymentHash: newPreimage().hash, expiresAt: exp, caveats }), 'base64url').toString('latin1');

const significant = [...'"\\,:[]{}. -+eE0123456789abcdefABCDEF_=/\n\t\r\x00\x1f\x7f\xe9\xff'];
const edit = fc.record({
  at: fc.nat(400),
  remove: fc.nat(3),
  insert: fc.array(fc.constantFrom(...significant), { maxLength: 3 }).map((c) => c.join('')),
});
const caveatValue = fc.string({ unit: fc.constantFrom(...'ab/=?~ "\\,]'), maxLength: 8 });
const mintedText = fc
  .record({
    keyring: fc.constantFrom(...keyrings),
    caveats: fc.oneof(
      fc.constant({ route: '/api/x', price_msat: 1000 }),
      fc.constant({}),
      fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9_]{0,4}$/), caveatValue, { maxKeys: 17 }),
    ),
    exp: fc.oneof(fc.constant(now), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER })),
  })
  .filter(({ caveats }) => Object.keys(caveats).length <= 16)
  .map(({ keyring, caveats, exp }) => mintedJson(keyring, caveats, exp));
const editedText = fc.tuple(mintedText, fc.array(edit, { minLength: 1, maxLength: 3 })).map(([text, edits]) => {
  for (const { at, remove, insert } of edits) {
    const i = at % (text.length + 1);
    text = text.slice(0, i) + insert + text.slice(i + remove);
  }
  return text;
});

describe('readMintedLayout answers as readJson, or leaves the text to it', () => {
  it('on minted tokens, edited ones, and caveat lists on the readers\u2019 edges', () => {
    const byPosition = new TokenReader();
    const outcomes = { read: 0, refused: 0, deferred: 0 };
    fc.assert(
      fc.property(fc.oneof(mintedText, editedText), (text) => {
        const b64 = toBase64(text);
        const length = byPosition.decode(b64, 0, b64.length);
        if (length < 0) return; // longer than a token may be
        const minted = byPosition.readMintedLayout(length);
        if (minted === undefined) {
          outcomes.deferred++;
          return;
        }
        const plain = new TokenReader();
        plain.decode(b64, 0, b64.length);
        expect(snapshot(minted), text).toEqual(snapshot(plain.readJson(plain.json(length))));
        outcomes[minted ? 'read' : 'refused']++;
      }),
      { seed: 29, numRuns: 8000 },
    );
    console.log(`token-reader-contract: ${JSON.stringify(outcomes)}`);
    // Each way the fast reader answers was taken often enough for the comparison to mean something.
    expect(outcomes.read).toBeGreaterThan(1500);
    expect(outcomes.refused).toBeGreaterThan(80);
    expect(outcomes.deferred).toBeGreaterThan(1500);
  }, 120_000);

  it('on the texts next to the layout that once mattered: exp spellings, escapes, quotes and list shapes', () => {
    const text = mintedJson(keyrings[0]!, { route: '/api/demo/btc-price', price_msat: 1000 });
    const exp = String(now);
    const sig = text.slice(-66, -2);
    const list = '"caveats":["price_msat=1000","route=/api/demo/btc-price"]';
    const near = [
      ...['0' + exp, '-' + exp, exp + '.0', exp + 'e0', '0', '00', '9'.repeat(17), '9007199254740991', '9007199254740992', '1' + '0'.repeat(16)].map((e) =>
        text.replace(`"exp":${exp}`, `"exp":${e}`),
      ),
      text.replace(sig, sig.slice(0, 63) + '"'),
      text.replace(sig, `\\u00${sig.charCodeAt(0).toString(16)}` + sig.slice(1)),
      text.replace('"route=', '"route="'),
      text.replace('"route=', '"rou\\"te='),
      text.replace('"route=', '"rou\x01te='),
      text.replace(list, '"caveats":[]'),
      text.replace(list, '"caveats":[""]'),
      text.replace(list, '"caveats":["price_msat=1000",,"route=/x"]'),
      text.replace(list, `"caveats":[${Array.from({ length: 17 }, (_, i) => `"c${i}=1"`).join(',')}]`),
      text.replace(list, `"caveats":[${Array.from({ length: 16 }, (_, i) => `"c${i}=1"`).join(',')}]`),
    ];
    const byPosition = new TokenReader();
    let answered = 0;
    for (const edited of near) {
      const b64 = toBase64(edited);
      const length = byPosition.decode(b64, 0, b64.length);
      const minted = byPosition.readMintedLayout(length);
      if (minted === undefined) continue;
      answered++;
      const plain = new TokenReader();
      plain.decode(b64, 0, b64.length);
      expect(snapshot(minted), edited).toEqual(snapshot(plain.readJson(plain.json(length))));
    }
    expect(answered).toBeGreaterThanOrEqual(7);
  });
});
