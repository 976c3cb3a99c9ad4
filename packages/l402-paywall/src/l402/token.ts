// Signed L402 tokens (docs/architecture.md decisions 1-2).
//
// A token is base64url(JSON) of
//   {"v":1,"kid":"<8 hex>","hash":"<payment hash hex>","exp":<unix s>,"caveats":["k=v",...],"sig":"<64 hex>"}
// The signature (the library's README, "Token format", documents it for other implementations):
//   caveatKey = HMAC-SHA256(secret, "L402/v1 caveats\n" + caveats.join("\n"))
//   sig       = HMAC-SHA256(caveatKey, 0x01 || payment hash (32 bytes) || exp (uint64 big-endian))
// Two nested PRFs: editing any caveat changes the key, editing hash or exp the
// message. The split is for speed: the keyed state per (key, caveats) is cached,
// so verifying a token compresses two blocks for the signature and one for the
// preimage (sha256-block.ts), instead of five.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { ShortHmac, padBlock, sha256Block } from './sha256-block.js';
import {
  MAX_BASE64_LENGTH,
  base64ToBytes,
  base64UrlEncode,
  binaryString,
  equalWords,
  hex32Words,
  hexBytesWords,
  hexWordsAt,
  isHex32,
  isLowerHex,
  utf8,
  wordsHex,
} from './encoding.js';
import { reject, type Rejection, type RejectionCode } from './reasons.js';

export const TOKEN_VERSION = 1;
const CAVEATS_LABEL = 'L402/v1 caveats\n';
const MESSAGE_LENGTH = 41;
const MAX_TOKEN_LENGTH = MAX_BASE64_LENGTH; // 8192 characters

// The reader's scratch, shared by every read so the hot path allocates
// nothing: the token's bytes, and its hash and signature as SHA-256 words
// (sha256-block.ts). Confined to this module: a read clears the words before
// it starts and hands them out only in the TokenFields it answers; whatever
// keeps them past the synchronous call that read them copies them
// (VerifiedToken, payloadOf). A test interleaves reads, failed and throwing
// ones included, to show no token's fields show through another's.
const tokenBytes = new Uint8Array((MAX_TOKEN_LENGTH / 4) * 3);
const hashWords = new Int32Array(8);
const sigWords = new Int32Array(8);
const signingWords = new Int32Array(8);

export interface TokenPayload {
  v: number;
  kid: string;
  hash: string;
  exp: number;
  /** Shared between tokens with the same caveats: read-only. */
  caveats: readonly string[];
  sig: string;
}

/** A token as read: its hash and signature are the reader's scratch words until the next one is read. */
export interface TokenFields {
  kid: string;
  exp: number;
  /** Shared between tokens with the same caveats: read-only. */
  caveats: readonly string[];
  /** The reader's scratch: valid until the next read, copy to keep. */
  hashWords: Int32Array;
  sigWords: Int32Array;
}

interface SigningKey {
  kid: string;
  secret: Uint8Array;
}

export const MIN_SECRET_BYTES = 32;

/** Newest secret signs; every secret verifies (rotation). */
export class Keyring {
  readonly signingKid: string;
  private readonly keys = new Map<string, SigningKey>();
  // keyed HMAC state per (kid, caveats); tokens of one route share an entry
  private readonly caveatKeys = new Map<string, Map<string, ShortHmac>>();
  // Hot-path buffers as SHA-256 words (sha256-block.ts), padded once here.
  private readonly messageBlock = new Int32Array(16);
  private readonly preimageBlock = new Int32Array(16);
  private readonly digest = new Int32Array(8);

