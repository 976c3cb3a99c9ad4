// The L402 token as a macaroon (docs/l402-token.md): its layout checked byte
// by byte and its signature recomputed with node:crypto from the documented
// construction; js-macaroon (code we did not write) imports and verifies it
// with the root key; a client's appended caveats narrow the grant or are
// refused; the header forms Aperture's clients send are served; and no edit
// of a valid token's bytes is ever accepted.
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import macaroon from 'macaroon';
import { describe, expect, it } from 'vitest';
import { Keyring, checkCaveats, decodeToken, mintToken, verifyToken, withL402 } from 'l402-paywall';
import { newPreimage, payChallenge, recordingProvider, type ChallengeBody } from '../support/l402.js';
import { mintLegacyToken } from '../support/legacy-token.js';

const SECRET = 'macaroon-test-secret-0123456789abcdef0123456789';
const keyring = new Keyring([SECRET]);
const now = Math.floor(Date.now() / 1000);
const conditions = { route: '/api/demo/btc-price', price_msat: 1000 };

const hmac = (key: Uint8Array | string, message: Uint8Array | string) => createHmac('sha256', key).update(message).digest();
const bytesOf = (token: string) => new Uint8Array(Buffer.from(token, 'base64'));
const tokenIdOf = (token: string) => macaroon.importMacaroon(bytesOf(token)).identifier.subarray(34);

/**
 * The token with first-party caveats appended, as a client attenuates it: each
 * caveat's section written before the macaroon's end, the signature moved on
 * by HMAC(signature, caveat). By hand, because js-macaroon 3's exportBinary
 * cannot write a macaroon of more than three caveats (its buffer doubles on
 * every append: "Invalid typed array length").
 */
function appended(token: string, ...caveats: string[]): string {
  const b = Buffer.from(token, 'base64');
  let signature = b.subarray(b.length - 32);
  const sections: Buffer[] = [b.subarray(0, b.length - 35)];
  for (const caveat of caveats) {
    const text = Buffer.from(caveat, 'utf8');
    sections.push(Buffer.from([2, text.length]), text, Buffer.from([0]));
    signature = hmac(signature, text);
  }
  sections.push(Buffer.from([0, 6, 32]), signature);
  return Buffer.concat(sections).toString('base64');
}

/** The token with a third-party caveat (location, identifier, verification id) appended, its signature left as it was. */
function withThirdPartyCaveat(token: string): string {
  const b = Buffer.from(token, 'base64');
  const field = (type: number, text: string) => Buffer.concat([Buffer.from([type, text.length]), Buffer.from(text)]);
  const caveat = Buffer.concat([field(1, 'https://elsewhere.example'), field(2, 'third-party'), field(4, 'x'.repeat(72)), Buffer.from([0])]);
  return Buffer.concat([b.subarray(0, b.length - 35), caveat, b.subarray(b.length - 35)]).toString('base64');
}

