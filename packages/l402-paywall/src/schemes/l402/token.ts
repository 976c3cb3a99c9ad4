// L402 tokens (docs/l402-token.md): macaroons that any macaroon library reads.
//
// A token is a libmacaroons version 2 binary macaroon (macaroon.ts), in padded
// standard base64 (unpadded and URL-safe are read too):
//   identifier = uint16 0 || payment hash (32 bytes) || token id (32 bytes)   (Aperture's version 0)
//   token id   = key id (4 bytes) || 28 random bytes
//   caveats    = the `name=value` conditions (caveats.ts), `expires_at=<unix s>` among them, sorted
//   root key   = HMAC-SHA256(HMAC-SHA256(secret, "L402/v2 macaroon root keys"), token id)
//   signature  = the macaroon chain: k = HMAC-SHA256("macaroons-key-generator", root key),
//                s = HMAC-SHA256(k, identifier), then s = HMAC-SHA256(s, caveat) per caveat
// The root key is derived, never stored: the key id in the token id names the
// secret (rotation: the newest secret mints, every secret verifies). The chain is
// MACed with the hand-tuned SHA-256 (crypto/sha256-block.ts), where each key's
// HMAC state that does not change per token (the secret's, the key generator's)
// is absorbed once. Tokens minted before the macaroon (format 1, JSON) are read by
// token-reader.ts until they expire (verifyLegacyJsonToken).
import { RandomPool } from '../../crypto/random-pool.js';
import { HmacChain, ShortHmac, hmacSha256, padBlock, sha256Block } from '../../crypto/sha256-block.js';
import { base64Encode, equalWords, hexToBytes, hexWordsAt, isHex32, utf8, wordsBytes, wordsHex } from '../../crypto/encoding.js';
import { MIN_SECRET_BYTES, secretBytes, type KeyDeriver } from '../../crypto/secrets.js';
import { MAX_CAVEATS, isCaveat, isCaveatList } from './caveats.js';
import { reject, type Rejection } from '../../core/rejections.js';
import { TOKEN_VERSION, TokenReader, type TokenFields } from './token-reader.js';
import { encodeMacaroon } from './macaroon.js';
import {
  EXPIRES_AT,
  HASH_AT,
  IDENTIFIER_BYTES,
  KID_BYTES,
  MACAROON_FIRST_BYTE,
  MACAROON_TOKEN_VERSION,
  MacaroonReader,
  PREIMAGE,
  TOKEN_ID_AT,
  wordsAt,
} from './macaroon-reader.js';

const CAVEATS_LABEL = 'L402/v1 caveats\n';
const ROOT_KEYS_LABEL = 'L402/v2 macaroon root keys';
/** The key every macaroon library MACs a root key under before the chain (libmacaroons, go-macaroon, js-macaroon). */
const KEY_GENERATOR = 'macaroons-key-generator';

export interface TokenPayload {
  /** The token's format: 2, a macaroon; 1, the legacy JSON token. */
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
  /** HMAC(secret, ROOT_KEYS_LABEL), keyed: a token id MACed under it is the token's root key. */
  rootKeys: ShortHmac;
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
  // Hot-path buffers as SHA-256 words (sha256-block.ts), padded once here.
  private readonly preimageBlock = new Int32Array(16);
  private readonly digest = new Int32Array(8);
  // Made on the first verification: a keyring that only signs, or only checks secrets, needs none.
  private reader: TokenReader | undefined;
  private macaroonReader: MacaroonReader | undefined;
  // The macaroon chain's scratch: the token id (then the root key) laid out as
  // one message block each, the key generator's keyed state, the chain's MAC.
  private readonly tokenIdBlock = new Int32Array(16);
  private readonly rootKeyBlock = new Int32Array(16);
  private readonly chainWords = new Int32Array(8);
  private keyGenerator: ShortHmac | undefined;
  private chain: HmacChain | undefined;
  // Token ids' randomness, drawn a kilobyte at a time.
  private readonly random = new RandomPool();