  constructor(secrets: readonly string[]) {
    if (!Array.isArray(secrets) || secrets.length === 0) throw new TypeError('Keyring needs at least one secret');
    for (const [i, secret] of secrets.entries()) {
      if (typeof secret !== 'string')
        throw new TypeError(
          `secret${secrets.length > 1 ? `[${i}]` : ''} must be a string, got ${secret === undefined ? 'undefined (is the environment variable set?)' : typeof secret}`,
        );
      const key = utf8(secret);
      // Short secrets can be guessed offline from one token; 32 bytes is what `openssl rand -hex 32` gives with room to spare.
      if (key.length < MIN_SECRET_BYTES)
        throw new TypeError(
          `secret${secrets.length > 1 ? `[${i}]` : ''} must be at least ${MIN_SECRET_BYTES} bytes, got ${key.length} (generate one with \`openssl rand -hex 32\`)`,
        );
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
    if (!hex32Words(hash, signingWords)) throw new Error('hash must be 32 bytes of lower-case hex');
    return wordsHex(this.computeMac(this.caveatKey(this.signingKid, caveats)!, signingWords, exp));
  }

  /**
   * Signature, expiry and preimage of the token just read (its hash and
   * signature as words), in that order: the first failure,
   * or null. The preimage is the rest of `text` from `at`, 64 lower-case hex
   * digits; the comparisons are constant-time. Caveats outside the token
   * grammar are MALFORMED_TOKEN.
   */
  check(t: TokenFields, text: string, at: number, nowSeconds: number): 'MALFORMED_TOKEN' | 'BAD_SIGNATURE' | 'TOKEN_EXPIRED' | 'PREIMAGE_MISMATCH' | null {
    const key = this.caveatKey(t.kid, t.caveats);
    if (!key) return 'MALFORMED_TOKEN';
    if (!equalWords(this.computeMac(key, t.hashWords, t.exp), t.sigWords)) return 'BAD_SIGNATURE';
    if (t.exp <= nowSeconds) return 'TOKEN_EXPIRED';
    if (text.length - at !== 64 || !hexWordsAt(text, at, this.preimageBlock)) return 'PREIMAGE_MISMATCH';
    sha256Block(this.preimageBlock, this.digest);
    return equalWords(this.digest, t.hashWords) ? null : 'PREIMAGE_MISMATCH';
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

  // The MAC of the hash (as words) and exp.
  private computeMac(key: ShortHmac, h: Int32Array, exp: number): Int32Array {
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
  const t = readToken(token, 0, token.length);
  return t?.caveats.every((c) => CAVEAT.test(c)) ? payloadOf(t) : null;
}

/** The token just read, with its hash and signature as hex. */
function payloadOf(t: TokenFields): TokenPayload {
  return { v: TOKEN_VERSION, kid: t.kid, hash: wordsHex(t.hashWords), exp: t.exp, caveats: t.caveats, sig: wordsHex(t.sigWords) };
}

/**
 * Reads the token in text[from, to): its fields, with hash and signature
 * as words (the reader's scratch, cleared first); null when it is not base64 of JSON with the
 * fields' types, sizes and hex digits. Caveat syntax is checked with the
 * signature (Keyring.caveatKey), once per list.
 */
function readToken(text: string, from: number, to: number): TokenFields | null {
  hashWords.fill(0);
  sigWords.fill(0);
  if (to <= from || to - from > MAX_TOKEN_LENGTH) return null;
  const length = base64ToBytes(text, from, to, tokenBytes);
  if (length < 0) return null;
  const minted = readMintedLayout(length);
  return minted !== undefined ? minted : readJson(binaryString(tokenBytes, length));
}

/** Any JSON layout. Non-ASCII bytes can only sit inside a string value, and every string value is checked against an ASCII alphabet. */
function readJson(text: string): TokenFields | null {
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
  if (typeof t.hash !== 'string' || !hex32Words(t.hash, hashWords) || typeof t.sig !== 'string' || !hex32Words(t.sig, sigWords)) return null;
  if (typeof t.exp !== 'number' || !validExp(t.exp)) return null;
  if (!Array.isArray(t.caveats) || !t.caveats.every((c) => typeof c === 'string') || !validCaveatList(t.caveats)) return null;
  return { kid: t.kid, exp: t.exp, caveats: t.caveats, hashWords, sigWords };
}

const validExp = (exp: number) => Number.isSafeInteger(exp) && exp > 0;

// Full syntax is checked with the signature (Keyring.caveatKey); a newline is
// refused here because the signed string joins caveats with one, so
// ["a=1\nb=2"] and ["a=1","b=2"] must never both reach the signature check.
const validCaveatList = (caveats: readonly string[]) => caveats.length <= 16 && caveats.every((c) => !c.includes('\n'));

// mintToken's layout: {"v":1,"kid":"<8>","hash":"<64>","exp":<digits>,"caveats":[<strings>],"sig":"<64>"}
const HEAD = utf8('{"v":1,"kid":"');
const HASH_HEAD = utf8('","hash":"');
const EXP_HEAD = utf8('","exp":');
const CAVEATS_HEAD = utf8(',"caveats":[');
const SIG_HEAD = utf8('],"sig":"');
const KID_AT = 14;
const HASH_AT = 32;
const EXP_AT = 104;
const SIG_TAIL = 66; // sig, then "}
const MAX_EXP_DIGITS = 16;
const SHORTEST_MINTED = EXP_AT + 1 + CAVEATS_HEAD.length + SIG_HEAD.length + SIG_TAIL;

/** tokenBytes holds `expected` from `at`. */
function bytesAt(expected: Uint8Array, at: number): boolean {
  for (let i = 0; i < expected.length; i++) if (tokenBytes[at + i] !== expected[i]) return false;
  return true;
}

/**
 * Reads the `length` bytes in mintToken's exact layout by position: the
 * token, or null where JSON.parse's reading would be refused too. Anything
 * else (other key orders, spacing, escapes) answers undefined and goes to
 * JSON.parse. What it accepts, JSON.parse reads the same way: kid, hash and
 * sig are hex digits, exp a plain integer, and the caveats hold no quote or
 * backslash of their own; an escape anywhere else leaves a field too short
 * for JSON.parse's reading as well (tests compare the two on edited texts).
 * In a server, with cold caches, JSON.parse cost more than the signature
 * check, and strings cost more than these loops over bytes.
 */
function readMintedLayout(length: number): TokenFields | null | undefined {
  const b = tokenBytes;
  const sigAt = length - SIG_TAIL;
  const caveatsEnd = sigAt - SIG_HEAD.length;
  if (
    length < SHORTEST_MINTED ||
    !bytesAt(HEAD, 0) ||
    !bytesAt(HASH_HEAD, KID_AT + 8) ||
    !bytesAt(EXP_HEAD, HASH_AT + 64) ||
    !bytesAt(SIG_HEAD, caveatsEnd) ||
    b[length - 2] !== 34 || // "
    b[length - 1] !== 125 // }
  ) {
    return undefined;
  }
  // What JSON.parse reads as the same number: digits only, no leading zero.
  let at = EXP_AT;
  let exp = 0;
  for (; at < caveatsEnd && b[at]! >= 48 && b[at]! <= 57; at++) exp = exp * 10 + (b[at]! - 48); // exact below 2^53; beyond, at least 2^53, which validExp refuses
  if (at === EXP_AT || at - EXP_AT > MAX_EXP_DIGITS || b[EXP_AT] === 48 || !bytesAt(CAVEATS_HEAD, at)) return undefined;
  // The caveats head ends in [ and the sig head starts with ], so the list lies between them.
  const caveats = readCaveatList(at + CAVEATS_HEAD.length, caveatsEnd);
  if (!caveats) return caveats;
  const kid = readKid();
  if (kid === undefined || !validExp(exp) || !hexBytesWords(b, HASH_AT, hashWords) || !hexBytesWords(b, sigAt, sigWords)) return null;
  return { kid, exp, caveats, hashWords, sigWords };
}

// The last key id read, as bytes and as its string: a server's tokens carry
// one or two, so the string (and its hash, for the key map) is made once.
const lastKidBytes = new Uint8Array(8);
let lastKid: string | undefined;

/** The key id in tokenBytes at KID_AT, if it is 8 lower-case hex digits. */
function readKid(): string | undefined {
  const b = tokenBytes;
  if (lastKid !== undefined && bytesAt(lastKidBytes, KID_AT)) return lastKid;
  const kid = String.fromCharCode(b[KID_AT]!, b[KID_AT + 1]!, b[KID_AT + 2]!, b[KID_AT + 3]!, b[KID_AT + 4]!, b[KID_AT + 5]!, b[KID_AT + 6]!, b[KID_AT + 7]!);
  if (!isLowerHex(kid, 8)) return undefined;
  lastKidBytes.set(b.subarray(KID_AT, KID_AT + 8));
  return (lastKid = kid);
}

// A route's tokens carry the same caveats: the last list read, as bytes and as
// a frozen array that every token with those bytes shares (and that
// Keyring.caveatKey then recognises by identity).
let lastCaveatBytes = new Uint8Array(0);
let lastCaveats: readonly string[] = Object.freeze([]);

/** The caveat list in tokenBytes[from, to), as readMintedLayout answers. */
function readCaveatList(from: number, to: number): readonly string[] | null | undefined {
  const last = lastCaveatBytes;
  if (to - from === last.length && bytesAt(last, from)) return lastCaveats;
  const list = binaryString(tokenBytes.subarray(from, to), to - from);
  // Escapes are JSON.parse's to read; a raw control character is refused by it (tests/unit/token-differential.test.ts found one read here).
  if (list.includes('\\') || /[\x00-\x1f]/.test(list)) return undefined;
  let read: string[] = [];
  if (list.length > 0) {
    if (list.length < 2 || list.charCodeAt(0) !== 34 || list.charCodeAt(list.length - 1) !== 34) return undefined;
    read = list.slice(1, -1).split('","');
    for (const c of read) if (c.includes('"')) return undefined;
  }
  if (!validCaveatList(read)) return null;
  lastCaveatBytes = tokenBytes.slice(from, to);
  return (lastCaveats = Object.freeze(read));
}

export type VerifyResult = { ok: true; token: VerifiedToken } | { ok: false; rejection: Rejection };

/**
 * Verifies a token against a preimage (32 bytes, lower-case hex): signature,
 * expiry, then SHA256(preimage) == hash. Caveats are checked by checkCaveats.
 * Touches no network and no store.
 */
export function verifyToken(keyring: Keyring, token: string, preimage: string, nowSeconds = Date.now() / 1000): VerifyResult {
  return verifyResult(verifyTokenAt(keyring, token, 0, token.length, preimage, 0, nowSeconds));
}

/** What verifyTokenAt answered, as a VerifyResult. */
export function verifyResult(t: VerifiedToken | RejectionCode): VerifyResult {
  return typeof t === 'string' ? reject(t) : { ok: true, token: t };
}

/**
 * verifyToken of the token in text[from, to) and the preimage that is the
 * rest of `preimageText` from `preimageAt`, without cutting either out.
 */
export function verifyTokenAt(
  keyring: Keyring,
  text: string,
  from: number,
  to: number,
  preimageText: string,
  preimageAt: number,
  nowSeconds: number,
): VerifiedToken | RejectionCode {
  const t = readToken(text, from, to);
  if (!t) return 'MALFORMED_TOKEN';
  if (!keyring.has(t.kid)) return 'UNKNOWN_KEY';
  return keyring.check(t, preimageText, preimageAt, nowSeconds) ?? new VerifiedToken(t);
}

/**
 * A token that verified. Its payment hash and signature are kept as the
 * SHA-256 words they were checked as, and written as hex when first asked for:
 * the built-in replay store takes the words, and a handler may never ask.
 */
export class VerifiedToken implements TokenPayload {
  readonly v = TOKEN_VERSION;
  readonly kid: string;
  readonly exp: number;
  readonly caveats: readonly string[];
  readonly hashWords: Int32Array;
  readonly sigWords: Int32Array;
  #hash: string | undefined;
  #sig: string | undefined;

  constructor(t: TokenFields) {
    this.kid = t.kid;
    this.exp = t.exp;
    this.caveats = t.caveats;
    // Copied by hand: slice() goes through the species lookup, which in a
    // server, between other work, showed as ~0.5 us per paid request.
    const hash = new Int32Array(8);
    const sig = new Int32Array(8);
    for (let i = 0; i < 8; i++) {
      hash[i] = t.hashWords[i]!;
      sig[i] = t.sigWords[i]!;
    }
    this.hashWords = hash;
    this.sigWords = sig;
  }

  /** Lower-case hex. */
  get hash(): string {
    return (this.#hash ??= wordsHex(this.hashWords));
  }

  get sig(): string {
    return (this.#sig ??= wordsHex(this.sigWords));
  }
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
