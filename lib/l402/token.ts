// Signed L402 tokens (DESIGN.md decisions 1-2).
//
// A token is base64url(JSON) of
//   {"v":1,"kid":"<8 hex>","hash":"<payment hash hex>","exp":<unix s>,"caveats":["k=v",...],"sig":"<64 hex>"}
// The signature (README "Token format" documents it for other implementations):
//   caveatKey = HMAC-SHA256(secret, "L402/v1 caveats\n" + caveats.join("\n"))
//   sig       = HMAC-SHA256(caveatKey, 0x01 || payment hash (32 bytes) || exp (uint64 big-endian))
// Two nested PRFs: editing any caveat changes the key, editing hash or exp the
// message. The split is for speed: the keyed state per (key, caveats) is cached,
// so verifying a token compresses two blocks for the signature and one for the
// preimage (sha256-block.ts), instead of five.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { ShortHmac, padBlock, sha256Block } from './sha256-block.js';
import { base64ToBinary, base64UrlEncode, equalWords, hex32Words, isHex32, isLowerHex, utf8, wordsHex } from './encoding.js';
import { reject, type Rejection } from './reasons.js';

export const TOKEN_VERSION = 1;
const CAVEATS_LABEL = 'L402/v1 caveats\n';
const MESSAGE_LENGTH = 41;

export interface TokenPayload {
  v: number;
  kid: string;
  hash: string;
  exp: number;
  /** Shared between tokens with the same caveats: read-only. */
  caveats: readonly string[];
  sig: string;
}

interface SigningKey {
  kid: string;
  secret: Uint8Array;
}

/** Newest secret signs; every secret verifies (rotation). */
export class Keyring {
  readonly signingKid: string;
  private readonly keys = new Map<string, SigningKey>();
  // keyed HMAC state per (kid, caveats); tokens of one route share an entry
  private readonly caveatKeys = new Map<string, Map<string, ShortHmac>>();
  // Hot-path buffers as SHA-256 words (sha256-block.ts), padded once here.
  private readonly messageBlock = new Int32Array(16);
  private readonly hashWords = new Int32Array(8);
  private readonly sigWords = new Int32Array(8);
  private readonly preimageBlock = new Int32Array(16);
  private readonly digest = new Int32Array(8);

  constructor(secrets: readonly string[]) {
    if (secrets.length === 0) throw new Error('Keyring needs at least one secret');
    for (const secret of secrets) {
      const key = utf8(secret);
      const kid = hexOf(hmac(sha256, key, utf8('L402/v1 key id')).subarray(0, 4));
      if (!this.keys.has(kid)) this.keys.set(kid, { kid, secret: key });
    }
    this.signingKid = this.keys.keys().next().value!;
    padBlock(this.messageBlock, MESSAGE_LENGTH, 64);
    padBlock(this.preimageBlock, 32, 0);
  }

  has(kid: string): boolean {
    return this.keys.has(kid);
  }

  /** Signs; the caller provides hash (lower-case hex) and caveats (validated). */
  sign(hash: string, exp: number, caveats: readonly string[]): string {
    if (!hex32Words(hash, this.hashWords)) throw new Error('hash must be 32 bytes of lower-case hex');
    return wordsHex(this.computeMac(this.caveatKey(this.signingKid, caveats)!, exp));
  }

  /**
   * Signature, expiry and preimage of a decoded token from a known key, in
   * that order; the first failure, or null. The hash's digits are read once,
   * for both the MAC and the preimage comparison, which is constant-time.
   * Hex fields and caveats outside the token grammar are MALFORMED_TOKEN.
   */
  check(t: TokenPayload, preimage: string, nowSeconds: number): 'MALFORMED_TOKEN' | 'BAD_SIGNATURE' | 'TOKEN_EXPIRED' | 'PREIMAGE_MISMATCH' | null {
    const key = this.caveatKey(t.kid, t.caveats);
    if (!key || !hex32Words(t.hash, this.hashWords) || !hex32Words(t.sig, this.sigWords)) return 'MALFORMED_TOKEN';
    if (!equalWords(this.computeMac(key, t.exp), this.sigWords)) return 'BAD_SIGNATURE';
    if (t.exp <= nowSeconds) return 'TOKEN_EXPIRED';
    if (!hex32Words(preimage, this.preimageBlock)) return 'PREIMAGE_MISMATCH';
    sha256Block(this.preimageBlock, this.digest);
    return equalWords(this.digest, this.hashWords) ? null : 'PREIMAGE_MISMATCH';
  }

