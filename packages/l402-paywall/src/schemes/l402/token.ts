// Signed L402 tokens (docs/architecture.md decisions 1-2).
//
// A token is base64url(JSON) of
//   {"v":1,"kid":"<8 hex>","hash":"<payment hash hex>","exp":<unix s>,"caveats":["k=v",...],"sig":"<64 hex>"}
// The signature (docs/library-reference.md, "Token format", documents it for other implementations):
//   caveatKey = HMAC-SHA256(secret, "L402/v1 caveats\n" + caveats.join("\n"))
//   sig       = HMAC-SHA256(caveatKey, 0x01 || payment hash (32 bytes) || exp (uint64 big-endian))
// Two nested PRFs: editing any caveat changes the key, editing hash or exp the
// message. The split is for speed: the keyed state per (key, caveats) is cached,
// so verifying a token compresses two blocks for the signature and one for the
// preimage (sha256-block.ts), instead of five. Caveats follow caveats.ts; the
// text is read by token-reader.ts.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { ShortHmac, padBlock, sha256Block } from '../../crypto/sha256-block.js';
import { base64UrlEncode, equalWords, hex32Words, hexWordsAt, isHex32, utf8, wordsHex } from '../../crypto/encoding.js';
import { MIN_SECRET_BYTES, secretBytes, type KeyDeriver } from '../../crypto/secrets.js';
import { MAX_CAVEATS, isCaveat, isCaveatList } from './caveats.js';
import { reject, type Rejection } from '../../core/rejections.js';
import { TOKEN_VERSION, TokenReader, type TokenFields } from './token-reader.js';

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

/** What verifying a token answers, wherever it is verified. */
export type VerifyResult = { ok: true; token: VerifiedToken } | { ok: false; rejection: Rejection };

interface SigningKey {
  kid: string;
  secret: Uint8Array;
}

export { MIN_SECRET_BYTES };

/**
 * Newest secret signs; every secret verifies (rotation). A keyring is also
 * its tokens' verifier: the scratch and caches that make verifying fast are
 * its own, so two keyrings never share any, and nothing of one verification
 * is left where the next could see it but the caches, which are keyed by what
 * they hold.
 */
export class Keyring implements KeyDeriver {
  readonly signingKid: string;
  private readonly keys = new Map<string, SigningKey>();
  // keyed HMAC state per (kid, caveats); tokens of one route share an entry
  private readonly caveatKeys = new Map<string, Map<string, ShortHmac>>();
  // The last key used: a busy route's tokens share caveats (the reader hands
  // them the same frozen array), and comparing is cheaper than joining them to
  // look the key up. A caller's unfrozen array is copied: it could change.
  private lastKey = { kid: '', caveats: [] as readonly string[], key: undefined as ShortHmac | undefined };
  // Hot-path buffers as SHA-256 words (sha256-block.ts), padded once here.
  private readonly messageBlock = new Int32Array(16);
  private readonly preimageBlock = new Int32Array(16);
  private readonly digest = new Int32Array(8);
  private readonly signingWords = new Int32Array(8);
  // Made on the first verification: a keyring that only signs, or only checks secrets, needs none.
  private reader: TokenReader | undefined;

  constructor(secrets: readonly string[]) {
    for (const key of secretBytes(secrets)) {
      const kid = hexOf(hmac(sha256, key, utf8('L402/v1 key id')).subarray(0, 4));
      if (!this.keys.has(kid)) this.keys.set(kid, { kid, secret: key });
    }
    this.signingKid = this.keys.keys().next().value!;
    padBlock(this.messageBlock, MESSAGE_LENGTH, 64);
    padBlock(this.preimageBlock, 32, 0);
  }

  /**
   * HMAC-SHA256(secret, label) for each secret, newest first: keys for
   * another use of the same secrets (the Payment scheme's challenge binding,
   * schemes/payment/binding.ts), never equal to the secrets this keyring signs with.
   */
  deriveKeys(label: string): Uint8Array[] {
    return [...this.keys.values()].map(({ secret }) => hmac(sha256, secret, utf8(label)));
  }

  has(kid: string): boolean {
    return this.keys.has(kid);
  }

  /** Signs; the caller provides hash (lower-case hex) and caveats (validated). */
  sign(hash: string, exp: number, caveats: readonly string[]): string {
    if (!hex32Words(hash, this.signingWords)) throw new Error('hash must be 32 bytes of lower-case hex');
    return wordsHex(this.computeMac(this.caveatKey(this.signingKid, caveats)!, this.signingWords, exp));
  }