describe('the macaroon layout (docs/l402-token.md)', () => {
  it('is libmacaroons v2 binary with Aperture identifier, sorted caveats and the documented signature chain', () => {
    const { preimage, hash } = newPreimage();
    const token = mintToken(keyring, { paymentHash: hash, expiresAt: 1_900_000_000, caveats: conditions });
    expect(token).toMatch(/^[A-Za-z0-9+/]+={0,2}$/);
    const b = Buffer.from(token, 'base64');
    // Version 2; field 2 (identifier), 66 bytes: uint16 0, payment hash, token id = key id || 28 random bytes; end of section.
    expect([b[0], b[1], b[2]]).toEqual([2, 2, 66]);
    const identifier = b.subarray(3, 69);
    expect(identifier.readUInt16BE(0)).toBe(0);
    expect(identifier.subarray(2, 34).toString('hex')).toBe(hash);
    const tokenId = identifier.subarray(34);
    const kid = hmac(SECRET, 'L402/v1 key id').subarray(0, 4);
    expect(tokenId.subarray(0, 4).equals(kid)).toBe(true);
    expect(b[69]).toBe(0);
    // The caveats, each field 2, its length, its text, end of section; then the end of the caveats.
    const caveats: string[] = [];
    let at = 70;
    while (b[at] !== 0) {
      expect(b[at]).toBe(2);
      const length = b[at + 1]!;
      caveats.push(b.subarray(at + 2, at + 2 + length).toString('latin1'));
      expect(b[at + 2 + length]).toBe(0);
      at += 3 + length;
    }
    expect(caveats).toEqual(['expires_at=1900000000', 'price_msat=1000', 'route=/api/demo/btc-price']);
    // Field 6, 32 bytes: the signature, and nothing after it.
    expect([b[at + 1], b[at + 2]]).toEqual([6, 32]);
    expect(b.length).toBe(at + 3 + 32);
    const rootKey = hmac(hmac(SECRET, 'L402/v2 macaroon root keys'), tokenId);
    let signature = hmac(hmac('macaroons-key-generator', rootKey), identifier);
    for (const caveat of caveats) signature = hmac(signature, caveat);
    expect(b.subarray(at + 3).equals(signature)).toBe(true);
    expect(Buffer.from(keyring.macaroonRootKey(tokenId)!).equals(rootKey)).toBe(true);
    expect(decodeToken(token)).toMatchObject({
      v: 2,
      kid: kid.toString('hex'),
      hash,
      exp: 1_900_000_000,
      caveats: ['price_msat=1000', 'route=/api/demo/btc-price'],
    });
    expect(verifyToken(keyring, token, preimage, now)).toMatchObject({ ok: true, token: { hash, exp: 1_900_000_000 } });
  });

  it('verifies the worked example of docs/l402-token.md, and mints its bytes from its values', () => {
    const secret = 'docs-example-secret-0123456789abcdef0123456789';
    const token =
      'AgJCAABCXtTko2sw6iG5DiHHEsZJ6CFMKbfq9oCJ0QOcblU4TNo9K/4RERERERERERERERERERERERERERERERERERERAAIVZXhwaXJlc19hdD0xOTAwMDAwMDAwAAIPcHJpY2VfbXNhdD0xMDAwAAIZcm91dGU9L2FwaS9kZW1vL2J0Yy1wcmljZQAABiDUg9ZOD1vgq9ljZ25caSMPs5w0MdbMaqsYGADRSxAowQ==';
    const preimage = '42'.repeat(32);
    const docs = new Keyring([secret]);
    expect(verifyToken(docs, token, preimage, 1_800_000_000)).toMatchObject({
      ok: true,
      token: { kid: 'da3d2bfe', hash: '425ed4e4a36b30ea21b90e21c712c649e8214c29b7eaf68089d1039c6e55384c', exp: 1_900_000_000 },
    });
    const tokenId = Buffer.from(`da3d2bfe${'11'.repeat(28)}`, 'hex');
    expect(Buffer.from(docs.macaroonRootKey(tokenId)!).toString('hex')).toBe('861716a861b2988155ae2eed044249052197d92ed0ba49babf45909430f328ff');
    expect(Buffer.from(token, 'base64').subarray(-32).toString('hex')).toBe('d483d64e0f5be0abd963676e5c69230fb39c3431d6cc6aab181800d14b1028c1');
    expect(verifyToken(docs, token, preimage, 1_900_000_000)).toMatchObject({ ok: false, rejection: { code: 'TOKEN_EXPIRED' } });
  });

  it('derives a root key per token id, and mints with the newest secret; the previous one still verifies', () => {
    const { preimage, hash } = newPreimage();
    const a = mintToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats: conditions });
    const b = mintToken(keyring, { paymentHash: hash, expiresAt: now + 60, caveats: conditions });
    expect(Buffer.from(keyring.macaroonRootKey(tokenIdOf(a))!).equals(Buffer.from(keyring.macaroonRootKey(tokenIdOf(b))!))).toBe(false);
    const rotated = new Keyring(['macaroon-test-newer-secret-0123456789abcdef01', SECRET]);
    expect(verifyToken(rotated, a, preimage).ok).toBe(true);
    expect(decodeToken(mintToken(rotated, { paymentHash: hash, expiresAt: now + 60 }))!.kid).toBe(rotated.signingKid);
    expect(new Keyring(['macaroon-test-other-secret-0123456789abcdef01']).macaroonRootKey(tokenIdOf(a))).toBeUndefined();
  });

  it('refuses to mint the caveat names that are the token itself', () => {
    const { hash } = newPreimage();
    expect(() => mintToken(keyring, { paymentHash: hash, expiresAt: now, caveats: { expires_at: now + 999 } })).toThrow(/reserved/);
    expect(() => mintToken(keyring, { paymentHash: hash, expiresAt: now, caveats: { preimage: 'ab' } })).toThrow(/reserved/);
  });
});

