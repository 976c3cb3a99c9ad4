// Reads a token's text into its fields without trusting it: base64 of JSON
// with the fields' types, sizes and hex digits (the format: token.ts).
//
// Two readers of the one format. readJson takes any JSON layout through
// JSON.parse. readMintedLayout reads mintToken's exact layout by byte
// position, because in a server, with cold caches, JSON.parse cost more than
// the signature check, and strings more than loops over bytes; whatever it
// does not recognise it leaves to readJson. Their contract: on the same bytes,
// readMintedLayout answers exactly what readJson answers, or leaves the bytes
// to it. The package's tests/token-reader-contract.test.ts holds them to it on edited
// and fuzzed texts; tests/token-differential.test.ts holds the whole
// verifier to a plain reference of the documented format.
//
// A reader's scratch (the token's bytes, its hash and signature as SHA-256
// words) and its caches (the last key id and caveat list read) are its own:
// each Keyring has one reader, and decodeToken makes one per call. The words a
// read answers are valid until the reader's next read; Keyring copies what it
// keeps (VerifiedToken).
import { MAX_BASE64_LENGTH, base64ToBytes, binaryString, hex32Words, hexBytesWords, isLowerHex, utf8 } from '../../crypto/encoding.js';
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
const NO_CAVEATS: readonly string[] = Object.freeze([]);

const validExp = (exp: number) => Number.isSafeInteger(exp) && exp > 0;

export class TokenReader {
  /** The token text as bytes (base64ToBytes's scratch), then the token's own bytes. */
  private readonly text: Uint8Array;
  readonly bytes: Uint8Array;
  private readonly hashWords = new Int32Array(8);
  private readonly sigWords = new Int32Array(8);
  // The last key id read, as bytes and as its string: a server's tokens carry
  // one or two, so the string (and its hash, for the key map) is made once.
  private readonly lastKidBytes = new Uint8Array(8);
  private lastKid: string | undefined;
  // A route's tokens carry the same caveats: the last list read, as bytes and
  // as a frozen array that every token with those bytes shares (and that
  // Keyring recognises by identity).
  private lastCaveatBytes = new Uint8Array(0);
  private lastCaveats = NO_CAVEATS;

  /** Reads tokens of up to `maxLength` characters (at most MAX_TOKEN_LENGTH). */
  constructor(maxLength = MAX_TOKEN_LENGTH) {
    const capacity = Math.min(maxLength, MAX_TOKEN_LENGTH);
    this.text = new Uint8Array(capacity);
    this.bytes = new Uint8Array(Math.ceil(capacity / 4) * 3);
  }

  /** The token in text[from, to): its fields, or null when it is not base64 of a token's JSON. */
  read(text: string, from: number, to: number): TokenFields | null {
    const length = this.decode(text, from, to);
    return length < 0 ? null : this.readLegacyJsonToken(length);
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
    const minted = this.readMintedLayout(length);
    return minted !== undefined ? minted : this.readJson(this.json(length));
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

  /**
   * Reads the first `length` decoded bytes in mintToken's exact layout by
   * position: the token, or null where readJson would refuse them too.
   * Anything else (other key orders, spacing, escapes) answers undefined and
   * is readJson's. What it accepts, JSON.parse reads the same way: kid, hash
   * and sig are hex digits, exp a plain integer, and the caveats hold no quote
   * or backslash of their own; an escape anywhere else leaves a field too
   * short for JSON.parse's reading as well.
   */
  readMintedLayout(length: number): TokenFields | null | undefined {
    const b = this.bytes;
    const sigAt = length - SIG_TAIL;
    const caveatsEnd = sigAt - SIG_HEAD.length;
    if (
      length < SHORTEST_MINTED ||
      !this.bytesAt(HEAD, 0) ||
      !this.bytesAt(HASH_HEAD, KID_AT + 8) ||
      !this.bytesAt(EXP_HEAD, HASH_AT + 64) ||
      !this.bytesAt(SIG_HEAD, caveatsEnd) ||
      b[length - 2] !== 34 || // "
      b[length - 1] !== 125 // }
    ) {
      return undefined;
    }
    // What JSON.parse reads as the same number: digits only, no leading zero.
    let at = EXP_AT;
    let exp = 0;
    for (; at < caveatsEnd && b[at]! >= 48 && b[at]! <= 57; at++) exp = exp * 10 + (b[at]! - 48); // exact below 2^53; beyond, at least 2^53, which validExp refuses
    if (at === EXP_AT || at - EXP_AT > MAX_EXP_DIGITS || b[EXP_AT] === 48 || !this.bytesAt(CAVEATS_HEAD, at)) return undefined;
    // The caveats head ends in [ and the sig head starts with ], so the list lies between them.
    const caveats = this.readCaveatList(at + CAVEATS_HEAD.length, caveatsEnd);
    if (!caveats) return caveats;
    const kid = this.readKid();
    const { hashWords, sigWords } = this;
    if (kid === undefined || !validExp(exp) || !hexBytesWords(b, HASH_AT, hashWords) || !hexBytesWords(b, sigAt, sigWords)) return null;
    return { kid, exp, caveats, hashWords, sigWords };
  }

  /** The decoded bytes hold `expected` from `at`. */
  private bytesAt(expected: Uint8Array, at: number): boolean {
    const b = this.bytes;
    for (let i = 0; i < expected.length; i++) if (b[at + i] !== expected[i]) return false;
    return true;
  }

  /** The key id at KID_AT, if it is 8 lower-case hex digits. */
  private readKid(): string | undefined {
    const b = this.bytes;
    if (this.lastKid !== undefined && this.bytesAt(this.lastKidBytes, KID_AT)) return this.lastKid;
    const kid = String.fromCharCode(b[KID_AT]!, b[KID_AT + 1]!, b[KID_AT + 2]!, b[KID_AT + 3]!, b[KID_AT + 4]!, b[KID_AT + 5]!, b[KID_AT + 6]!, b[KID_AT + 7]!);
    if (!isLowerHex(kid, 8)) return undefined;
    this.lastKidBytes.set(b.subarray(KID_AT, KID_AT + 8));
    return (this.lastKid = kid);
  }

  /** The caveat list in the decoded bytes [from, to), as readMintedLayout answers. */
  private readCaveatList(from: number, to: number): readonly string[] | null | undefined {
    const last = this.lastCaveatBytes;
    if (to - from === last.length && this.bytesAt(last, from)) return this.lastCaveats;
    const list = binaryString(this.bytes.subarray(from, to), to - from);
    // Escapes are JSON.parse's to read; a raw control character is refused by it (the differential test found one read here).
    if (list.includes('\\') || /[\x00-\x1f]/.test(list)) return undefined;
    let read: string[] = [];
    if (list.length > 0) {
      if (list.length < 2 || list.charCodeAt(0) !== 34 || list.charCodeAt(list.length - 1) !== 34) return undefined;
      read = list.slice(1, -1).split('","');
      for (const c of read) if (c.includes('"')) return undefined;
    }
    if (!isReadableCaveatList(read)) return null;
    this.lastCaveatBytes = this.bytes.slice(from, to);
    return (this.lastCaveats = Object.freeze(read));
  }
}
