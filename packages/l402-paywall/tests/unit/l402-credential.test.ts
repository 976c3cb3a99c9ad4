import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { parseCredential, verifyAuthorization } from 'l402-paywall';
import { base64Encode, base64ToBytes, base64UrlEncode } from '../../src/crypto/encoding.js';
import { Keyring, mintToken, verifyToken } from 'l402-paywall';

const TOKEN = 'eyJ2IjoxfQ';
const PRE = 'ab'.repeat(32);

describe('parseCredential', () => {
  it('accepts L402 and LSAT in any case, base64url or padded standard base64, any-case hex', () => {
    for (const header of [
      `L402 ${TOKEN}:${PRE}`,
      `l402 ${TOKEN}:${PRE}`,
      `LSAT ${TOKEN}:${PRE}`,
      `lSaT ${TOKEN}:${PRE}`,
      `L402   ${TOKEN}:${PRE.toUpperCase()}  `,
    ]) {
      expect(parseCredential(header), header).toEqual({ ok: true, credential: { token: TOKEN, preimage: PRE } });
    }
    expect(parseCredential(`L402 ab+/cd==:${PRE}`)).toEqual({ ok: true, credential: { token: 'ab+/cd==', preimage: PRE } });
  });

  it('names what is wrong', () => {
    expect(parseCredential(null)).toMatchObject({ ok: false, rejection: { code: 'PAYMENT_REQUIRED' } });
    expect(parseCredential('')).toMatchObject({ ok: false, rejection: { code: 'PAYMENT_REQUIRED' } });
    for (const header of [
      'Bearer abc',
      `L402${TOKEN}:${PRE}`,
      `L402 ${TOKEN}`,
      `L402 :${PRE}`,
      `L402 ${TOKEN}:`,
      `L402 ${TOKEN}:${PRE}:${PRE}`,
      `Basic ${TOKEN}:${PRE}`,
    ]) {
      expect(parseCredential(header), header).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_CREDENTIAL' } });
    }
    for (const preimage of ['zz'.repeat(32), 'ab'.repeat(32) + 'x', 'ab', 'ab'.repeat(31), 'ab'.repeat(33), 'ab'.repeat(32) + 'a']) {
      expect(parseCredential(`L402 ${TOKEN}:${preimage}`), preimage).toMatchObject({ ok: false, rejection: { code: 'INVALID_PREIMAGE' } });
    }
    expect(parseCredential(`L402 ${'a'.repeat(9000)}:${PRE}`)).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_CREDENTIAL' } });
  });

  // The reference: the header grammar read step by step, without a regex.
  const TOKEN_CHARS = new Set('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=-');
  type Reference = { ok: true; token: string; preimage: string } | { ok: false; code: string };
  const referenceParse = (header: string | null): Reference => {
    if (!header) return { ok: false, code: 'PAYMENT_REQUIRED' };
    if (header.length > 8192) return { ok: false, code: 'MALFORMED_CREDENTIAL' };
    const alone = referenceMacaroonAlone(header.trim());
    if (alone) return alone;
    // Fields joined by a comma (Aperture's LSAT and L402 fields): each one credential, all the same one.
    const fields = header.split(',');
    if (fields.length === 1) return referenceField(header);
    const each = fields.map(referenceField);
    const first = each[0]!;
    return first.ok && each.every((r) => r.ok && r.token === first.token && r.preimage === first.preimage)
      ? first
      : { ok: false, code: 'MALFORMED_CREDENTIAL' };
  };
  // `Macaroon <hex>` (the pipeline's reading of a Macaroon header): the bytes as standard base64, the preimage left to the caveat.
  const referenceMacaroonAlone = (text: string): Reference | undefined => {
    if (text.slice(0, 8).toLowerCase() !== 'macaroon') return undefined;
    let at = 8;
    while (text[at] === ' ' || text[at] === '\t') at++;
    const hex = text.slice(at);
    if (at === 8 || hex === '' || hex.length % 2 !== 0 || [...hex.toLowerCase()].some((c) => !'0123456789abcdef'.includes(c))) return undefined;
    return { ok: true, token: Buffer.from(hex, 'hex').toString('base64'), preimage: '' };
  };
  const referenceField = (field: string): Reference => {
    const text = field.trim();
    const scheme = text.slice(0, 4).toLowerCase();
    if (scheme !== 'l402' && scheme !== 'lsat') return { ok: false, code: 'MALFORMED_CREDENTIAL' };
    let at = 4;
    while (text[at] === ' ' || text[at] === '\t') at++;
    if (at === 4) return { ok: false, code: 'MALFORMED_CREDENTIAL' };
    const rest = text.slice(at);
    const colon = rest.indexOf(':');
    if (colon <= 0) return { ok: false, code: 'MALFORMED_CREDENTIAL' };
    const token = rest.slice(0, colon);
    if ([...token].some((c) => !TOKEN_CHARS.has(c))) return { ok: false, code: 'MALFORMED_CREDENTIAL' };
    const preimage = rest.slice(colon + 1);
    if (preimage === '' || preimage.includes(':') || /\s/.test(preimage)) return { ok: false, code: 'MALFORMED_CREDENTIAL' };
    const lower = preimage.toLowerCase();
    if (lower.length !== 64 || [...lower].some((c) => !'0123456789abcdef'.includes(c))) return { ok: false, code: 'INVALID_PREIMAGE' };
    return { ok: true, token, preimage: lower };
  };
  const parsed = (header: string | null): ReturnType<typeof referenceParse> => {
    const result = parseCredential(header);
    return result.ok ? { ok: true, token: result.credential.token, preimage: result.credential.preimage } : { ok: false, code: result.rejection.code };
  };

  it('answers what a plain step-by-step reading of the grammar answers, on random strings (property)', () => {
    const near = fc
      .tuple(
        fc.constantFrom('L402', 'lsat', 'LSAT', 'l402', 'L40', 'Bearer', ''),
        fc.constantFrom(' ', '\t', '  ', '', ':'),
        fc.string({ maxLength: 40 }),
        fc.constantFrom(':', '', '::'),
        fc.oneof(fc.constant(PRE), fc.constant(PRE.toUpperCase()), fc.string({ maxLength: 70 })),
        fc.constantFrom('', ' ', '\t', '\n', '\u00a0'),
      )
      .map((parts) => parts.join(''));
    const outcomes = new Set<string>();
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 300 }), near), (header) => {
        const answer = parsed(header);
        expect(answer, JSON.stringify(header)).toEqual(referenceParse(header));
        outcomes.add(answer.ok ? 'ok' : answer.code);
      }),
      { numRuns: 5000 },
    );
    // The generators reach every answer.
    expect([...outcomes].sort()).toEqual(['INVALID_PREIMAGE', 'MALFORMED_CREDENTIAL', 'PAYMENT_REQUIRED', 'ok']);
  });

  it('answers as the reference on random bytes read as latin1, and on long hostile input', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 600 }), (bytes) => {
        const header = Buffer.from(bytes).toString('latin1');
        expect(parsed(header)).toEqual(referenceParse(header));
      }),
      { numRuns: 3000 },
    );
    // Inputs that make a backtracking pattern explode: the answers are right, and
    // an exponential reading would stall the test past its timeout (no clock here).
    for (const header of [
      'L402 ' + 'a'.repeat(8000) + '!',
      'L402 ' + 'a:'.repeat(4000),
      'L402 ' + 'a'.repeat(8200) + ':' + PRE,
      'L402 ' + '\t'.repeat(8000) + 'x',
    ]) {
      expect(parsed(header)).toEqual(referenceParse(header));
      expect(parsed(header)).toEqual({ ok: false, code: 'MALFORMED_CREDENTIAL' });
    }
  });
});