  // The last key used: a busy route's tokens share caveats (readToken hands
  // them the same frozen array), and comparing is cheaper than joining them to
  // look the key up. A caller's unfrozen array is copied: it could change.
  private last = { kid: '', caveats: [] as readonly string[], key: undefined as ShortHmac | undefined };

  private caveatKey(kid: string, caveats: readonly string[]): ShortHmac | undefined {
    const last = this.last;
    if (last.key && kid === last.kid && sameStrings(caveats, last.caveats)) return last.key;
    const joined = caveats.join('\n');
    const signing = this.keys.get(kid);
    if (!signing) return undefined;
    let cache = this.caveatKeys.get(kid);
    if (!cache) this.caveatKeys.set(kid, (cache = new Map()));
    let key = cache.get(joined);
    if (!key) {
      // Validated here, on a cache miss, so the hot path skips the regex.
      for (const c of caveats) if (!CAVEAT.test(c)) return undefined;
      key = new ShortHmac(hmac(sha256, signing.secret, utf8(CAVEATS_LABEL + joined)));
      // Forged tokens can carry arbitrary caveats; bound the cache, not the work.
      if (cache.size >= 1024) cache.clear();
      cache.set(joined, key);
    }
    this.last = { kid, caveats: Object.isFrozen(caveats) ? caveats : caveats.slice(), key };
    return key;
  }

  // The MAC of the hash in hashWords and exp.
  private computeMac(key: ShortHmac, exp: number): Int32Array {
    const h = this.hashWords;
    // exp < 2^53: its high and low 32-bit halves
    const high = Math.floor(exp / 0x1_0000_0000);
    const low = exp >>> 0;
    // The message 0x01 || hash || exp is 41 bytes, so every word is shifted by the version byte.
    const m = this.messageBlock;
    m[0] = (TOKEN_VERSION << 24) | (h[0]! >>> 8);
    for (let i = 1; i < 8; i++) m[i] = (h[i - 1]! << 24) | (h[i]! >>> 8);
    m[8] = (h[7]! << 24) | (high >>> 8);
    m[9] = (high << 24) | (low >>> 8);
    m[10] = (low << 24) | 0x00800000; // exp's last byte, then the padding byte 0x80 (padBlock)
    key.macBlock(m, this.digest);
    return this.digest;
  }
}

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true; // one route's tokens share one frozen list
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// Printable ASCII only, so a token is ASCII JSON: no UTF-8 decoding when verifying,
// and a byte outside this range anywhere in a string fails a check below.
const CAVEAT = /^[a-z][a-z0-9_]{0,31}=[\x20-\x7e]{0,512}$/;
const MAX_TOKEN_LENGTH = 8192;

export interface MintInput {
  paymentHash: string;
  /** Unix seconds. */
  expiresAt: number;
  caveats?: Record<string, string | number>;
}

