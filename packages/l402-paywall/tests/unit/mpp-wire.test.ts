// The Payment scheme's encodings: RFC 8785 (JCS) against the RFC's own
// examples and mppx's canonicaliser, base64url with and without padding
// (RFC 4648's test vectors), RFC 3339 times.
import fc from 'fast-check';
import { PaymentRequest } from 'mppx';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/schemes/payment/jcs.js';
import { decodeBase64, encodeJson, formatTime, parseJsonBytes, parseTime } from '../../src/schemes/payment/wire.js';
import { anyText } from '../support/mpp.js';

describe('canonicalJson (RFC 8785)', () => {
  it('serialises the RFC section 3.2.2 example as the RFC does', () => {
    const input = String.raw`{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/","literals":[null,true,false]}`;
    const expected = String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`;
    expect(canonicalJson(JSON.parse(input))).toBe(expected);
  });

  it('sorts members by UTF-16 code units (the RFC section 3.2.3 example)', () => {
    const input = String.raw`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`;
    // Read from the text: a parsed object would list the integer-like name "1" first whatever the order.
    const values = [...canonicalJson(JSON.parse(input)).matchAll(/:"([^"]*)"/g)].map((m) => m[1]);
    expect(values).toEqual([
      'Carriage Return',
      'One',
      'Control',
      'Latin Small Letter O With Diaeresis',
      'Euro Sign',
      'Emoji: Grinning Face',
      'Hebrew Letter Dalet With Dagesh',
    ]);
  });

  it('nests, leaves out undefined members and refuses what JSON cannot hold', () => {
    expect(canonicalJson({ b: [{ z: 1, a: { y: null, x: false } }], a: 'é', c: undefined })).toBe('{"a":"é","b":[{"a":{"x":false,"y":null},"z":1}]}');
    for (const value of [Number.NaN, Number.POSITIVE_INFINITY, undefined, () => 1, 1n, { a: [Number.NaN] }]) {
      expect(() => canonicalJson(value), String(value)).toThrow(TypeError);
    }
  });

  it("gives the core draft's example request its base64url text", () => {
    // draft-httpauth-payment, "Example Challenge": request decodes to {"amount":"1000","currency":"USD","recipient":"acct_123"}.
    expect(encodeJson({ recipient: 'acct_123', currency: 'USD', amount: '1000' })).toBe(
      'eyJhbW91bnQiOiIxMDAwIiwiY3VycmVuY3kiOiJVU0QiLCJyZWNpcGllbnQiOiJhY2N0XzEyMyJ9',
    );
  });

  it("shows the Lightning draft's example request is not JCS (its methodDetails are not sorted)", () => {
    const draftRequest =
      'eyJhbW91bnQiOiIxMDAiLCJjdXJyZW5jeSI6IkJUQyIsImRlc2NyaXB0aW9uIjoiV2VhdGhlciByZXBvcnQgZm9yIDk0MTA3IiwibWV0aG9kRGV0YWlscyI6eyJpbnZvaWNlIjoibG5iYzF1MXAuLi4iLCJwYXltZW50SGFzaCI6ImJjMjMwODQ3Li4uIiwibmV0d29yayI6Im1haW5uZXQifX0';
    const decoded = parseJsonBytes(decodeBase64(draftRequest)!);
    expect(decoded).toMatchObject({ currency: 'BTC', methodDetails: { network: 'mainnet' } });
    expect(encodeJson(decoded)).not.toBe(draftRequest);
  });

  it('agrees with mppx (ox) on any JSON object', () => {
    fc.assert(
      fc.property(fc.dictionary(anyText(), fc.jsonValue()), (value) => {
        expect(encodeJson(value)).toBe(PaymentRequest.serialize(value));
      }),
      { numRuns: 500 },
    );
  });

  it('is JSON that reads back as the value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(JSON.parse(canonicalJson(value))).toEqual(JSON.parse(JSON.stringify(value)));
      }),
    );
  });
});

describe('base64url', () => {
  // RFC 4648 section 10, in the URL-safe alphabet.
  const VECTORS: [string, string, string][] = [
    ['f', 'Zg', 'Zg=='],
    ['fo', 'Zm8', 'Zm8='],
    ['foo', 'Zm9v', 'Zm9v'],
    ['foob', 'Zm9vYg', 'Zm9vYg=='],
    ['fooba', 'Zm9vYmE', 'Zm9vYmE='],
    ['foobar', 'Zm9vYmFy', 'Zm9vYmFy'],
  ];

  it('writes without padding and reads with or without it', () => {
    for (const [text, bare, padded] of VECTORS) {
      expect(encodeJson(text)).toBe(Buffer.from(JSON.stringify(text)).toString('base64url'));
      expect(new TextDecoder().decode(decodeBase64(bare)), bare).toBe(text);
      expect(new TextDecoder().decode(decodeBase64(padded)), padded).toBe(text);
    }
  });

  it('uses - and _ (and still reads + and /)', () => {
    expect(Array.from(decodeBase64('-_8')!)).toEqual([0xfb, 0xff]);
    expect(Array.from(decodeBase64('+/8=')!)).toEqual([0xfb, 0xff]);
  });

  it('refuses what is not base64, and what is too long', () => {
    for (const text of ['', 'Z', 'Zg=', 'Zg===', 'Z g=', 'Zm9v\n', 'Zé==', '****']) expect(decodeBase64(text), JSON.stringify(text)).toBeUndefined();
    expect(decodeBase64('A'.repeat(8192))).toBeDefined();
    expect(decodeBase64('A'.repeat(8196))).toBeUndefined();
    expect(decodeBase64('A'.repeat(100), 64)).toBeUndefined();
  });

  it('reads JSON only from UTF-8', () => {
    expect(parseJsonBytes(new TextEncoder().encode('{"a":"é"}'))).toEqual({ a: 'é' });
    expect(parseJsonBytes(Uint8Array.of(0x22, 0xc3, 0x22))).toBeUndefined(); // a truncated UTF-8 sequence
    expect(parseJsonBytes(Uint8Array.of(0xef, 0xbb, 0xbf, 0x31))).toBeUndefined(); // a byte-order mark
    expect(parseJsonBytes(new TextEncoder().encode('{"a":'))).toBeUndefined();
  });
});

describe('RFC 3339 times', () => {
  const at = Date.UTC(2025, 0, 15, 12, 5) / 1000;

  it('writes UTC to the second', () => {
    expect(formatTime(at)).toBe('2025-01-15T12:05:00Z');
    expect(formatTime(at + 0.999)).toBe('2025-01-15T12:05:00Z');
  });

  it('reads any offset and fractions', () => {
    expect(parseTime('2025-01-15T12:05:00Z')).toBe(at);
    expect(parseTime('2025-01-15t12:05:00z')).toBe(at);
    expect(parseTime('2025-01-15T13:35:00+01:30')).toBe(at);
    expect(parseTime('2025-01-15T07:05:00-05:00')).toBe(at);
    expect(parseTime('2025-01-15T12:05:00.25Z')).toBe(at + 0.25);
    expect(parseTime('2024-02-29T00:00:00Z')).toBe(Date.UTC(2024, 1, 29) / 1000);
  });

  it('refuses other formats and impossible dates', () => {
    for (const text of [
      '2025-02-29T00:00:00Z',
      '2025-01-32T00:00:00Z',
      '2025-13-01T00:00:00Z',
      '2025-01-15T24:00:00Z',
      '2025-01-15T12:60:00Z',
      '2025-01-15T12:05:60Z',
      '2025-01-15T12:05:00+24:00',
      '2025-01-15T12:05:00',
      '2025-01-15 12:05:00Z',
      '2025-01-15T12:05Z',
      'Wed, 15 Jan 2025 12:05:00 GMT',
      '1736942700',
      `2025-01-15T12:05:00.${'1'.repeat(40)}Z`,
    ]) {
      expect(parseTime(text), text).toBeUndefined();
    }
  });

  it('reads the form it writes by character as Date does, leap years and the first years of the calendar included', () => {
    // The 20-character form has a reader of its own (no regular expression): every second of every year it can hold.
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(100, 0, 1) / 1000, max: 253402300799 }), (seconds) => {
        const text = new Date(seconds * 1000).toISOString().replace('.000Z', 'Z');
        expect(parseTime(text), text).toBe(seconds);
        expect(parseTime(text.replace('T', 't').replace('Z', 'z')), text).toBe(seconds);
      }),
      { numRuns: 2000 },
    );
    for (const [text, seconds] of [
      ['2000-02-29T23:59:59Z', Date.UTC(2000, 1, 29, 23, 59, 59) / 1000],
      ['1900-03-01T00:00:00Z', Date.UTC(1900, 2, 1) / 1000],
      ['0100-01-01T00:00:00Z', Date.UTC(100, 0, 1) / 1000],
      ['1969-12-31T23:59:59Z', -1],
    ] as const) {
      expect(parseTime(text), text).toBe(seconds);
    }
    for (const text of [
      '1900-02-29T00:00:00Z',
      '2100-02-29T00:00:00Z',
      '2025-04-31T00:00:00Z',
      '2025-00-10T00:00:00Z',
      '2025-01-00T00:00:00Z',
      // Date.UTC reads years 0-99 as 1900-1999, which the reader has always refused.
      '0050-01-01T00:00:00Z',
      '2025-01-15X12:05:00Z',
      '2025-01-15T12:05:00Y',
      '2025-01-15T12-05-00Z',
      '2025-0a-15T12:05:00Z',
      '2025-01-15T12:05:0 Z',
      '+025-01-15T12:05:00Z',
    ]) {
      expect(parseTime(text), text).toBeUndefined();
    }
  });

  it('reads back what it writes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253402300799 }), (seconds) => {
        expect(parseTime(formatTime(seconds))).toBe(seconds);
      }),
    );
  });
});