describe('verifyAuthorization', () => {
  const keyring = new Keyring(['credential-test-secret-'.padEnd(64, 'x')]);
  const now = Math.floor(Date.now() / 1000);
  const paid = (caveats: Record<string, string | number> = { route: '/api/x', price_msat: 1000 }, expiresAt = now + 600) => {
    const preimage = randomBytes(32);
    return {
      token: mintToken(keyring, { paymentHash: bytesToHex(sha256(preimage)), expiresAt, caveats }),
      preimage: bytesToHex(preimage),
      hash: bytesToHex(sha256(preimage)),
    };
  };
  // The reference: the general path, header parsed by the regex, token verified on its own.
  const general = (header: string | null): unknown => {
    const parsed = parseCredential(header);
    if (!parsed.ok) return parsed;
    const verified = verifyToken(keyring, parsed.credential.token, parsed.credential.preimage, now);
    return verified.ok ? { ok: true, token: { hash: verified.token.hash, exp: verified.token.exp, caveats: verified.token.caveats } } : verified;
  };
  const authorize = (header: string | null) => {
    const result = verifyAuthorization(keyring, header, now);
    return result.ok ? { ok: true, token: { hash: result.token.hash, exp: result.token.exp, caveats: result.token.caveats } } : result;
  };
  const same = (header: string | null) => {
    expect(authorize(header), JSON.stringify(header)).toEqual(general(header));
  };

  it('answers what parseCredential and verifyToken answer, for the form clients send and every other spelling', () => {
    const { token, preimage, hash } = paid();
    expect(authorize(`L402 ${token}:${preimage}`)).toEqual({ ok: true, token: { hash, exp: now + 600, caveats: ['price_msat=1000', 'route=/api/x'] } });
    const standard = Buffer.from(token, 'base64url').toString('base64');
    const spellings = [
      `L402 ${token}:${preimage}`,
      `l402 ${token}:${preimage}`,
      `LSAT ${token}:${preimage}`,
      `lsAt ${token}:${preimage}`,
      `L402 ${standard}:${preimage}`,
      `L402 ${standard.replace(/=+$/, '')}:${preimage}`,
      `L402 ${token}=:${preimage}`,
      `L402 ${token}==:${preimage}`,
      `L402 ${token}:${preimage.toUpperCase()}`,
      `L402  ${token}:${preimage}`,
      `L402\t${token}:${preimage}`,
      ` L402 ${token}:${preimage}`,
      `L402 ${token}:${preimage} `,
      `L402 ${token}:${preimage.slice(1)}`,
      `L402 ${token}:${preimage}0`,
      `L402 ${token}:${'g'.repeat(64)}`,
      `L402 ${token}:${preimage.slice(0, 63)}:`,
      `L402 ${token.slice(1)}:${preimage}`,
      `L402 ${token}x:${preimage}`,
      `L402 ${token.slice(0, 40)}=${token.slice(41)}:${preimage}`,
      `L402 ${token.replace(/.$/, '!')}:${preimage}`,
      `L4O2 ${token}:${preimage}`,
      `L\u0014\u00102 ${token}:${preimage}`,
      `l\u0014\u0010\u0012 ${token}:${preimage}`,
      `LSAT:${token}:${preimage}`,
      `L402 :${preimage}`,
      `L402 ${token}:`,
      `L402 ${paid({ route: '/api/x', price_msat: 1000 }, now - 1).token}:${preimage}`,
      `L402 ${paid().token}:${preimage}`,
      `L402 ${token}:${preimage}`.padEnd(9000, ' '),
      null,
      '',
      'Bearer x',
    ];
    for (const header of spellings) same(header);
    // A valid token in a header just over the length limit: refused either way.
    const big = (n: number) =>
      paid({ route: '/api/x', price_msat: 1000, last: 'v'.repeat(n), ...Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`c${i}`, 'v'.repeat(500)])) });
    let long = big(500);
    for (let n = 500; `L402 ${long.token}:${long.preimage}`.length > 8200; n--) long = big(n);
    const header = `L402 ${long.token}:${long.preimage}`;
    expect(header.length).toBeGreaterThan(8192);
    expect(verifyAuthorization(keyring, header, now)).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_CREDENTIAL' } });
    same(header);
  });

  it('agrees with the general path on random changes to a valid header, and on random strings (property)', () => {
    const { token, preimage } = paid({ route: '/api/y', price_msat: 2000 });
    const header = `L402 ${token}:${preimage}`;
    const change = fc.record({
      at: fc.nat(header.length),
      remove: fc.nat(2),
      insert: fc.array(fc.constantFrom(...'aA0=+/-_: \t:\u00e9\u0100gG'), { maxLength: 2 }).map((c) => c.join('')),
    });
    fc.assert(
      fc.property(change, ({ at, remove, insert }) => {
        same(header.slice(0, at) + insert + header.slice(at + remove));
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 120 }), (s) => {
        same(`L402 ${s}:${preimage}`);
      }),
      { numRuns: 1000 },
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (s) => {
        same(s);
      }),
      { numRuns: 1000 },
    );
  });
});

