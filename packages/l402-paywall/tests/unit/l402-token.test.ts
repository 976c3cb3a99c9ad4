import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Keyring, checkCaveats, decodeToken, mintToken, verifyToken } from 'l402-paywall';
import { base64UrlEncode, utf8 } from '../../src/crypto/encoding.js';
import { newPreimage } from '../support/l402.js';
import { mintLegacyToken } from '../support/legacy-token.js';

const SECRET = 'test-secret-0123456789abcdef0123456789abcdef';
const keyring = new Keyring([SECRET]);
const now = Math.floor(Date.now() / 1000);
const caveats = { route: '/api/demo/btc-price', price_msat: 1000 };

function encode(payload: unknown): string {
  return base64UrlEncode(utf8(JSON.stringify(payload)));
}

function edit(token: string, change: (payload: Record<string, unknown>) => void): string {
  const payload = decodeToken(token) as unknown as Record<string, unknown>;
  change(payload);
  return encode(payload);
}

// Tokens of format 1 (base64url JSON), minted before the macaroon: the legacy
// reader keeps them readable until they expire (docs/l402-token.md). The
// macaroon's own tests are l402-macaroon.test.ts.
describe('token mint and verify (format 1, the legacy JSON token)', () => {
  it('reads base64url JSON carrying hash and exp that verifies with its preimage', () => {
    const { preimage, hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 3600, caveats });
    expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
    const payload = JSON.parse(Buffer.from(token, 'base64url').toString());
    expect(payload).toMatchObject({ v: 1, hash, exp: now + 3600, caveats: ['price_msat=1000', 'route=/api/demo/btc-price'] });
    expect(payload.sig).toMatch(/^[0-9a-f]{64}$/);
    const result = verifyToken(keyring, token, preimage);
    expect(result.ok).toBe(true);
  });

  it('follows the documented signature construction exactly', async () => {
    const { createHmac } = await import('node:crypto');
    const { hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: 1_900_000_000, caveats });
    const payload = decodeToken(token)!;
    const caveatKey = createHmac('sha256', SECRET)
      .update('L402/v1 caveats\n' + payload.caveats.join('\n'))
      .digest();
    const message = Buffer.alloc(41);
    message[0] = 1;
    Buffer.from(hash, 'hex').copy(message, 1);
    message.writeBigUInt64BE(1_900_000_000n, 33);
    expect(payload.sig).toBe(createHmac('sha256', caveatKey).update(message).digest('hex'));
    const kid = createHmac('sha256', SECRET).update('L402/v1 key id').digest('hex').slice(0, 8);
    expect(payload.kid).toBe(kid);
  });

  it('signs exactly like node:crypto HMAC-SHA256 for short, block-sized and long secrets', async () => {
    const { createHmac } = await import('node:crypto');
    for (const secret of ['s'.repeat(32), 'b'.repeat(64), 'l'.repeat(65), 'ü-unicode-secret-'.repeat(10)]) {
      const { hash } = newPreimage();
      const payload = decodeToken(mintLegacyToken(new Keyring([secret]), { paymentHash: hash, expiresAt: 1_800_000_000, caveats: { route: '/r' } }))!;
      const caveatKey = createHmac('sha256', Buffer.from(secret, 'utf8')).update('L402/v1 caveats\nroute=/r').digest();
      const message = Buffer.concat([Buffer.from([1]), Buffer.from(hash, 'hex'), Buffer.from('000000006b49d200', 'hex')]);
      expect(payload.sig, secret.slice(0, 8)).toBe(createHmac('sha256', caveatKey).update(message).digest('hex'));
    }
  });

  it('refuses a token the client made itself, with or without a made-up signature', () => {
    const { preimage, hash } = newPreimage();
    const seedStyle = encode({ hash, exp: now + 3600 });
    expect(verifyToken(keyring, seedStyle, preimage)).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_TOKEN' } });
    const madeUp = encode({
      v: 1,
      kid: keyring.signingKid,
      hash,
      exp: now + 3600,
      caveats: ['price_msat=1000', 'route=/api/demo/btc-price'],
      sig: 'ab'.repeat(32),
    });
    expect(verifyToken(keyring, madeUp, preimage)).toMatchObject({ ok: false, rejection: { code: 'BAD_SIGNATURE' } });
    const otherKey = mintLegacyToken(new Keyring(['another-secret-0123456789abcdef0123456789']), { paymentHash: hash, expiresAt: now + 3600, caveats });
    expect(verifyToken(keyring, otherKey, preimage)).toMatchObject({ ok: false, rejection: { code: 'UNKNOWN_KEY' } });
    const otherKeySameKid = edit(otherKey, (p) => (p.kid = keyring.signingKid));
    expect(verifyToken(keyring, otherKeySameKid, preimage)).toMatchObject({ ok: false, rejection: { code: 'BAD_SIGNATURE' } });
  });

  it('refuses a real token with hash, exp, caveats or signature edited', () => {
    const { preimage, hash } = newPreimage();
    const other = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 3600, caveats });
    const edits: [string, (p: Record<string, unknown>) => void][] = [
      ['hash', (p) => (p.hash = other.hash)],
      ['exp', (p) => (p.exp = now + 999_999)],
      ['price', (p) => (p.caveats = ['price_msat=999999999', 'route=/api/demo/btc-price'])],
      ['route', (p) => (p.caveats = ['price_msat=1000', 'route=/api/expensive'])],
      ['dropped caveat', (p) => (p.caveats = ['price_msat=1000'])],
      ['added caveat', (p) => (p.caveats = ['price_msat=1000', 'route=/api/demo/btc-price', 'uses=100'])],
      ['caveats merged into one (same signed string)', (p) => (p.caveats = ['price_msat=1000\nroute=/api/demo/btc-price'])],
      ['signature', (p) => (p.sig = (p.sig as string).replace(/^./, (c) => (c === '0' ? '1' : '0')))],
      ['upper-case signature', (p) => (p.sig = (p.sig as string).toUpperCase())],
    ];
    for (const [name, change] of edits) {
      const edited = edit(token, change);
      const result = verifyToken(keyring, edited, name === 'hash' ? other.preimage : preimage);
      expect(result.ok, name).toBe(false);
    }
  });

  it('says exactly "Token expired" for an expired token', () => {
    const { preimage, hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now - 1, caveats });
    expect(verifyToken(keyring, token, preimage)).toEqual({ ok: false, rejection: { code: 'TOKEN_EXPIRED', message: 'Token expired' } });
  });

  it('refuses a preimage that does not hash to the token hash', () => {
    const { hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats });
    expect(verifyToken(keyring, token, newPreimage().preimage)).toMatchObject({ ok: false, rejection: { code: 'PREIMAGE_MISMATCH' } });
  });

  it('takes preimage, hash and signature only as exactly 64 lower-case hex digits', () => {
    const { preimage, hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats });
    expect(verifyToken(keyring, token, preimage).ok).toBe(true);
    // Latin-1 JSON, so a character beyond ASCII reaches the hex reader as one character.
    const latin1 = (change: (p: Record<string, unknown>) => void) => {
      const payload = decodeToken(token) as unknown as Record<string, unknown>;
      change(payload);
      return Buffer.from(JSON.stringify(payload), 'latin1').toString('base64url');
    };
    const at = (hex: string, i: number, c: string) => hex.slice(0, i) + c + hex.slice(i + 1);
    // for the digit d: a character whose low 7 bits are d, a non-digit, d in upper case (or another letter), another digit
    const wrong = (d: string) => [String.fromCharCode(d.charCodeAt(0) + 128), 'g', /[a-f]/.test(d) ? d.toUpperCase() : 'B', d === '0' ? '1' : '0'];
    const sig = decodeToken(token)!.sig;
    for (let i = 0; i < 64; i++) {
      for (const c of wrong(preimage[i]!)) {
        expect(verifyToken(keyring, token, at(preimage, i, c)), `preimage[${i}] = ${JSON.stringify(c)}`).toMatchObject({
          ok: false,
          rejection: { code: 'PREIMAGE_MISMATCH' },
        });
      }
      for (const [field, hex] of [
        ['sig', sig],
        ['hash', hash],
      ] as const)
        for (const c of wrong(hex[i]!))
          expect(
            verifyToken(
              keyring,
              latin1((p) => (p[field] = at(hex, i, c))),
              preimage,
            ).ok,
            `${field}[${i}] = ${JSON.stringify(c)}`,
          ).toBe(false);
    }
    expect(verifyToken(keyring, token, preimage.slice(1)).ok).toBe(false);
    expect(verifyToken(keyring, token, preimage + '0').ok).toBe(false);
  });

  it('calls a hash, signature or caveat outside the token grammar malformed, and a well-formed one with a wrong signature forged', () => {
    const { preimage, hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats });
    const code = (change: (p: Record<string, unknown>) => void) => {
      const result = verifyToken(keyring, edit(token, change), preimage);
      return result.ok ? 'ok' : result.rejection.code;
    };
    expect(code((p) => (p.hash = 'g'.repeat(64)))).toBe('MALFORMED_TOKEN');
    expect(code((p) => (p.hash = (p.hash as string).toUpperCase()))).toBe('MALFORMED_TOKEN');
    expect(code((p) => (p.sig = 'z'.repeat(64)))).toBe('MALFORMED_TOKEN');
    expect(code((p) => (p.caveats = ['price_msat=1000', 'Route=/api/demo/btc-price']))).toBe('MALFORMED_TOKEN');
    expect(code((p) => (p.caveats = ['price_msat=1000', 'route=/api/demo/btc-price\t']))).toBe('MALFORMED_TOKEN');
    expect(code((p) => (p.sig = 'ab'.repeat(32)))).toBe('BAD_SIGNATURE');
    expect(code((p) => (p.caveats = ['price_msat=1', 'route=/api/demo/btc-price']))).toBe('BAD_SIGNATURE');
    expect(decodeToken(edit(token, (p) => (p.hash = 'g'.repeat(64))))).toBeNull();
    expect(decodeToken(edit(token, (p) => (p.caveats = ['Route=/x'])))).toBeNull();
  });

  it('reads the URL-safe characters of base64url (a caveat with > ? ~ makes them) and their standard spelling', () => {
    const { preimage, hash } = newPreimage();
    // in base64, a byte ends a group of three as - when it is > or ~, as _ when it is ?; the padding tries each position
    const found = ['/?~', '/a?~', '/aa?~'].map((route) =>
      mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats: { route, price_msat: 1000 } }),
    );
    const joined = found.join('');
    expect(joined).toMatch(/-/);
    expect(joined).toMatch(/_/);
    for (const token of found) {
      expect(verifyToken(keyring, token, preimage).ok).toBe(true);
      expect(verifyToken(keyring, Buffer.from(token, 'base64url').toString('base64'), preimage).ok).toBe(true);
    }
  });

  it('verifies its tokens written in any JSON layout (key order, spacing, escapes), not only the minted one', () => {
    const { preimage, hash } = newPreimage();
    const token = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats });
    const { v, kid, exp, caveats: list, sig } = decodeToken(token)!;
    const layouts = [
      JSON.stringify({ sig, caveats: list, exp, hash, kid, v }),
      JSON.stringify({ v, kid, hash, exp, caveats: list, sig }, null, 2),
      JSON.stringify({ v, kid, hash, exp, caveats: list, sig }).replace('"route=', '"\\u0072oute='),
      JSON.stringify({ v, kid, hash, exp, caveats: list, sig }).replace(`"exp":${exp}`, `"exp":${exp}.0`),
    ];
    for (const text of layouts) expect(verifyToken(keyring, base64UrlEncode(utf8(text)), preimage), text).toMatchObject({ ok: true });
  });

  it('keeps its cache of signing keys to itself: changing a caveat list after it was used opens nothing', () => {
    const { preimage, hash } = newPreimage();
    const real = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats });
    const dearer = edit(real, (p) => (p.caveats = ['price_msat=999999999', 'route=/api/demo/btc-price']));
    const relaid = base64UrlEncode(utf8(JSON.stringify(decodeToken(real), null, 1)));
    // A verified token's caveats are frozen, whichever reader read them (the minted layout's, or JSON.parse's).
    for (const text of [real, relaid]) {
      const verified = verifyToken(keyring, text, preimage);
      if (!verified.ok) throw new Error('the real token must verify');
      expect(() => ((verified.token.caveats as string[])[0] = 'price_msat=999999999')).toThrow(TypeError);
    }
    expect(verifyToken(keyring, dearer, preimage)).toMatchObject({ ok: false, rejection: { code: 'BAD_SIGNATURE' } });
    // A caller's own list, signed with and then changed, was copied by the cache.
    const mutable = ['price_msat=1000', 'route=/api/demo/btc-price'];
    keyring.sign(hash, now + 60, mutable);
    mutable[0] = 'price_msat=999999999';
    expect(verifyToken(keyring, dearer, preimage)).toMatchObject({ ok: false, rejection: { code: 'BAD_SIGNATURE' } });
    expect(verifyToken(keyring, real, preimage).ok).toBe(true);
  });

  it('rotates keys: a token signed by the previous secret still verifies, new tokens use the new one', () => {
    const { preimage, hash } = newPreimage();
    const old = new Keyring([SECRET]);
    const token = mintLegacyToken(old, { paymentHash: hash, expiresAt: now + 60, caveats });
    const rotated = new Keyring(['new-secret-0123456789abcdef0123456789abcdef', SECRET]);
    expect(verifyToken(rotated, token, preimage).ok).toBe(true);
    expect(rotated.signingKid).not.toBe(old.signingKid);
    expect(decodeToken(mintLegacyToken(rotated, { paymentHash: hash, expiresAt: now + 60 }))!.kid).toBe(rotated.signingKid);
    // removed from the ring: refused
    expect(verifyToken(new Keyring(['new-secret-0123456789abcdef0123456789abcdef']), token, preimage).ok).toBe(false);
  });

  it('refuses to mint caveats that could be confused in the signed string', () => {
    const { hash } = newPreimage();
    expect(() => mintToken(keyring, { paymentHash: hash, expiresAt: now, caveats: { route: '/a\nprice_msat=1' } })).toThrow();
    expect(() => mintToken(keyring, { paymentHash: hash, expiresAt: now, caveats: { 'Bad Key': 'x' } })).toThrow();
  });
});