  constructor(secrets: readonly string[]) {
    for (const key of secretBytes(secrets)) {
      const kid = hexOf(hmacSha256(key, utf8('L402/v1 key id')).subarray(0, 4));
      if (!this.keys.has(kid)) this.keys.set(kid, { kid, secret: key, rootKeys: new ShortHmac(hmacSha256(key, utf8(ROOT_KEYS_LABEL))) });
    }
    this.signingKid = this.keys.keys().next().value!;
    padBlock(this.preimageBlock, 32, 0);
    padBlock(this.tokenIdBlock, 32, 64);
    padBlock(this.rootKeyBlock, 32, 64);
  }

  /**
   * HMAC-SHA256(secret, label) for each secret, newest first: keys for
   * another use of the same secrets (the Payment scheme's challenge binding,
   * schemes/payment/binding.ts), never equal to the secrets this keyring signs with.
   */
  deriveKeys(label: string): Uint8Array[] {
    return [...this.keys.values()].map(({ secret }) => hmacSha256(secret, utf8(label)));
  }

  has(kid: string): boolean {
    return this.keys.has(kid);
  }

  /**
   * Format 1's signature (the legacy JSON token, docs/l402-token.md), hex: the
   * caller provides hash (lower-case hex) and caveats (validated). Also a MAC
   * for other uses of the newest secret (managed/managed.ts's directory proof).
   */
  sign(hash: string, exp: number, caveats: readonly string[]): string {
    if (!isHex32(hash)) throw new Error('hash must be 32 bytes of lower-case hex');
    return hexOf(legacySignature(this.keys.get(this.signingKid)!.secret, hexToBytes(hash), exp, caveats));
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
    const reader = (this.reader ??= new TokenReader());
    const length = reader.decode(text, from, to);
    if (length < 0) return reject('MALFORMED_TOKEN');
    if (reader.bytes[0] === MACAROON_FIRST_BYTE) return this.verifyMacaroon(reader.bytes, length, preimageText, preimageAt, nowSeconds);
    return this.verifyLegacyJsonToken(reader.readLegacyJsonToken(length), preimageText, preimageAt, nowSeconds);
  }

  /**
   * A macaroon in bytes[0, length): read, its key, its chain, its expiry, then
   * its preimage: the one given after the colon, or (given none) its `preimage`
   * caveat; when both are there they must agree.
   */
  private verifyMacaroon(bytes: Uint8Array, length: number, preimageText: string, preimageAt: number, nowSeconds: number): VerifyResult {
    const t = (this.macaroonReader ??= new MacaroonReader()).read(bytes, length);
    if (!t) return reject('MALFORMED_TOKEN');
    const signing = this.keys.get(t.kid);
    if (!signing) return reject('UNKNOWN_KEY');
    if (!equalWords(this.macaroonSignature(signing, bytes), t.sigWords)) return reject('BAD_SIGNATURE');
    if (t.exp <= nowSeconds) return reject('TOKEN_EXPIRED');
    const given = preimageText.length - preimageAt;
    if (t.preimage !== undefined) {
      if (given > 0 && preimageText.slice(preimageAt).toLowerCase() !== t.preimage.toLowerCase()) return reject('PREIMAGE_MISMATCH');
      if (!this.preimageMatches(t.preimage.toLowerCase(), 0, t.hashWords)) return reject('PREIMAGE_MISMATCH');
    } else if (!this.preimageMatches(preimageText, preimageAt, t.hashWords)) {
      return reject('PREIMAGE_MISMATCH');
    }
    return { ok: true, token: new VerifiedToken(t) };
  }

