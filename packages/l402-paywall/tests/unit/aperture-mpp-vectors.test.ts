// Lightning Labs' Aperture's cross-implementation vectors for the Payment
// scheme (../fixtures/aperture-mpp/, its source named in the README there),
// run against our codecs (src/schemes/payment/): JCS, base64url, challenge
// headers and lists, challenge ids (the HMAC binding), credentials, receipts.
// Where our reading is deliberately wider or narrower than Aperture's, the
// vector is still run and the difference asserted, with the reason.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { bindingInput, challengeId } from '../../src/schemes/payment/binding.js';
import { formatChallenge, readPaymentAuthorization, plainCredential, type PaymentChallenge } from '../../src/schemes/payment/charge.js';
import { parsePaymentChallenges } from '../../src/schemes/payment/challenge.js';
import { canonicalJson } from '../../src/schemes/payment/jcs.js';
import { decodeBase64, encodeJson, parseJsonBytes } from '../../src/schemes/payment/wire.js';
import { base64UrlEncode } from '../../src/crypto/encoding.js';

interface Vectors {
  hmacSecretHex: string;
  canonicalization: { name: string; input: string; canonical?: string; error?: boolean }[];
  base64url: { name: string; encoded: string; decodedHex?: string; canonical: boolean; error?: boolean }[];
  challengeHeaders: { name: string; params: PaymentChallenge; header: string; parsed: PaymentChallenge }[];
  challengeLists: { name: string; header: string; challenges?: PaymentChallenge[]; error?: boolean }[];
  challengeIds: { name: string; params: PaymentChallenge; hmacInput: string }[];
  credentials: { name: string; credentialJson: string; header: string; error?: boolean }[];
  receipts: { name: string; receiptJson: string; header: string }[];
}

const vectors = JSON.parse(readFileSync(new URL('../fixtures/aperture-mpp/vectors.json', import.meta.url), 'utf8')) as Vectors;
const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe("Aperture's MPP vectors", () => {
  it('canonicalization: our JCS gives the canonical text of every input', () => {
    for (const v of vectors.canonicalization) {
      // Malformed input never reaches the canonicaliser: JSON.parse refuses it first.
      if (v.error) expect(() => JSON.parse(v.input), v.name).toThrow(SyntaxError);
      else expect(canonicalJson(JSON.parse(v.input)), v.name).toBe(v.canonical);
    }
    expect(vectors.canonicalization.length).toBeGreaterThan(20);
  });

  it('base64url: what we write is the canonical form; what we read agrees, except where our reader is knowingly wider', () => {
    // draft-lightning-charge "Encoding Conventions": readers take base64url with or without padding, and this
    // library's reader also takes the standard alphabet and ignores a last digit's spare bits (as atob does);
    // Aperture's rejects both. We never write either, and a challenge's id binds the bytes as we wrote them.
    const wider = new Set(['reject non-zero trailing bits', 'reject standard rather than url alphabet']);
    for (const v of vectors.base64url) {
      const decoded = v.encoded === '' ? new Uint8Array(0) : decodeBase64(v.encoded);
      if (v.error && !wider.has(v.name)) expect(decoded, v.name).toBeUndefined();
      else if (v.error) expect(decoded, `${v.name}: read by our wider reader`).toBeDefined();
      else {
        expect(hex(decoded!), v.name).toBe(v.decodedHex ?? '');
        if (v.canonical) expect(base64UrlEncode(decoded!), v.name).toBe(v.encoded);
      }
    }
  });

  it('challenge headers: we format each challenge as the header, and read the header back to its parameters', () => {
    for (const v of vectors.challengeHeaders) {
      const obsText = /[^\t\x20-\x7e]/.test(Object.values(v.params).join(''));
      // Our writer refuses what RFC 9110 calls obs-text (bytes above 0x7e): a header of ours carries ASCII only.
      if (obsText) expect(() => formatChallenge(v.params), v.name).toThrow(TypeError);
      else expect(formatChallenge(v.params), v.name).toBe(v.header);
      const read = parsePaymentChallenges(v.header);
      expect(read.challenges, v.name).toEqual([v.parsed]);
    }
  });

  it('challenge lists: every Payment challenge of a joined header, other schemes and incomplete offers skipped', () => {
    for (const v of vectors.challengeLists) {
      const read = parsePaymentChallenges(v.header);
      if (v.error) expect(read.challenges, v.name).toEqual([]);
      else expect(read.challenges, v.name).toEqual(v.challenges);
    }
  });

  it('challenge ids: the same HMAC input and id; a "|" inside a slot is refused rather than bound ambiguously', () => {
    const key = Buffer.from(vectors.hmacSecretHex, 'hex');
    for (const v of vectors.challengeIds) {
      const { id, ...params } = v.params;
      if (Object.values(params).some((value) => typeof value === 'string' && value.includes('|'))) {
        // Aperture records that such parameter sets share an HMAC input; we never issue or verify them.
        expect(bindingInput(params), v.name).toBeUndefined();
        expect(() => challengeId(key, params), v.name).toThrow(TypeError);
      } else {
        expect(bindingInput(params), v.name).toBe(v.hmacInput);
        expect(challengeId(key, params), v.name).toBe(id);
      }
    }
  });

  it('credentials: each header reads to its JSON; each refused one is refused', () => {
    for (const v of vectors.credentials) {
      const reading = readPaymentAuthorization(v.header);
      if (v.error) {
        // Read as a whole credential: the decoding, then its parts (a challenge with an id, a payload with a preimage).
        const refused = !reading.ok || plainCredential(reading.json) === undefined;
        // "non-zero trailing bits": our wider base64 reader takes "AB" as a byte, which is no JSON.
        expect(refused, v.name).toBe(true);
      } else {
        expect(reading.ok, v.name).toBe(true);
        expect(reading.ok && reading.json, v.name).toEqual(JSON.parse(v.credentialJson));
      }
    }
  });

  it('receipts: each header decodes to its JSON, and a receipt we write reads back to the same fields', () => {
    for (const v of vectors.receipts) {
      const bytes = decodeBase64(v.header)!;
      // Read as text first: JSON.parse would round refunds beyond 2^53, which the vectors are there to catch.
      expect(new TextDecoder().decode(bytes), v.name).toBe(v.receiptJson);
      const value = parseJsonBytes(bytes) as Record<string, unknown>;
      expect(value, v.name).toEqual(JSON.parse(v.receiptJson));
      const safe = Object.values(value).every((field) => typeof field !== 'number' || Number.isSafeInteger(field));
      if (safe) expect(parseJsonBytes(decodeBase64(encodeJson(value))!), v.name).toEqual(value);
    }
  });
});
