import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHash, createHmac } from 'node:crypto';
import { ShortHmac, padBlock, sha256Block, sha256Short } from '../../packages/l402-paywall/src/l402/sha256-block.js';

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

describe('fixed-size SHA-256 and HMAC (our unrolled compression)', () => {
  it('equals node:crypto SHA-256 for every length from 0 to 55 bytes', () => {
    const out = new Uint8Array(32);
    for (let n = 0; n <= 55; n++) {
      const message = new Uint8Array(n).map((_, i) => (i * 37 + n) & 255);
      sha256Short(message, out);
      expect(Buffer.from(out).toString('hex'), `length ${n}`).toBe(createHash('sha256').update(message).digest('hex'));
    }
  });

  it('equals node:crypto HMAC-SHA256 for random keys (short, 64-byte, long) and messages up to 55 bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 150 }), fc.uint8Array({ maxLength: 55 }), (key, message) => {
        const out = new Uint8Array(32);
        new ShortHmac(key).macInto(message, out);
        expect(Buffer.from(out).toString('hex')).toBe(createHmac('sha256', key).update(message).digest('hex'));
      }),
      { numRuns: 2000 },
    );
  });

  it('keeps no state between calls (interleaved keys and messages)', () => {
    const a = new ShortHmac(Buffer.from('key a'));
    const b = new ShortHmac(Buffer.from('key b'));
    const out = new Uint8Array(32);
    for (let i = 0; i < 50; i++) {
      const m = Buffer.from(`message ${i}`);
      (i % 2 ? a : b).macInto(m, out);
      expect(Buffer.from(out).toString('hex')).toBe(
        createHmac('sha256', i % 2 ? 'key a' : 'key b')
          .update(m)
          .digest('hex'),
      );
      sha256Short(m, out);
      expect(Buffer.from(out).toString('hex')).toBe(createHash('sha256').update(m).digest('hex'));
    }
  });

  it('equals node:crypto SHA-256 for random messages up to 55 bytes', () => {
    const out = new Uint8Array(32);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 55 }), (message) => {
        sha256Short(message, out);
        expect(Buffer.from(out).toString('hex')).toBe(createHash('sha256').update(message).digest('hex'));
      }),
      { numRuns: 5000 },
    );
  });

  it('word-level calls (padBlock, sha256Block, macBlock) equal node:crypto, whatever the block held before', () => {
    const out = new Int32Array(8);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 55 }), fc.uint8Array({ maxLength: 100 }), fc.integer(), (message, key, garbage) => {
        const block = dirtyBlock(message, garbage);
        padBlock(block, message.length, 0);
        sha256Block(block, out);
        expect(wordsHex(out)).toBe(createHash('sha256').update(message).digest('hex'));

        const keyed = dirtyBlock(message, ~garbage);
        padBlock(keyed, message.length, 64);
        new ShortHmac(key).macBlock(keyed, out);
        expect(wordsHex(out)).toBe(createHmac('sha256', key).update(message).digest('hex'));
      }),
      { numRuns: 3000 },
    );
  });

  it('refuses a message that does not fit one block', () => {
    expect(() => sha256Short(new Uint8Array(56), new Uint8Array(32))).toThrow(RangeError);
    expect(() => padBlock(new Int32Array(16), 56, 0)).toThrow(RangeError);
  });
});