  /** The chain's MAC over the macaroon the macaroon reader just laid out, in this keyring's chain words. */
  private macaroonSignature(signing: SigningKey, bytes: Uint8Array): Int32Array {
    const layout = this.macaroonReader!.layout;
    const id = layout.identifierFrom;
    wordsAt(bytes, id + TOKEN_ID_AT, this.tokenIdBlock);
    // The root key is written straight into the key generator's message block.
    signing.rootKeys.macBlock(this.tokenIdBlock, this.rootKeyBlock);
    const key = this.chainWords;
    (this.keyGenerator ??= new ShortHmac(utf8(KEY_GENERATOR))).macBlock(this.rootKeyBlock, key);
    const chain = (this.chain ??= new HmacChain());
    chain.mac(key, bytes, id, layout.identifierTo, key);
    for (let i = 0; i < layout.caveatCount; i++) chain.mac(key, bytes, layout.caveatFrom[i]!, layout.caveatTo[i]!, key);
    return key;
  }

  /** SHA256 of the 64 lower-case hex digits of preimageText from `at` equals the hash. */
  private preimageMatches(preimageText: string, at: number, hashWords: Int32Array): boolean {
    if (preimageText.length - at !== 64 || !hexWordsAt(preimageText, at, this.preimageBlock)) return false;
    sha256Block(this.preimageBlock, this.digest);
    return equalWords(this.digest, hashWords);
  }

  /**
   * A legacy JSON token (format 1), read by token-reader.ts's
   * readLegacyJsonToken: remove with it, once no such token can be within its
   * lifetime (docs/l402-token.md, "Tokens of format 1").
   */
  private verifyLegacyJsonToken(t: TokenFields | null, preimageText: string, preimageAt: number, nowSeconds: number): VerifyResult {
    if (!t) return reject('MALFORMED_TOKEN');
    const signing = this.keys.get(t.kid);
    if (!signing) return reject('UNKNOWN_KEY');
    if (!isCaveatList(t.caveats)) return reject('MALFORMED_TOKEN');
    const hash = new Uint8Array(32);
    for (let i = 0; i < 32; i++) hash[i] = t.hashWords[i >> 2]! >>> (24 - 8 * (i & 3));
    wordsAt(legacySignature(signing.secret, hash, t.exp, t.caveats), 0, this.digest);
    if (!equalWords(this.digest, t.sigWords)) return reject('BAD_SIGNATURE');
    if (t.exp <= nowSeconds) return reject('TOKEN_EXPIRED');
    if (!this.preimageMatches(preimageText, preimageAt, t.hashWords)) return reject('PREIMAGE_MISMATCH');
    return { ok: true, token: new VerifiedToken({ ...t, v: TOKEN_VERSION }) };
  }

  /**
   * A macaroon's root key (32 bytes) for its token id (32 bytes), or
   * undefined when no secret of this keyring has the token id's key id. What
   * another macaroon library verifies our tokens with (js-macaroon's
   * `verify(rootKey, …)`); it opens that one token only.
   */
  macaroonRootKey(tokenId: Uint8Array): Uint8Array | undefined {
    if (tokenId.length !== 32) return undefined;
    const signing = this.keys.get(hexOf(tokenId.subarray(0, KID_BYTES)));
    return signing && hmacSha256(hmacSha256(signing.secret, utf8(ROOT_KEYS_LABEL)), tokenId);
  }

  /** A macaroon for the payment hash (lower-case hex) with these caveats (validated), minted with the newest secret: its bytes. */
  mintMacaroon(hash: string, caveats: readonly string[]): Uint8Array {
    const identifier = new Uint8Array(IDENTIFIER_BYTES);
    identifier.set(hexToBytes(hash), HASH_AT);
    const tokenId = identifier.subarray(TOKEN_ID_AT);
    tokenId.set(hexToBytes(this.signingKid));
    tokenId.set(this.random.take(32 - KID_BYTES), KID_BYTES);
    // Written with a blank signature, then signed where it stands by the chain verification uses (one SHA-256 code for both).
    const bytes = encodeMacaroon({ identifier, caveats: caveats.map(utf8), signature: new Uint8Array(32) });
    const layout = (this.macaroonReader ??= new MacaroonReader()).layout;
    if (!layout.read(bytes, bytes.length)) throw new Error('a minted macaroon must read back');
    return wordsBytes(this.macaroonSignature(this.keys.get(this.signingKid)!, bytes), bytes, layout.signatureFrom);
  }
}