describe('base64Encode and base64UrlEncode', () => {
  it("write what Node's Buffer writes: padded standard base64, and base64url without padding, at every length's remainder", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 1200 }), (bytes) => {
        expect(base64Encode(bytes)).toBe(Buffer.from(bytes).toString('base64'));
        expect(base64UrlEncode(bytes)).toBe(Buffer.from(bytes).toString('base64url'));
      }),
      { numRuns: 1000 },
    );
    for (const length of [0, 1, 2, 3, 4, 5]) {
      const bytes = new Uint8Array(length).fill(0xfb);
      expect(base64Encode(bytes), `${length}`).toBe(Buffer.from(bytes).toString('base64'));
      expect(base64UrlEncode(bytes), `${length}`).toBe(Buffer.from(bytes).toString('base64url'));
    }
  });
});

describe('base64ToBytes', () => {
  const decode = (text: string): number[] | null => {
    const out = new Uint8Array(Math.ceil((text.length * 3) / 4));
    const n = base64ToBytes(text, 0, text.length, out);
    return n < 0 ? null : [...out.subarray(0, n)];
  };
  // The reference: WHATWG forgiving-base64 as atob implements it, with the URL-safe digits mapped back.
  const viaAtob = (text: string): number[] | null => {
    try {
      return [...atob(text.replace(/-/g, '+').replace(/_/g, '/'))].map((c) => c.charCodeAt(0));
    } catch {
      return null;
    }
  };

  it('decodes both alphabets, padded or not, as atob does', () => {
    for (const bytes of [[], [0], [0xff, 0xfe], [1, 2, 3], [0xfb, 0xff, 0xbf, 0x3e, 0x3f]]) {
      const buffer = Buffer.from(bytes);
      for (const text of [buffer.toString('base64'), buffer.toString('base64url')]) expect(decode(text), text).toEqual(bytes);
    }
    for (const text of ['QQ', 'QQ=', 'QQ==', 'QQ===', 'Q', 'Q===', '=', '====', 'QUI=', 'QUI', 'QR', 'QUJD', 'QU=D', '-_+/', 'Q Q=', 'QQ\u00c1='])
      expect(decode(text), text).toEqual(viaAtob(text));
  });

  it('accepts and refuses exactly what atob does, for strings without whitespace (property)', () => {
    const alphabet = fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_='.split(''), '!', '\u00c1', '\u0141', '\u0080');
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 40 }).map((c) => c.join('')),
        (text) => {
          expect(decode(text)).toEqual(viaAtob(text));
        },
      ),
      { numRuns: 5000 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.boolean(), (bytes, url) => {
        const text = Buffer.from(bytes).toString(url ? 'base64url' : 'base64');
        expect(decode(text)).toEqual([...bytes]);
      }),
      { numRuns: 2000 },
    );
  });
});
