// Challenge binding: the draft's seven-slot HMAC, with vectors computed
// outside this code (openssl, see each), the derived key kept apart from the
// token key, and rotation.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { Keyring, mintToken } from 'l402-paywall';
import { BINDING_KEY_LABEL, BindingKeyring, bindingInput, challengeId, deriveBindingKey, type BoundParameters } from '../../src/schemes/payment/binding.js';

const utf8 = (text: string) => new TextEncoder().encode(text);

// The core draft's example challenge ("Example Challenge"), its id recomputed.
const DRAFT_EXAMPLE: BoundParameters = {
  realm: 'api.example.com',
  method: 'example',
  intent: 'charge',
  request: 'eyJhbW91bnQiOiIxMDAwIiwiY3VycmVuY3kiOiJVU0QiLCJyZWNpcGllbnQiOiJhY2N0XzEyMyJ9',
  expires: '2025-01-15T12:05:00Z',
};
const VECTOR_KEY = 'mpp-test-vector-key-0123456789abcdef';

describe('the binding input and id', () => {
  it('joins the seven slots with "|", an absent one empty', () => {
    expect(bindingInput(DRAFT_EXAMPLE)).toBe(`api.example.com|example|charge|${DRAFT_EXAMPLE.request}|2025-01-15T12:05:00Z||`);
    expect(bindingInput({ ...DRAFT_EXAMPLE, expires: undefined, digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:', opaque: 'e30' })).toBe(
      `api.example.com|example|charge|${DRAFT_EXAMPLE.request}||sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:|e30`,
    );
  });

  it('is base64url(HMAC-SHA256) without padding, as computed by openssl', () => {
    // printf '%s' "$input" | openssl dgst -sha256 -hmac "$key" -binary | base64 | tr '+/' '-_' | tr -d '='
    expect(challengeId(utf8(VECTOR_KEY), DRAFT_EXAMPLE)).toBe('itqFS4LCMSUlw85ozw85CykUGeDMHX7Fq4FZSLm1wo0');
    // The same with expires absent and a digest: a different slot, a different id.
    expect(challengeId(utf8(VECTOR_KEY), { ...DRAFT_EXAMPLE, expires: undefined, digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:' })).toBe(
      'xRSoFcxUZb1Yc2fX33X_7UL_blp5dxMMjmwtftOneMI',
    );
  });

  it('tells the optional slots apart: (expires, no digest) is not (no expires, digest)', () => {
    const key = utf8(VECTOR_KEY);
    expect(challengeId(key, { ...DRAFT_EXAMPLE, expires: 'x', digest: undefined })).not.toBe(
      challengeId(key, { ...DRAFT_EXAMPLE, expires: undefined, digest: 'x' }),
    );
  });

  it('refuses a slot holding "|", which would make the join ambiguous', () => {
    const shifted = { ...DRAFT_EXAMPLE, realm: 'api.example.com|example', method: 'charge' };
    expect(bindingInput(shifted)).toBeUndefined();
    expect(() => challengeId(utf8(VECTOR_KEY), shifted)).toThrow(TypeError);
    for (const slot of ['realm', 'method', 'intent', 'request', 'expires', 'digest', 'opaque'] as const) {
      expect(bindingInput({ ...DRAFT_EXAMPLE, [slot]: 'a|b' }), slot).toBeUndefined();
    }
  });
});

describe('binding keys', () => {
  const SECRET = '0123456789abcdef0123456789abcdef';

  it('are HMAC-SHA256(secret, label), as computed by openssl', () => {
    // printf '%s' 'MPP/v1 challenge binding' | openssl dgst -sha256 -hmac "$secret"
    expect(BINDING_KEY_LABEL).toBe('MPP/v1 challenge binding');
    expect(bytesToHex(deriveBindingKey(utf8(SECRET)))).toBe('d671ac3e569e315dc6a9445c47352a9f1c20b84e0590a01b78033df40a22e2a0');
    // openssl dgst -sha256 -mac HMAC -macopt hexkey:<the key above>, over the draft example's input
    expect(BindingKeyring.fromSecrets(SECRET).issue(DRAFT_EXAMPLE)).toBe('puwXax1Mq0Oos5uYXrInawnKQDo6oIaIe6UIqIIH10I');
  });

  it('are not the secret itself, which keys the L402 token HMACs', () => {
    // With the secret as key (what a token's MACs use) the id would be this one:
    const underSecret = challengeId(utf8(SECRET), DRAFT_EXAMPLE);
    expect(underSecret).toBe('rxDEjBac5zbx0VazC7pv6Pi7Ea7EDoDp9_HLPnR1bMI');
    const ring = BindingKeyring.fromSecrets(SECRET);
    expect(ring.verify(underSecret, DRAFT_EXAMPLE)).toBe(false);
    // Nor any of the token keyring's derived values: its key id and a caveat key.
    const derived = bytesToHex(deriveBindingKey(utf8(SECRET)));
    expect(derived).not.toBe(bytesToHex(utf8(SECRET)));
    expect(derived).not.toBe(bytesToHex(hmac(sha256, utf8(SECRET), utf8('L402/v1 key id'))));
    expect(derived).not.toBe(bytesToHex(hmac(sha256, utf8(SECRET), utf8('L402/v1 caveats\n'))));
    // The same secrets still configure both.
    expect(() => mintToken(new Keyring([SECRET]), { paymentHash: 'ab'.repeat(32), expiresAt: 2_000_000_000 })).not.toThrow();
  });

  it('are checked as token secrets are, with the same messages', () => {
    for (const bad of [[], ['short'], [SECRET, 'short'], [undefined as unknown as string]]) {
      let tokenMessage = '';
      try {
        new Keyring(bad);
      } catch (error) {
        tokenMessage = (error as Error).message;
      }
      expect(() => BindingKeyring.fromSecrets(bad), JSON.stringify(bad)).toThrow(tokenMessage);
    }
    expect(() => new BindingKeyring([])).toThrow(TypeError);
    expect(() => new BindingKeyring([new Uint8Array(31)])).toThrow(TypeError);
  });
});

describe('BindingKeyring', () => {
  const OLD = 'the-old-secret-0123456789abcdef-0123';
  const NEW = 'the-new-secret-0123456789abcdef-0123';

  it('verifies what it issued, and nothing changed', () => {
    const ring = BindingKeyring.fromSecrets(NEW);
    const id = ring.issue(DRAFT_EXAMPLE);
    expect(ring.verify(id, DRAFT_EXAMPLE)).toBe(true);
    for (const [slot, value] of [
      ['realm', 'evil.example.com'],
      ['method', 'lightning'],
      ['intent', 'session'],
      ['request', 'e30'],
      ['expires', '2099-01-01T00:00:00Z'],
      ['digest', 'sha-256=:AAAA:'],
      ['opaque', 'e30'],
    ] as const) {
      expect(ring.verify(id, { ...DRAFT_EXAMPLE, [slot]: value }), slot).toBe(false);
    }
    expect(ring.verify(`${id.slice(0, -1)}${id.endsWith('A') ? 'B' : 'A'}`, DRAFT_EXAMPLE)).toBe(false);
    expect(ring.verify(`${id}=`, DRAFT_EXAMPLE)).toBe(false);
    expect(ring.verify('', DRAFT_EXAMPLE)).toBe(false);
  });

  it('verifies over the UTF-8 of every slot, short or long, as challengeId MACs it', () => {
    // The verifier writes the slots' bytes itself (short ASCII ones by character, the rest by TextEncoder, a very long input into a buffer of its own).
    const ring = BindingKeyring.fromSecrets(NEW);
    const key = deriveBindingKey(new TextEncoder().encode(NEW));
    const cases: BoundParameters[] = [
      { ...DRAFT_EXAMPLE, realm: 'café.example' },
      { ...DRAFT_EXAMPLE, realm: 'x'.repeat(64), method: 'lightning', digest: '\u{1F600} and a lone \ud800 surrogate' },
      { ...DRAFT_EXAMPLE, realm: 'x'.repeat(65), opaque: 'ü'.repeat(300) },
      { ...DRAFT_EXAMPLE, request: 'A'.repeat(30_000), digest: '€'.repeat(20_000) },
      DRAFT_EXAMPLE,
    ];
    for (const parameters of cases) {
      const id = challengeId(key, parameters);
      expect(ring.verify(id, parameters), parameters.realm).toBe(true);
      expect(ring.verify(id, { ...parameters, realm: `${parameters.realm}.` }), parameters.realm).toBe(false);
    }
  });

  it('rotates: the newest secret issues, the older ones still verify', () => {
    const before = BindingKeyring.fromSecrets(OLD);
    const after = BindingKeyring.fromSecrets([NEW, OLD]);
    const issuedBefore = before.issue(DRAFT_EXAMPLE);
    expect(after.verify(issuedBefore, DRAFT_EXAMPLE)).toBe(true);
    expect(after.issue(DRAFT_EXAMPLE)).toBe(BindingKeyring.fromSecrets(NEW).issue(DRAFT_EXAMPLE));
    // Once the old secret is removed, what it issued is no longer accepted.
    expect(BindingKeyring.fromSecrets(NEW).verify(issuedBefore, DRAFT_EXAMPLE)).toBe(false);
    // And another server's challenges never were.
    expect(before.verify(after.issue(DRAFT_EXAMPLE), DRAFT_EXAMPLE)).toBe(false);
  });

  it('keeps its own copy of the keys', () => {
    const key = hexToBytes('11'.repeat(32));
    const ring = new BindingKeyring([key]);
    const id = ring.issue(DRAFT_EXAMPLE);
    key.fill(0);
    expect(ring.verify(id, DRAFT_EXAMPLE)).toBe(true);
  });
});
