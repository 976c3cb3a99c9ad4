// equalsBase64Url (crypto/base64url-compare.ts), which checks a Payment
// challenge id against the MAC without writing the MAC out: against node's
// own base64url encoder on every length around the 3-byte groups and on
// random bytes, and refusing every text that is not exactly that encoding.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { equalsBase64Url } from '../../src/crypto/base64url-compare.js';

describe('equalsBase64Url', () => {
  it("takes node's base64url of every byte value in every position of a group", () => {
    for (let value = 0; value < 256; value++) {
      for (const length of [1, 2, 3, 4, 5, 6]) {
        const bytes = new Uint8Array(length).fill(value);
        bytes[length - 1] = 255 - value;
        expect(equalsBase64Url(bytes, Buffer.from(bytes).toString('base64url')), `${value}/${length}`).toBe(true);
      }
    }
    expect(equalsBase64Url(new Uint8Array(0), '')).toBe(true);
  });

  it("agrees with node's encoder on random bytes, and refuses any one character changed", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 80 }), fc.nat(), fc.integer({ min: 1, max: 127 }), (bytes, where, delta) => {
        const text = Buffer.from(bytes).toString('base64url');
        expect(equalsBase64Url(bytes, text)).toBe(true);
        const at = where % text.length;
        const changed = text.slice(0, at) + String.fromCharCode((text.charCodeAt(at) + delta) % 128) + text.slice(at + 1);
        expect(equalsBase64Url(bytes, changed)).toBe(false);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses the same bytes spelled otherwise: padded, standard alphabet, stray bits in the last digit, another length', () => {
    const mac = new Uint8Array(randomBytes(32));
    mac[0] = 0xfb; // base64 "+" or "/" early on, "-" or "_" in base64url
    mac[1] = 0xff;
    const text = Buffer.from(mac).toString('base64url');
    expect(text).toHaveLength(43);
    expect(equalsBase64Url(mac, text)).toBe(true);
    expect(equalsBase64Url(mac, `${text}=`)).toBe(false);
    expect(equalsBase64Url(mac, Buffer.from(mac).toString('base64').replace(/=+$/, ''))).toBe(false);
    // The last digit carries two bits past the 32nd byte: set, they decode to the same bytes, but are not what the server writes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const stray = text.slice(0, -1) + alphabet[alphabet.indexOf(text.at(-1)!) | 1];
    expect(Buffer.from(stray, 'base64url').equals(Buffer.from(mac))).toBe(true);
    expect(equalsBase64Url(mac, stray)).toBe(false);
    expect(equalsBase64Url(mac, text.slice(0, -1))).toBe(false);
    expect(equalsBase64Url(mac, '')).toBe(false);
  });
});