describe('caveats', () => {
  const expect402 = (r: ReturnType<typeof checkCaveats>, code: string) => expect(r).toMatchObject({ ok: false, rejection: { code } });

  it('binds route and price: a cheaper token does not open a dearer route', () => {
    const c = ['price_msat=1000', 'route=/api/demo/btc-price'];
    expect(checkCaveats(c, { route: '/api/demo/btc-price', priceMsat: 1000 }).ok).toBe(true);
    expect(checkCaveats(c, { route: '/api/demo/btc-price', priceMsat: 500 }).ok).toBe(true);
    expect402(checkCaveats(c, { route: '/api/demo/btc-price', priceMsat: 1_000_000 }), 'INSUFFICIENT_PRICE');
    expect402(checkCaveats(c, { route: '/api/other', priceMsat: 1000 }), 'WRONG_ROUTE');
    expect402(checkCaveats(['route=/x'], { route: '/x', priceMsat: 1000 }), 'INSUFFICIENT_PRICE');
    expect402(checkCaveats(['price_msat=1000'], { route: '/x', priceMsat: 1000 }), 'WRONG_ROUTE');
  });

  it('fails closed on unknown, missing or duplicated conditions', () => {
    expect402(checkCaveats(['price_msat=1', 'purpose=pro', 'route=/x'], { route: '/x', priceMsat: 1 }), 'CAVEAT_NOT_SATISFIED');
    expect402(checkCaveats(['price_msat=1', 'route=/x'], { route: '/x', priceMsat: 1, exact: { purpose: 'pro' } }), 'CAVEAT_NOT_SATISFIED');
    expect(checkCaveats(['address=a@b.c', 'purpose=pro'], { exact: { purpose: 'pro', address: 'a@b.c' } }).ok).toBe(true);
    expect402(checkCaveats(['purpose=pro', 'purpose=pro'], { exact: { purpose: 'pro', address: 'a@b.c' } }), 'CAVEAT_NOT_SATISFIED');
    expect402(checkCaveats(['address=x@y.z', 'purpose=pro'], { exact: { purpose: 'pro', address: 'a@b.c' } }), 'CAVEAT_NOT_SATISFIED');
  });
});