/**
 * Format 1's signature: HMAC(HMAC(secret, "L402/v1 caveats\n" + caveats
 * joined by "\n"), 0x01 || hash || exp as uint64 big-endian). Remove with the
 * legacy reader, except as Keyring.sign's MAC.
 */
function legacySignature(secret: Uint8Array, hash: Uint8Array, exp: number, caveats: readonly string[]): Uint8Array {
  const message = new Uint8Array(41);
  message[0] = TOKEN_VERSION;
  message.set(hash, 1);
  new DataView(message.buffer).setBigUint64(33, BigInt(exp));
  return hmacSha256(hmacSha256(secret, utf8(CAVEATS_LABEL + caveats.join('\n'))), message);
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
  const conditions = Object.entries(input.caveats ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const c of conditions) {
    if (!isCaveat(c)) throw new Error(`Invalid caveat: ${JSON.stringify(c)}`);
    // The token's own fields, never a condition.
    if (c.startsWith(`${EXPIRES_AT}=`) || c.startsWith(`${PREIMAGE}=`)) throw new Error(`Caveat name reserved for the token itself: ${JSON.stringify(c)}`);
  }
  // More would mint a token no reader takes.
  if (conditions.length > MAX_CAVEATS) throw new Error(`A token carries at most ${MAX_CAVEATS} caveats, got ${conditions.length}`);
  const caveats = [...conditions, `${EXPIRES_AT}=${input.expiresAt}`].sort();
  return base64Encode(keyring.mintMacaroon(hash, caveats));
}

/** Decodes a token (a macaroon, or a legacy JSON token) and checks it against the token grammar, without trusting it. */
export function decodeToken(token: string): TokenPayload | null {
  const reader = new TokenReader(token.length);
  const length = reader.decode(token, 0, token.length);
  if (length < 0) return null;
  const t = reader.bytes[0] === MACAROON_FIRST_BYTE ? new MacaroonReader().read(reader.bytes, length) : reader.readLegacyJsonToken(length);
  return t && isCaveatList(t.caveats)
    ? {
        v: reader.bytes[0] === MACAROON_FIRST_BYTE ? MACAROON_TOKEN_VERSION : TOKEN_VERSION,
        kid: t.kid,
        hash: wordsHex(t.hashWords),
        exp: t.exp,
        caveats: t.caveats,
        sig: wordsHex(t.sigWords),
      }
    : null;
}

/**
 * The payment hash a challenge's token names, if it is one this library can
 * read without the server's secret: ours (either format), or any macaroon
 * whose identifier is Aperture's version 0 (uint16 0, payment hash, token id).
 * Lower-case hex.
 */
export function tokenPaymentHash(token: string): string | undefined {
  const ours = decodeToken(token);
  if (ours) return ours.hash;
  const reader = new TokenReader(token.length);
  const length = reader.decode(token, 0, token.length);
  if (length < 0 || reader.bytes[0] !== MACAROON_FIRST_BYTE) return undefined;
  const layout = new MacaroonReader().layout;
  if (!layout.read(reader.bytes, length)) return undefined;
  const id = layout.identifierFrom;
  if (layout.identifierTo - id !== IDENTIFIER_BYTES || reader.bytes[id] !== 0 || reader.bytes[id + 1] !== 0) return undefined;
  return hexOf(reader.bytes.subarray(id + HASH_AT, id + HASH_AT + 32));
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
  readonly v: number;
  readonly kid: string;
  readonly exp: number;
  readonly caveats: readonly string[];
  readonly hashWords: Int32Array;
  readonly sigWords: Int32Array;
  #hash: string | undefined;
  #sig: string | undefined;

  constructor(t: TokenFields & { v: number }) {
    this.v = t.v;
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