export function mintToken(keyring: Keyring, input: MintInput): string {
  const hash = input.paymentHash.toLowerCase();
  if (!isHex32(hash)) throw new Error('paymentHash must be 32 bytes of hex');
  if (!Number.isSafeInteger(input.expiresAt) || input.expiresAt <= 0) throw new Error('expiresAt must be unix seconds');
  const caveats = Object.entries(input.caveats ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .sort();
  for (const c of caveats) if (!CAVEAT.test(c)) throw new Error(`Invalid caveat: ${JSON.stringify(c)}`);
  const payload: TokenPayload = {
    v: TOKEN_VERSION,
    kid: keyring.signingKid,
    hash,
    exp: input.expiresAt,
    caveats,
    sig: keyring.sign(hash, input.expiresAt, caveats),
  };
  return base64UrlEncode(utf8(JSON.stringify(payload)));
}

/** Decodes a token and checks it against the token grammar, without trusting it. */
export function decodeToken(token: string): TokenPayload | null {
  const t = readToken(token);
  return t && isHex32(t.hash) && isHex32(t.sig) && t.caveats.every((c) => CAVEAT.test(c)) ? t : null;
}

/**
 * The token's fields with their JSON types and sizes checked; the hex digits
 * of hash and sig and the caveat syntax are checked by Keyring.check, where
 * they are read anyway.
 */
function readToken(token: string): TokenPayload | null {
  if (token.length === 0 || token.length > MAX_TOKEN_LENGTH) return null;
  const text = base64ToBinary(token);
  if (text === null) return null;
  const minted = readMintedLayout(text);
  if (minted !== undefined) return minted;
  // JSON.parse of the binary string: any non-ASCII byte can only sit inside a
  // string value, and every string value is checked against an ASCII alphabet.
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  // Checked by hand: on this path a schema library costs more than the crypto.
  if (typeof value !== 'object' || value === null) return null;
  const t = value as Record<string, unknown>;
  if (t.v !== TOKEN_VERSION) return null;
  if (typeof t.kid !== 'string' || !isLowerHex(t.kid, 8)) return null;
  if (typeof t.hash !== 'string' || t.hash.length !== 64 || typeof t.sig !== 'string' || t.sig.length !== 64) return null;
  if (typeof t.exp !== 'number' || !validExp(t.exp)) return null;
  if (!Array.isArray(t.caveats) || !t.caveats.every((c) => typeof c === 'string') || !validCaveatList(t.caveats)) return null;
  return t as unknown as TokenPayload;
}

const validExp = (exp: number) => Number.isSafeInteger(exp) && exp > 0;

// Full syntax is checked with the signature (Keyring.caveatKey); a newline is
// refused here because the signed string joins caveats with one, so
// ["a=1\nb=2"] and ["a=1","b=2"] must never both reach the signature check.
const validCaveatList = (caveats: readonly string[]) => caveats.length <= 16 && caveats.every((c) => !c.includes('\n'));

// mintToken's layout: {"v":1,"kid":"<8>","hash":"<64>","exp":<digits>,"caveats":[<strings>],"sig":"<64>"}
const KID_AT = 14;
const HASH_AT = 32;
const EXP_AT = 104;
const SIG_TAIL = 66; // sig, then "}
const MAX_EXP_DIGITS = 16;

// A route's tokens carry the same caveats: the last list read, as text and as
// a frozen array that every token with that text shares (and that
// Keyring.caveatKey then recognises by identity).
let lastCaveatText = '';
let lastCaveats: readonly string[] = Object.freeze([]);

/**
 * Reads text in mintToken's exact layout by position: the token, or null
 * where JSON.parse's reading would be refused too. Anything else (other key
 * orders, spacing, escapes) answers undefined and goes to JSON.parse. What it
 * accepts, JSON.parse reads the same way: no backslash anywhere, exp a plain
 * integer, no quote inside a caveat. A quote or control character inside
 * hash or sig is not a hex digit, so both ways end in MALFORMED_TOKEN (tests
 * compare the two on edited texts). In a server, with cold caches, JSON.parse
 * cost more than the signature check, and a regex or split here cost more
 * than the loops and the shared caveat list below.
 */
function readMintedLayout(text: string): TokenPayload | null | undefined {
  const sigAt = text.length - SIG_TAIL;
  const caveatsEnd = sigAt - 9;
  if (
    !text.startsWith('{"v":1,"kid":"', 0) ||
    !text.startsWith('","hash":"', KID_AT + 8) ||
    !text.startsWith('","exp":', HASH_AT + 64) ||
    !text.startsWith('],"sig":"', caveatsEnd) ||
    !text.endsWith('"}') ||
    text.indexOf('\\') !== -1
  ) {
    return undefined;
  }
  const caveatsAt = text.indexOf(',"caveats":[', EXP_AT);
  if (caveatsAt < 0) return undefined;
  // What JSON.parse reads as the same number: digits only, no leading zero.
  if (caveatsAt === EXP_AT || caveatsAt - EXP_AT > MAX_EXP_DIGITS || text.charCodeAt(EXP_AT) === 48) return undefined;
  let exp = 0;
  for (let i = EXP_AT; i < caveatsAt; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return undefined;
    exp = exp * 10 + digit; // exact below 2^53; at or above it, rounds to at least 2^53, which validExp refuses
  }
  const list = text.slice(caveatsAt + 12, caveatsEnd);
  let caveats = lastCaveats;
  if (list !== lastCaveatText) {
    let read: string[] = [];
    if (list.length > 0) {
      if (list.length < 2 || list.charCodeAt(0) !== 34 || list.charCodeAt(list.length - 1) !== 34) return undefined;
      read = list.slice(1, -1).split('","');
      for (const c of read) if (c.includes('"')) return undefined;
    }
    if (!validCaveatList(read)) return null;
    lastCaveatText = list;
    caveats = lastCaveats = Object.freeze(read);
  }
  const kid = text.slice(KID_AT, KID_AT + 8);
  if (!isLowerHex(kid, 8) || !validExp(exp)) return null;
  return { v: TOKEN_VERSION, kid, hash: text.slice(HASH_AT, HASH_AT + 64), exp, caveats, sig: text.slice(sigAt, sigAt + 64) };
}

export type VerifyResult = { ok: true; token: TokenPayload } | { ok: false; rejection: Rejection };

/**
 * Verifies a token against a preimage (32 bytes, lower-case hex): signature,
 * expiry, then SHA256(preimage) == hash. Caveats are checked by checkCaveats.
 * Touches no network and no store.
 */
export function verifyToken(keyring: Keyring, token: string, preimage: string, nowSeconds = Date.now() / 1000): VerifyResult {
  const t = readToken(token);
  if (!t) return reject('MALFORMED_TOKEN');
  if (!keyring.has(t.kid)) return reject('UNKNOWN_KEY');
  const failure = keyring.check(t, preimage, nowSeconds);
  return failure ? reject(failure) : { ok: true, token: t };
}

export interface CaveatExpectations {
  /** The route being served; a token's `route` caveat must equal it. */
  route?: string;
  /** The price of this request; a token's `price_msat` must be at least this. */
  priceMsat?: number;
  /** Other caveats that must be present with exactly these values. */
  exact?: Record<string, string>;
}

/**
 * Every caveat in the token must be understood and met, and every expectation
 * must be present in the token: an unknown condition fails closed.
 */
export function checkCaveats(caveats: readonly string[], expect: CaveatExpectations): { ok: true } | { ok: false; rejection: Rejection } {
  let sawRoute = expect.route === undefined;
  let sawPrice = expect.priceMsat === undefined;
  let exactSeen = 0;
  let previous = '';
  let previousKey = '';
  for (const caveat of caveats) {
    const eq = caveat.indexOf('=');
    const key = caveat.slice(0, eq);
    const value = caveat.slice(eq + 1);
    // Minted sorted with unique keys; sorted order puts equal keys side by side.
    if (caveat <= previous || key === previousKey) return reject('CAVEAT_NOT_SATISFIED');
    previous = caveat;
    previousKey = key;
    if (key === 'route') {
      if (expect.route !== undefined && value !== expect.route) return reject('WRONG_ROUTE');
      sawRoute = true;
    } else if (key === 'price_msat') {
      if (expect.priceMsat !== undefined && !(Number(value) >= expect.priceMsat)) return reject('INSUFFICIENT_PRICE');
      sawPrice = true;
    } else if (expect.exact && Object.hasOwn(expect.exact, key)) {
      if (expect.exact[key] !== value) return reject('CAVEAT_NOT_SATISFIED');
      exactSeen++;
    } else {
      return reject('CAVEAT_NOT_SATISFIED');
    }
  }
  if (!sawRoute) return reject('WRONG_ROUTE');
  if (!sawPrice) return reject('INSUFFICIENT_PRICE');
  if (expect.exact && exactSeen !== Object.keys(expect.exact).length) return reject('CAVEAT_NOT_SATISFIED');
  return { ok: true };
}

function hexOf(bytes: Uint8Array): string {
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}
