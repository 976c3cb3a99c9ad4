import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { createHash, createHmac } from 'node:crypto';
import { ShortHmac, sha256Short } from '../../lib/l402/sha256-block.js';

describe('fixed-size SHA-256 and HMAC on noble\'s compression function', () => {
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
      expect(Buffer.from(out).toString('hex')).toBe(createHmac('sha256', i % 2 ? 'key a' : 'key b').update(m).digest('hex'));
      sha256Short(m, out);
      expect(Buffer.from(out).toString('hex')).toBe(createHash('sha256').update(m).digest('hex'));
    }
  });
});