describe('js-macaroon (code we did not write) reads our macaroons', () => {
  it('imports one and verifies it with the root key; a wrong root key or a changed caveat does not verify', () => {
    const { hash } = newPreimage();
    const token = mintToken(keyring, { paymentHash: hash, expiresAt: now + 600, caveats: conditions });
    const m = macaroon.importMacaroon(token);
    expect(Buffer.from(m.identifier.subarray(2, 34)).toString('hex')).toBe(hash);
    const seen: string[] = [];
    m.verify(keyring.macaroonRootKey(m.identifier.subarray(34))!, (condition) => (seen.push(condition), null));
    expect(seen).toEqual([`expires_at=${now + 600}`, 'price_msat=1000', 'route=/api/demo/btc-price']);
    expect(() => m.verify(new Uint8Array(32), () => null)).toThrow();
    const edited = Buffer.from(token, 'base64');
    edited[edited.indexOf('price_msat=1000') + 11] = '9'.charCodeAt(0);
    expect(() => macaroon.importMacaroon(new Uint8Array(edited)).verify(keyring.macaroonRootKey(m.identifier.subarray(34))!, () => null)).toThrow();
    expect(verifyToken(keyring, edited.toString('base64'), newPreimage().preimage)).toMatchObject({ ok: false, rejection: { code: 'BAD_SIGNATURE' } });
  });

  it('verifies a macaroon with caveats appended (the attenuation the tests below send)', () => {
    const { hash } = newPreimage();
    const token = appended(mintToken(keyring, { paymentHash: hash, expiresAt: now + 600, caveats: conditions }), 'colour=blue', `expires_at=${now + 60}`);
    const m = macaroon.importMacaroon(token);
    const seen: string[] = [];
    m.verify(keyring.macaroonRootKey(m.identifier.subarray(34))!, (condition) => (seen.push(condition), null));
    expect(seen.slice(3)).toEqual(['colour=blue', `expires_at=${now + 60}`]);
  });

  it('verifies a macaroon js-macaroon minted with our root key, identifier and caveats, as ours', () => {
    const { preimage, hash } = newPreimage();
    const ours = mintToken(keyring, { paymentHash: hash, expiresAt: now + 600, caveats: conditions });
    const identifier = macaroon.importMacaroon(ours).identifier;
    const theirs = macaroon.newMacaroon({ identifier, rootKey: keyring.macaroonRootKey(identifier.subarray(34))!, location: 'elsewhere', version: 2 });
    for (const caveat of [`expires_at=${now + 600}`, 'price_msat=1000', 'route=/api/demo/btc-price']) theirs.addFirstPartyCaveat(caveat);
    const token = Buffer.from(theirs.exportBinary()).toString('base64');
    // The same chain; its location (which no signature covers) is read and ignored.
    expect(token).not.toBe(ours);
    expect(verifyToken(keyring, token, preimage)).toMatchObject({ ok: true, token: { hash, caveats: ['price_msat=1000', 'route=/api/demo/btc-price'] } });
  });
});

describe('caveats a client appended (attenuation)', () => {
  const { preimage, hash } = newPreimage();
  const token = mintToken(keyring, { paymentHash: hash, expiresAt: now + 600, caveats: conditions });
  const terms = { route: '/api/demo/btc-price', priceMsat: 1000 };
  const held = (t: string) => {
    const verified = verifyToken(keyring, t, preimage, now);
    if (!verified.ok) return verified.rejection.code;
    const checked = checkCaveats(verified.token.caveats, terms);
    return checked.ok ? verified.token.exp : checked.rejection.code;
  };

  it('an earlier expiry narrows the token, a later one changes nothing', () => {
    expect(held(token)).toBe(now + 600);
    expect(held(appended(token, `expires_at=${now + 60}`))).toBe(now + 60);
    expect(held(appended(token, `expires_at=${now + 9999}`))).toBe(now + 600);
    expect(held(appended(token, `expires_at=${now - 1}`))).toBe('TOKEN_EXPIRED');
  });

  it('a condition it repeats holds; one it does not know, or another value of one it knows, is refused', () => {
    expect(held(appended(token, 'route=/api/demo/btc-price'))).toBe(now + 600);
    expect(held(appended(token, 'colour=blue'))).toBe('CAVEAT_NOT_SATISFIED');
    expect(held(appended(token, 'route=/api/other'))).toBe('CAVEAT_NOT_SATISFIED');
    expect(held(appended(token, 'price_msat=1'))).toBe('CAVEAT_NOT_SATISFIED');
    expect(held(appended(token, 'uses=100'))).toBe('CAVEAT_NOT_SATISFIED');
  });

  it('a caveat outside the grammar, a third-party caveat or a malformed expiry is a malformed token', () => {
    for (const caveat of ['Route=/x', 'no equals sign', `expires_at=0${now}`, 'expires_at=soon', 'é=1']) {
      expect(held(appended(token, caveat)), caveat).toBe('MALFORMED_TOKEN');
    }
    expect(held(withThirdPartyCaveat(token))).toBe('MALFORMED_TOKEN');
  });
});