  /**
   * verifyToken of the token in text[from, to) and the preimage that is the
   * rest of `preimageText` from `preimageAt`, without cutting either out (the
   * credential reader's fast path). In order: the token's form, its key, its
   * signature, its expiry, then SHA256(preimage) == hash (64 lower-case hex
   * digits); the first failure is the answer. The comparisons are
   * constant-time. Caveats outside the token grammar are MALFORMED_TOKEN.
   */
  verifyAt(text: string, from: number, to: number, preimageText: string, preimageAt: number, nowSeconds: number): VerifyResult {
    const t = (this.reader ??= new TokenReader()).read(text, from, to);
    if (!t) return reject('MALFORMED_TOKEN');
    if (!this.keys.has(t.kid)) return reject('UNKNOWN_KEY');
    const key = this.caveatKey(t.kid, t.caveats);
    if (!key) return reject('MALFORMED_TOKEN');
    if (!equalWords(this.computeMac(key, t.hashWords, t.exp), t.sigWords)) return reject('BAD_SIGNATURE');
    if (t.exp <= nowSeconds) return reject('TOKEN_EXPIRED');
    if (preimageText.length - preimageAt !== 64 || !hexWordsAt(preimageText, preimageAt, this.preimageBlock)) return reject('PREIMAGE_MISMATCH');
    sha256Block(this.preimageBlock, this.digest);
    if (!equalWords(this.digest, t.hashWords)) return reject('PREIMAGE_MISMATCH');
    return { ok: true, token: new VerifiedToken(t) };
  }

  private caveatKey(kid: string, caveats: readonly string[]): ShortHmac | undefined {
    const last = this.lastKey;
    if (last.key && kid === last.kid && sameStrings(caveats, last.caveats)) return last.key;
    const joined = caveats.join('\n');
    const signing = this.keys.get(kid);
    if (!signing) return undefined;
    let cache = this.caveatKeys.get(kid);
    if (!cache) this.caveatKeys.set(kid, (cache = new Map()));
    let key = cache.get(joined);
    if (!key) {
      // Validated here, on a cache miss, so the hot path skips the regex.
      if (!isCaveatList(caveats)) return undefined;
      key = new ShortHmac(hmac(sha256, signing.secret, utf8(CAVEATS_LABEL + joined)));
      // Forged tokens can carry arbitrary caveats; bound the cache, not the work.
      if (cache.size >= 1024) cache.clear();
      cache.set(joined, key);
    }
    this.lastKey = { kid, caveats: Object.isFrozen(caveats) ? caveats : caveats.slice(), key };
    return key;
  }

  // The MAC of the hash (as words) and exp, in this keyring's digest words.
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
  for (const c of caveats) if (!isCaveat(c)) throw new Error(`Invalid caveat: ${JSON.stringify(c)}`);
  // More would mint a token no reader takes.
  if (caveats.length > MAX_CAVEATS) throw new Error(`A token carries at most ${MAX_CAVEATS} caveats, got ${caveats.length}`);
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
  const t = new TokenReader(token.length).read(token, 0, token.length);
  return t && isCaveatList(t.caveats)
    ? { v: TOKEN_VERSION, kid: t.kid, hash: wordsHex(t.hashWords), exp: t.exp, caveats: t.caveats, sig: wordsHex(t.sigWords) }
    : null;
}

/**
 * Verifies a token against a preimage (32 bytes, lower-case hex): signature,
 * expiry, then SHA256(preimage) == hash. Caveats are checked by checkCaveats.
 * Touches no network and no store.
 */
export function verifyToken(keyring: Keyring, token: string, preimage: string, nowSeconds = Date.now() / 1000): VerifyResult {
  return keyring.verifyAt(token, 0, token.length, preimage, 0, nowSeconds);
}

/**
 * A token that verified: a value of its own, which no later verification
 * touches. Its payment hash and signature are kept as the SHA-256 words they
 * were checked as (copied from the reader's scratch), and written as hex when
 * first asked for: the built-in replay store takes the words, and a handler
 * may never ask.
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

// The check of `name=value` conditions against a request's terms is the
// core's (core/conditions.ts): a token's caveats are such conditions.
export { checkCaveats, type CaveatExpectations } from '../../core/conditions.js';

function hexOf(bytes: Uint8Array): string {
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}