describe('hostile tokens (property-based)', () => {
  const { preimage, hash } = newPreimage();
  const valid = mintLegacyToken(keyring, { paymentHash: hash, expiresAt: now + 3600, caveats });

  it('never throws and never accepts random strings', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), fc.string({ maxLength: 80 }), (token, pre) => {
        expect(verifyToken(keyring, token, pre).ok).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it('never throws and never accepts random bytes or random JSON in base64', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (bytes) => {
        expect(verifyToken(keyring, Buffer.from(bytes).toString('base64url'), preimage).ok).toBe(false);
      }),
      { numRuns: 3000 },
    );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(verifyToken(keyring, encode(value), preimage).ok).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });

  // decodeToken reads mintToken's layout by position; whatever it accepts,
  // JSON.parse must read the same way. The reference here uses JSON.parse only.
  function referenceDecode(text: string): unknown {
    let t: Record<string, unknown>;
    try {
      t = JSON.parse(text);
    } catch {
      return null;
    }
    const hex64 = (x: unknown) => typeof x === 'string' && /^[0-9a-f]{64}$/.test(x);
    const ok =
      typeof t === 'object' &&
      t !== null &&
      t.v === 1 &&
      typeof t.kid === 'string' &&
      /^[0-9a-f]{8}$/.test(t.kid) &&
      hex64(t.hash) &&
      hex64(t.sig) &&
      typeof t.exp === 'number' &&
      Number.isSafeInteger(t.exp) &&
      t.exp > 0 &&
      Array.isArray(t.caveats) &&
      t.caveats.length <= 16 &&
      t.caveats.every((c) => typeof c === 'string' && /^[a-z][a-z0-9_]{0,31}=[\x20-\x7e]{0,512}$/.test(c));
    // The token's fields; other keys JSON may carry are not part of it.
    return ok ? { v: t.v, kid: t.kid, hash: t.hash, exp: t.exp, caveats: t.caveats, sig: t.sig } : null;
  }

  it('reads a token exactly as JSON.parse does, whatever is changed in its text', () => {
    const text = Buffer.from(valid, 'base64url').toString('latin1');
    const significant = [...'"\\,:[]{}. -+eE0123456789abcdefABCDEF_=/\n\t\r\x00\x1f\x7f\xe9'];
    const change = fc.record({
      at: fc.nat(text.length),
      remove: fc.nat(3),
      insert: fc.array(fc.constantFrom(...significant), { maxLength: 3 }).map((c) => c.join('')),
    });
    const sig = decodeToken(valid)!.sig;
    const exp = String(decodeToken(valid)!.exp);
    const nearLayout = [
      ...[
        '0' + exp,
        '-' + exp,
        '+' + exp,
        exp + '.0',
        exp + 'e0',
        ' ' + exp,
        exp + ' ',
        '0',
        '00',
        '9'.repeat(17),
        '9'.repeat(16),
        '9007199254740991',
        '9007199254740992',
        '9007199254740993',
        '1' + '0'.repeat(16),
      ].map((e) => text.replace(`"exp":${exp}`, `"exp":${e}`)),
      text.replace(sig, sig.slice(0, 63) + '"'),
      text.replace(sig, `\\u00${sig.charCodeAt(0).toString(16)}` + sig.slice(1)),
      text.replace('"route=', '"route="'),
      text.replace('"route=', '"rou\\"te='),
      text.replace('"caveats":["price_msat=1000","route=/api/demo/btc-price"]', '"caveats":[]'),
      text.replace('"caveats":["price_msat=1000","route=/api/demo/btc-price"]', '"caveats":[""]'),
      text.replace('"caveats":["price_msat=1000","route=/api/demo/btc-price"]', '"caveats":["price_msat=1000",,"route=/x"]'),
      text.replace('"caveats":["price_msat=1000","route=/api/demo/btc-price"]', `"caveats":[${Array.from({ length: 17 }, (_, i) => `"c${i}=1"`).join(',')}]`),
      text.replace('"caveats":["price_msat=1000","route=/api/demo/btc-price"]', `"caveats":[${Array.from({ length: 16 }, (_, i) => `"c${i}=1"`).join(',')}]`),
    ];
    for (const edited of nearLayout) expect(decodeToken(Buffer.from(edited, 'latin1').toString('base64url')), edited).toEqual(referenceDecode(edited));
    let accepted = 0;
    fc.assert(
      fc.property(fc.array(change, { minLength: 1, maxLength: 3 }), (changes) => {
        let edited = text;
        for (const { at, remove, insert } of changes) edited = edited.slice(0, at) + insert + edited.slice(at + remove);
        const decoded = decodeToken(Buffer.from(edited, 'latin1').toString('base64url'));
        expect(decoded).toEqual(referenceDecode(edited));
        if (decoded) accepted++;
      }),
      { numRuns: 5000 },
    );
    // Enough of the changes keep a readable token (e.g. other digits of hash, exp or caveats) for the comparison to mean something.
    expect(accepted).toBeGreaterThan(200);
  });

  it('refuses every single-character change of a valid token', () => {
    fc.assert(
      fc.property(fc.nat(valid.length - 1), fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), (i, c) => {
        fc.pre(valid[i] !== c);
        const mutated = valid.slice(0, i) + c + valid.slice(i + 1);
        const result = verifyToken(keyring, mutated, preimage);
        // base64 tail bits can decode to the same bytes; then it is the same token
        if (result.ok) expect(Buffer.from(mutated, 'base64url').equals(Buffer.from(valid, 'base64url'))).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});