describe('withL402 and the L402 header forms', () => {
  const setup = () => {
    const provider = recordingProvider();
    let served = 0;
    const handler = withL402(() => (served++, Response.json({ ok: true })), { priceSats: 10, provider, secret: SECRET, onError: () => {} });
    const request = (headers: HeadersInit = {}) => new Request('https://api.example/paid', { headers });
    const buy = async () => {
      const challenge = await handler(request());
      const body = (await challenge.clone().json()) as ChallengeBody;
      const authorization = await payChallenge(challenge, provider);
      return { body, preimage: authorization.slice(authorization.lastIndexOf(':') + 1) };
    };
    return { handler, request, buy, served: () => served };
  };
  const codeOf = async (response: Response) => (response.status === 402 ? ((await response.json()) as ChallengeBody).code : response.status);

  it('serves `LSAT <mac>:<preimage>` once and refuses it the second time', async () => {
    const { handler, request, buy, served } = setup();
    const { body, preimage } = await buy();
    expect(await codeOf(await handler(request({ authorization: `LSAT ${body.macaroon}:${preimage}` })))).toBe(200);
    expect(await codeOf(await handler(request({ authorization: `LSAT ${body.macaroon}:${preimage}` })))).toBe('TOKEN_ALREADY_USED');
    expect(served()).toBe(1);
  });

  it('serves two Authorization fields (LSAT then L402, one credential), joined by a Web Request; two different credentials are malformed', async () => {
    const { handler, request, buy, served } = setup();
    const { body, preimage } = await buy();
    const headers = new Headers();
    headers.append('authorization', `LSAT ${body.macaroon}:${preimage}`);
    headers.append('authorization', `L402 ${body.macaroon}:${preimage}`);
    expect(headers.get('authorization')).toBe(`LSAT ${body.macaroon}:${preimage}, L402 ${body.macaroon}:${preimage}`);
    expect(await codeOf(await handler(request(headers)))).toBe(200);
    const other = await buy();
    const mixed = new Headers();
    mixed.append('authorization', `LSAT ${other.body.macaroon}:${other.preimage}`);
    mixed.append('authorization', `L402 ${body.macaroon}:${preimage}`);
    expect(await codeOf(await handler(request(mixed)))).toBe('MALFORMED_CREDENTIAL');
    expect(served()).toBe(1);
  });

  it('serves the macaroon alone in a Macaroon or Grpc-Metadata-Macaroon header (hex) with a preimage caveat, once', async () => {
    for (const name of ['Macaroon', 'Grpc-Metadata-Macaroon']) {
      const { handler, request, buy, served } = setup();
      const { body, preimage } = await buy();
      const hex = Buffer.from(appended(body.macaroon, `preimage=${preimage}`), 'base64').toString('hex');
      expect(await codeOf(await handler(request({ [name]: hex })))).toBe(200);
      expect(await codeOf(await handler(request({ [name]: hex })))).toBe('TOKEN_ALREADY_USED');
      // Without the caveat, or with another preimage, it proves no payment.
      const bare = Buffer.from(body.macaroon, 'base64').toString('hex');
      expect(await codeOf(await handler(request({ [name]: bare })))).toBe('PREIMAGE_MISMATCH');
      const lying = Buffer.from(appended(body.macaroon, `preimage=${newPreimage().preimage}`), 'base64').toString('hex');
      expect(await codeOf(await handler(request({ [name]: lying })))).toBe('PREIMAGE_MISMATCH');
      expect(await codeOf(await handler(request({ [name]: 'not hex' })))).toBe('MALFORMED_CREDENTIAL');
      expect(served()).toBe(1);
    }
  });

  it('refuses a credential with an unknown appended caveat and serves the untouched one', async () => {
    const { handler, request, buy, served } = setup();
    const { body, preimage } = await buy();
    expect(await codeOf(await handler(request({ authorization: `L402 ${appended(body.macaroon, 'colour=blue')}:${preimage}` })))).toBe('CAVEAT_NOT_SATISFIED');
    expect(await codeOf(await handler(request({ authorization: `L402 ${body.macaroon}:${preimage}` })))).toBe(200);
    expect(served()).toBe(1);
  });

  it('still serves a token of format 1 (JSON) until it expires', async () => {
    const { handler, request, buy, served } = setup();
    const { body } = await buy();
    const { preimage, hash } = newPreimage();
    const legacy = mintLegacyToken(new Keyring([SECRET]), { paymentHash: hash, expiresAt: now + 600, caveats: { route: '/paid', price_msat: 10_000 } });
    expect(body.macaroon).not.toBe(legacy);
    expect(await codeOf(await handler(request({ authorization: `L402 ${legacy}:${preimage}` })))).toBe(200);
    expect(await codeOf(await handler(request({ authorization: `L402 ${legacy}:${preimage}` })))).toBe('TOKEN_ALREADY_USED');
    expect(served()).toBe(1);
  });
});

