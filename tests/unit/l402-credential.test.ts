import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parseCredential } from '../../lib/l402/credential.js';

const TOKEN = 'eyJ2IjoxfQ';
const PRE = 'ab'.repeat(32);

describe('parseCredential', () => {
  it('accepts L402 and LSAT in any case, base64url or padded standard base64, any-case hex', () => {
    for (const header of [`L402 ${TOKEN}:${PRE}`, `l402 ${TOKEN}:${PRE}`, `LSAT ${TOKEN}:${PRE}`, `lSaT ${TOKEN}:${PRE}`, `L402   ${TOKEN}:${PRE.toUpperCase()}  `]) {
      expect(parseCredential(header), header).toEqual({ ok: true, credential: { token: TOKEN, preimage: PRE } });
    }
    expect(parseCredential(`L402 ab+/cd==:${PRE}`)).toEqual({ ok: true, credential: { token: 'ab+/cd==', preimage: PRE } });
  });

  it('names what is wrong', () => {
    expect(parseCredential(null)).toMatchObject({ ok: false, rejection: { code: 'PAYMENT_REQUIRED' } });
    expect(parseCredential('')).toMatchObject({ ok: false, rejection: { code: 'PAYMENT_REQUIRED' } });
    for (const header of ['Bearer abc', `L402${TOKEN}:${PRE}`, `L402 ${TOKEN}`, `L402 :${PRE}`, `L402 ${TOKEN}:`, `L402 ${TOKEN}:${PRE}:${PRE}`, `Basic ${TOKEN}:${PRE}`]) {
      expect(parseCredential(header), header).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_CREDENTIAL' } });
    }
    for (const preimage of ['zz'.repeat(32), 'ab'.repeat(32) + 'x', 'ab', 'ab'.repeat(31), 'ab'.repeat(33), 'ab'.repeat(32) + 'a']) {
      expect(parseCredential(`L402 ${TOKEN}:${preimage}`), preimage).toMatchObject({ ok: false, rejection: { code: 'INVALID_PREIMAGE' } });
    }
    expect(parseCredential(`L402 ${'a'.repeat(9000)}:${PRE}`)).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_CREDENTIAL' } });
  });

  it('never throws on random strings and only accepts well-formed ones (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (header) => {
        const result = parseCredential(header);
        if (result.ok) {
          expect(result.credential.preimage).toMatch(/^[0-9a-f]{64}$/);
          expect(result.credential.token).toMatch(/^[A-Za-z0-9+/_=-]+$/);
        }
      }),
      { numRuns: 5000 },
    );
  });

  it('never throws on random bytes decoded as latin1, and is linear on long hostile input', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        parseCredential(Buffer.from(bytes).toString('latin1'));
      }),
      { numRuns: 3000 },
    );
    const start = performance.now();
    parseCredential('L402 ' + 'a'.repeat(8000) + '!');
    parseCredential('L402 ' + 'a:'.repeat(4000));
    expect(performance.now() - start).toBeLessThan(50); // no catastrophic backtracking
  });
});
