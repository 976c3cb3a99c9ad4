// The generated SHA-256 compression (sha256-block.ts) against the published
// test vectors (FIPS 180-2 Appendix B.1 and the empty message, RFC 4231's
// HMAC-SHA-256 cases that fit one block), then differentially against
// @noble/hashes on random messages and keys, through the word-level calls
// the token verifier makes.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HmacChain, KeyedHmac, ShortHmac, hmacSha256, padBlock, sha256 as ourSha256Bytes, sha256Block } from '../../src/crypto/sha256-block.js';

/** `message` as big-endian words into a block full of leftovers; padBlock must clear what is not message. */
function dirtyBlock(message: Uint8Array, garbage: number): Int32Array {
  const block = new Int32Array(16).fill(garbage);
  for (let i = 0; i < message.length; i++) {
    const shift = 24 - 8 * (i & 3);
    block[i >> 2] = (block[i >> 2]! & ~(0xff << shift)) | (message[i]! << shift);
  }
  return block;
}

function wordsHex(words: Int32Array): string {
  return Array.from(words, (w) => (w >>> 0).toString(16).padStart(8, '0')).join('');
}

function ourSha256(message: Uint8Array, garbage = 0): string {
  const block = dirtyBlock(message, garbage);
  padBlock(block, message.length, 0);
  const out = new Int32Array(8);
  sha256Block(block, out);
  return wordsHex(out);
}

function ourHmac(key: Uint8Array, message: Uint8Array, mac = new ShortHmac(key), garbage = 0): string {
  const block = dirtyBlock(message, garbage);
  padBlock(block, message.length, 64);
  const out = new Int32Array(8);
  mac.macBlock(block, out);
  return wordsHex(out);
}

const ascii = (text: string) => new TextEncoder().encode(text);
const repeated = (byte: number, n: number) => new Uint8Array(n).fill(byte);

describe('SHA-256 and HMAC-SHA256 of one block: published vectors', () => {
  it('FIPS 180-2 B.1 ("abc") and the empty message', () => {
    expect(ourSha256(ascii('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(ourSha256(new Uint8Array(0))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('RFC 4231 test cases 1-6 (case 7 does not fit one block)', () => {
    const cases: [string, Uint8Array, Uint8Array, string][] = [
      ['1', repeated(0x0b, 20), ascii('Hi There'), 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
      ['2', ascii('Jefe'), ascii('what do ya want for nothing?'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
      ['3', repeated(0xaa, 20), repeated(0xdd, 50), '773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe'],
      ['4', Uint8Array.from({ length: 25 }, (_, i) => i + 1), repeated(0xcd, 50), '82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b'],
      // Case 5 publishes the first 128 bits only.
      ['5', repeated(0x0c, 20), ascii('Test With Truncation'), 'a3b6167473100ee06e0c796c2955552b'],
      // A key longer than a block is hashed first.
      [
        '6',
        repeated(0xaa, 131),
        ascii('Test Using Larger Than Block-Size Key - Hash Key First'),
        '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
      ],
    ];
    for (const [name, key, message, mac] of cases) expect(ourHmac(key, message).slice(0, mac.length), `RFC 4231 case ${name}`).toBe(mac);
  });
});

describe('SHA-256 and HMAC-SHA256 of one block: against @noble/hashes', () => {
  it('SHA-256 for every length from 0 to 55 bytes, whatever the block held before', () => {
    for (let n = 0; n <= 55; n++) {
      const message = new Uint8Array(n).map((_, i) => (i * 37 + n) & 255);
      expect(ourSha256(message, -1), `length ${n}`).toBe(bytesToHex(sha256(message)));
    }
  });

  it('SHA-256 of random messages and HMAC-SHA256 with random keys (short, 64-byte, long)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 55 }), fc.uint8Array({ maxLength: 150 }), fc.integer(), (message, key, garbage) => {
        expect(ourSha256(message, garbage)).toBe(bytesToHex(sha256(message)));
        expect(ourHmac(key, message, undefined, ~garbage)).toBe(bytesToHex(hmac(sha256, key, message)));
      }),
      { numRuns: 5000 },
    );
  });

  it('keeps no state between calls: two keys interleaved, each MAC its own', () => {
    const keys = [ascii('key a'), ascii('key b')] as const;
    const macs = keys.map((key) => new ShortHmac(key));
    for (let i = 0; i < 50; i++) {
      const message = ascii(`message ${i}`);
      expect(ourHmac(keys[i % 2]!, message, macs[i % 2])).toBe(bytesToHex(hmac(sha256, keys[i % 2]!, message)));
      expect(ourSha256(message)).toBe(bytesToHex(sha256(message)));
    }
  });

  it('refuses a message that does not fit one block', () => {
    expect(() => padBlock(new Int32Array(16), 56, 0)).toThrow(RangeError);
  });
});

describe('sha256 and hmacSha256 (messages and keys of any length: the cold paths)', () => {
  const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));

  it('gives the published digests: FIPS 180-2 B.1, B.2 (two blocks) and a million "a"s', () => {
    expect(bytesToHex(ourSha256Bytes(ascii('')))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(bytesToHex(ourSha256Bytes(ascii('abc')))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(bytesToHex(ourSha256Bytes(ascii('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')))).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
    expect(bytesToHex(ourSha256Bytes(new Uint8Array(1_000_000).fill(0x61)))).toBe('cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0');
  });

  it('gives RFC 4231 test case 6 (a 131-byte key, hashed first) and equals @noble/hashes on random keys and messages', () => {
    const key = new Uint8Array(131).fill(0xaa);
    expect(bytesToHex(hmacSha256(key, ascii('Test Using Larger Than Block-Size Key - Hash Key First')))).toBe(
      '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 300 }), (k, m) => {
        expect(bytesToHex(ourSha256Bytes(m))).toBe(bytesToHex(sha256(m)));
        expect(bytesToHex(hmacSha256(k, m))).toBe(bytesToHex(hmac(sha256, k, m)));
      }),
      { numRuns: 500 },
    );
  });
});