describe('hostile macaroons (property-based)', () => {
  const { preimage, hash } = newPreimage();
  const token = mintToken(keyring, { paymentHash: hash, expiresAt: now + 3600, caveats: conditions });
  const bytes = bytesOf(token);

  it('refuses every change of one byte of a valid token, without throwing', () => {
    fc.assert(
      fc.property(fc.nat(bytes.length - 1), fc.integer({ min: 1, max: 255 }), (at, flip) => {
        const edited = Uint8Array.from(bytes);
        edited[at]! ^= flip;
        const result = verifyToken(keyring, Buffer.from(edited).toString('base64'), preimage, now);
        // A changed payment hash verifies only if its preimage does, which a flip cannot make.
        expect(result.ok).toBe(false);
      }),
      { numRuns: 3000 },
    );
  });

  it('never accepts, and never throws on, random bytes after the version byte, or the token cut short', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), (tail) => {
        const text = Buffer.from(Uint8Array.of(2, ...tail)).toString('base64');
        expect(verifyToken(keyring, text, preimage, now).ok).toBe(false);
        expect(() => decodeToken(text)).not.toThrow();
      }),
      { numRuns: 2000 },
    );
    for (let length = 1; length < bytes.length; length++) {
      const cut = Buffer.from(bytes.subarray(0, length)).toString('base64');
      expect(verifyToken(keyring, cut, preimage, now)).toMatchObject({ ok: false, rejection: { code: 'MALFORMED_TOKEN' } });
    }
  });

  it('reads its payment hash as SHA-256 of the preimage, never anything else', () => {
    expect(createHash('sha256').update(Buffer.from(preimage, 'hex')).digest('hex')).toBe(decodeToken(token)!.hash);
  });
});

