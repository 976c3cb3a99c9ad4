// Decodes a token's base64 into bytes (both token formats start here), and
// reads a token of format 1, the legacy JSON token that releases before the
// macaroon minted (docs/l402-token.md "Tokens of format 1"), without trusting
// it: base64 of JSON with the fields' types, sizes and hex digits. Format 1
// tokens are read through JSON.parse alone: they are only read until they
// expire, so this reader is kept small rather than fast.
//
// A reader's scratch (the token's bytes, its hash and signature as SHA-256
// words) is its own: each Keyring has one reader, and decodeToken makes one
// per call. The words a read answers are valid until the reader's next read;
// Keyring copies what it keeps (VerifiedToken).
import { MAX_BASE64_LENGTH, base64ToBytes, binaryString, hex32Words, isLowerHex } from '../../crypto/encoding.js';
import { isReadableCaveatList } from './caveats.js';

export const TOKEN_VERSION = 1;

/** The longest token text read, in characters. */
export const MAX_TOKEN_LENGTH = MAX_BASE64_LENGTH;

/** A token as read. Its hash and signature are its reader's scratch words until the reader's next read. */
export interface TokenFields {
  kid: string;
  exp: number;
  /** Frozen: shared between the tokens a reader reads with the same caveats. */
  caveats: readonly string[];
  hashWords: Int32Array;
  sigWords: Int32Array;
}

const validExp = (exp: number) => Number.isSafeInteger(exp) && exp > 0;

export class TokenReader {
  /** The token text as bytes (base64ToBytes's scratch), then the token's own bytes. */
  private readonly text: Uint8Array;
  readonly bytes: Uint8Array;
  private readonly hashWords = new Int32Array(8);
  private readonly sigWords = new Int32Array(8);

  /** Reads tokens of up to `maxLength` characters (at most MAX_TOKEN_LENGTH). */
  constructor(maxLength = MAX_TOKEN_LENGTH) {
    const capacity = Math.min(maxLength, MAX_TOKEN_LENGTH);
    this.text = new Uint8Array(capacity);
    this.bytes = new Uint8Array(Math.ceil(capacity / 4) * 3);
  }

  /**
   * The first `length` decoded bytes as a legacy JSON token (format 1,
   * `{"v":1,...}`), which releases before the macaroon minted. Kept only so
   * that those tokens stay readable until they expire: remove this reader
   * (and this file's JSON layout) one release after the macaroon, once no
   * token of format 1 can still be within its lifetime (docs/l402-token.md,
   * "Tokens of format 1").
   */
  readLegacyJsonToken(length: number): TokenFields | null {
    return this.readJson(this.json(length));
  }

  /** Decodes the base64 text[from, to) into this reader's bytes: how many, or -1. */
  decode(text: string, from: number, to: number): number {
    if (to <= from || to - from > this.text.length) return -1;
    return base64ToBytes(text, from, to, this.bytes, this.text);
  }

  /** The first `length` decoded bytes as a string of one character per byte, what readJson reads. */
  json(length: number): string {
    return binaryString(this.bytes, length);
  }

  /**
   * Any JSON layout. Non-ASCII bytes can only sit inside a string value, and
   * every string value is checked against an ASCII alphabet. Checked by hand:
   * on this path a schema library costs more than the crypto.
   */
  readJson(json: string): TokenFields | null {
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      return null;
    }
    if (typeof value !== 'object' || value === null) return null;
    const t = value as Record<string, unknown>;
    const { hashWords, sigWords } = this;
    if (t.v !== TOKEN_VERSION) return null;
    if (typeof t.kid !== 'string' || !isLowerHex(t.kid, 8)) return null;
    if (typeof t.hash !== 'string' || !hex32Words(t.hash, hashWords) || typeof t.sig !== 'string' || !hex32Words(t.sig, sigWords)) return null;
    if (typeof t.exp !== 'number' || !validExp(t.exp)) return null;
    if (!Array.isArray(t.caveats) || !t.caveats.every((c) => typeof c === 'string') || !isReadableCaveatList(t.caveats)) return null;
    return { kid: t.kid, exp: t.exp, caveats: Object.freeze(t.caveats as string[]), hashWords, sigWords };
  }
}
