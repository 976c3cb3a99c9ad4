// isPreimageOf, the one proof-of-payment check (the charge, the session
// codec, the backends' checks, the client): against @noble/hashes, and the
// spellings it refuses.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isPreimageOf } from '../../src/crypto/preimage.js';

describe('isPreimageOf', () => {
  it('holds for every preimage and its SHA-256, and for no other hash', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.integer({ min: 0, max: 63 }), (bytes, at) => {
        const preimage = bytesToHex(bytes);
        const hash = bytesToHex(sha256(bytes));
        expect(isPreimageOf(preimage, hash)).toBe(true);
        // One hex digit changed, anywhere, fails.
        const other = (Number.parseInt(hash[at]!, 16) ^ 1).toString(16);
        expect(isPreimageOf(preimage, `${hash.slice(0, at)}${other}${hash.slice(at + 1)}`)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses upper-case, short, long and non-hex spellings of either side', () => {
    const bytes = new Uint8Array(32).fill(0xab);
    const preimage = bytesToHex(bytes);
    const hash = bytesToHex(sha256(bytes));
    for (const [p, h] of [
      [preimage, hash.toUpperCase()],
      [preimage.toUpperCase(), hash],
      [preimage, hash.slice(0, 62)],
      [preimage, `${hash}00`],
      [preimage.slice(0, 62), hash],
      [preimage, `${hash.slice(0, 63)}g`],
      [`${preimage.slice(0, 63)}z`, hash],
      ['', ''],
    ] as const) {
      expect(isPreimageOf(p, h), `${p} ${h}`).toBe(false);
    }
  });
});