// A keyring's reader shares the last condition list it read and compares the
// next token's caveats with that list's bytes; checkCaveats keeps the last
// frozen list that passed. Neither may change an answer: one keyring reading a
// sequence of tokens whose lists repeat, extend, shorten, reorder or depart
// from the one before answers each token as a keyring that never read another.
describe('what one keyring carries from one token to the next (property-based)', () => {
  const NAMES = ['route', 'price_msat', 'owner', 'uses', 'colour'];
  const VALUES: Record<string, string[]> = {
    route: ['/api/demo/btc-price', '/api/other'],
    price_msat: ['1000', '999', '5000'],
    owner: ['alice', 'bob'],
    uses: ['1', '3'],
    colour: ['blue'],
  };
  const condition = fc.constantFrom(...NAMES).chain((name) => fc.constantFrom(...VALUES[name]!).map((value) => `${name}=${value}`));
  const extra = fc.oneof(
    condition,
    fc.integer({ min: -5, max: 5 }).map((d) => `expires_at=${now + 600 + d * 100}`),
    fc.constantFrom('expires_at=0123', 'Route=/x', 'colour=bl\u0001ue', 'preimage=00'),
  );
  const tokenSpec = fc.record({
    minted: fc.uniqueArray(condition, { selector: (c) => c.slice(0, c.indexOf('=')), maxLength: 4 }),
    appended: fc.array(extra, { maxLength: 3 }),
    preimage: fc.boolean(),
  });
  const terms = fc.record({
    route: fc.constantFrom(undefined, ...VALUES.route!),
    priceMsat: fc.constantFrom(undefined, 1000, 5000),
    exact: fc.constantFrom(undefined, Object.freeze({ owner: 'alice' }), { owner: 'bob' }),
  });
  type Outcome = { code: string } | { exp: number; caveats: string[]; held: string };
  const outcome = (result: ReturnType<typeof verifyToken>, wanted: Parameters<typeof checkCaveats>[1], copy: boolean): Outcome => {
    if (!result.ok) return { code: result.rejection.code };
    // A copy is never frozen: checkCaveats checks it afresh.
    const checked = checkCaveats(copy ? [...result.token.caveats] : result.token.caveats, wanted);
    return { exp: result.token.exp, caveats: [...result.token.caveats], held: checked.ok ? 'ok' : checked.rejection.code };
  };

  it('answers every token of a sequence as a fresh keyring answers it alone', () => {
    const shared = new Keyring([SECRET]);
    let previous: readonly string[] | undefined;
    fc.assert(
      fc.property(fc.array(fc.tuple(tokenSpec, terms), { minLength: 1, maxLength: 8 }), (sequence) => {
        for (const [spec, wanted] of sequence) {
          const { preimage, hash } = newPreimage();
          const minted = mintToken(keyring, {
            paymentHash: hash,
            expiresAt: now + 600,
            caveats: Object.fromEntries(spec.minted.map((c) => [c.slice(0, c.indexOf('=')), c.slice(c.indexOf('=') + 1)])),
          });
          const token = appended(minted, ...spec.appended);
          const given = spec.preimage ? preimage : '';
          const alone = outcome(verifyToken(new Keyring([SECRET]), token, given, now), wanted, true);
          const result = verifyToken(shared, token, given, now);
          expect(outcome(result, wanted, false)).toEqual(alone);
          if (result.ok) {
            expect(Object.isFrozen(result.token.caveats)).toBe(true);
            // The same conditions as the token just before (read whole): the same list, shared.
            if (previous && previous.join('\n') === result.token.caveats.join('\n')) expect(result.token.caveats).toBe(previous);
          }
          previous = result.ok ? result.token.caveats : undefined;
        }
      }),
      { numRuns: 400 },
    );
  });

  it('checkCaveats answers a list it passed before afresh when the terms differ, and never keeps an unfrozen list or terms', () => {
    const caveats = Object.freeze(['owner=alice', 'price_msat=1000', 'route=/api/demo/btc-price']);
    const exact = { owner: 'alice' };
    expect(checkCaveats(caveats, { route: '/api/demo/btc-price', priceMsat: 1000, exact })).toEqual({ ok: true });
    exact.owner = 'bob';
    expect(checkCaveats(caveats, { route: '/api/demo/btc-price', priceMsat: 1000, exact })).toMatchObject({
      ok: false,
      rejection: { code: 'CAVEAT_NOT_SATISFIED' },
    });
    const frozenExact = Object.freeze({ owner: 'alice' });
    expect(checkCaveats(caveats, { route: '/api/demo/btc-price', priceMsat: 1000, exact: frozenExact })).toEqual({ ok: true });
    expect(checkCaveats(caveats, { route: '/api/other', priceMsat: 1000, exact: frozenExact })).toMatchObject({
      ok: false,
      rejection: { code: 'WRONG_ROUTE' },
    });
    expect(checkCaveats(caveats, { route: '/api/demo/btc-price', priceMsat: 1001, exact: frozenExact })).toMatchObject({
      ok: false,
      rejection: { code: 'INSUFFICIENT_PRICE' },
    });
    const open = ['price_msat=1000', 'route=/api/demo/btc-price'];
    expect(checkCaveats(open, { route: '/api/demo/btc-price', priceMsat: 1000 })).toEqual({ ok: true });
    open[0] = 'price_msat=1';
    expect(checkCaveats(open, { route: '/api/demo/btc-price', priceMsat: 1000 })).toMatchObject({ ok: false, rejection: { code: 'INSUFFICIENT_PRICE' } });
  });
});