describe('KeyedHmac (messages of any length: the Payment scheme binding)', () => {
  it('equals @noble/hashes HMAC-SHA256 at every block boundary and for random keys and messages', () => {
    const key = new Uint8Array(32).map((_, i) => i * 7 + 1);
    const mac = new KeyedHmac(key);
    for (const length of [0, 1, 3, 4, 54, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000, 1323]) {
      const message = new Uint8Array(length).map((_, i) => (i * 31 + length) & 0xff);
      expect(bytesToHex(mac.mac(message)), `length ${length}`).toBe(bytesToHex(hmac(sha256, key, message)));
    }
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 100 }), fc.uint8Array({ maxLength: 2000 }), (k, m) => {
        expect(bytesToHex(new KeyedHmac(k).mac(m))).toBe(bytesToHex(hmac(sha256, k, m)));
      }),
      { numRuns: 300 },
    );
  });

  it('resumes after the blocks a message shares with the one before, and only those: every MAC in a sequence of related messages is right', () => {
    // Messages built from a few 64-byte blocks, so consecutive ones share
    // leading blocks, differ in the first or a later one, run shorter or longer.
    const blocks = [0, 1, 2].map((seed) => new Uint8Array(64).map((_, i) => (i * 13 + seed * 101) & 0xff));
    const message = fc
      .tuple(fc.array(fc.integer({ min: 0, max: 2 }), { maxLength: 6 }), fc.uint8Array({ maxLength: 70 }))
      .map(([picked, tail]) => Uint8Array.from([...picked.flatMap((b) => [...blocks[b]!]), ...tail]));
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 80 }), fc.array(message, { minLength: 2, maxLength: 12 }), (key, messages) => {
        const mac = new KeyedHmac(key);
        for (const m of messages) expect(bytesToHex(mac.mac(m))).toBe(bytesToHex(hmac(sha256, key, m)));
      }),
      { numRuns: 400 },
    );
  });
});

describe('HmacChain (a macaroon signature chain: each link keyed by the MAC before it)', () => {
  const keyWords = (key: Uint8Array) =>
    Int32Array.from({ length: 8 }, (_, i) => (key[4 * i]! << 24) | (key[4 * i + 1]! << 16) | (key[4 * i + 2]! << 8) | key[4 * i + 3]!);

  it('equals @noble/hashes HMAC-SHA256 for every message length from 0 to 200, read where it stands in a larger buffer', () => {
    const chain = new HmacChain();
    const key = new Uint8Array(32).map((_, i) => i * 13 + 5);
    const buffer = new Uint8Array(300).map((_, i) => (i * 37 + 11) & 0xff);
    for (let length = 0; length <= 200; length++) {
      const from = length % 7;
      const out = new Int32Array(8).fill(-1);
      chain.mac(keyWords(key), buffer, from, from + length, out);
      expect(wordsHex(out), `length ${length}`).toBe(bytesToHex(hmac(sha256, key, buffer.subarray(from, from + length))));
    }
  });

  it('chains in place (the key words overwritten by the MAC) as HMAC(HMAC(k, m1), m2) ..., for random keys and messages', () => {
    const chain = new HmacChain();
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.array(fc.uint8Array({ maxLength: 150 }), { minLength: 1, maxLength: 5 }),
        (key, messages) => {
          const words = keyWords(key);
          let expected = key;
          for (const message of messages) {
            chain.mac(words, message, 0, message.length, words);
            expected = hmac(sha256, expected, message);
          }
          expect(wordsHex(words)).toBe(bytesToHex(expected));
        },
      ),
      { numRuns: 300 },
    );
  });
});
