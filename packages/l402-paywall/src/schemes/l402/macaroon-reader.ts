// Reads an L402 macaroon's bytes into a token's fields without trusting them
// (the layout: docs/l402-token.md): Aperture's version 0 identifier (uint16
// 0, payment hash, token id), the key id in the token id's first four bytes,
// and the first-party caveats in the `name=value` grammar (caveats.ts). Two
// caveat names are the token's own fields rather than conditions:
// `expires_at` (unix seconds; when a client appended another, the earliest
// holds) and `preimage` (Aperture's clients append it when they send the
// macaroon alone, in a `Macaroon` header). Every other caveat is a condition,
// listed in chain order with exact repeats dropped (repeating a restriction
// adds nothing); the scheme holds the list to the route's terms, where a
// condition it does not know, or a second value for one it knows, is refused.
//
// A reader's scratch (the layout, the hash and signature words) is its own
// and valid until its next read; its caches (the last key id, the last
// condition list, frozen and shared by the tokens that carry it) are keyed by
// what they hold.
import { MacaroonLayout } from './macaroon.js';
import { MAX_CAVEATS } from './caveats.js';

/** Aperture's identifier: uint16 version 0, the 32-byte payment hash, the 32-byte token id. */
export const IDENTIFIER_BYTES = 66;
export const HASH_AT = 2;
export const TOKEN_ID_AT = 34;
export const KID_BYTES = 4;
/** The format version in a token's `v`: 2, a macaroon (1 is the legacy JSON token). */
export const MACAROON_TOKEN_VERSION = 2;
/** The first byte of a version 2 binary macaroon, and so of an L402 macaroon's bytes. */
export const MACAROON_FIRST_BYTE = 2;
/** The caveats that carry a token's expiry and, in the `Macaroon` header form, its preimage. */
export const EXPIRES_AT = 'expires_at';
export const PREIMAGE = 'preimage';

const MAX_NAME = 32;
const MAX_VALUE = 512;
const NO_CONDITIONS: readonly string[] = Object.freeze([]);

/** A macaroon as read. Its words are its reader's scratch until the reader's next read. */
export interface MacaroonFields {
  v: number;
  kid: string;
  exp: number;
  /** The conditions, frozen: shared between tokens with the same ones. */
  caveats: readonly string[];
  /** The `preimage` caveat's value, as written, if there is one. */
  preimage: string | undefined;
  hashWords: Int32Array;
  sigWords: Int32Array;
}

export class MacaroonReader {
  readonly layout = new MacaroonLayout();
  private readonly hashWords = new Int32Array(8);
  private readonly sigWords = new Int32Array(8);
  // The last condition list read, frozen, with each condition's bytes: a
  // route's tokens carry the same conditions, so the next token's caveats are
  // compared with these bytes where they stand and the list is shared, with no
  // string made. A caveat equal to one of them is in the grammar (it was checked).
  private lastConditions = NO_CONDITIONS;
  private lastConditionBytes: readonly Uint8Array[] = [];
  // The last key id read, as the token id's first four bytes and as hex.
  private lastKidWord = 0;
  private lastKid = '00000000';

  /** bytes[0, length) as an L402 macaroon: its fields, or null. */
  read(bytes: Uint8Array, length: number): MacaroonFields | null {
    const layout = this.layout;
    if (!layout.read(bytes, length)) return null;
    const id = layout.identifierFrom;
    if (layout.identifierTo - id !== IDENTIFIER_BYTES || bytes[id] !== 0 || bytes[id + 1] !== 0) return null;
    let exp = 0;
    let preimage: string | undefined;
    const last = this.lastConditions;
    const lastBytes = this.lastConditionBytes;
    // How many of the last list's conditions this token has repeated, in order,
    // until `conditions` is made: the first caveat that departs from that list.
    let matched = 0;
    let conditions: string[] | undefined;
    for (let i = 0; i < layout.caveatCount; i++) {
      const from = layout.caveatFrom[i]!;
      const to = layout.caveatTo[i]!;
      if (startsWith(bytes, from, to, EXPIRES_AT_PREFIX)) {
        const at = unixSecondsAt(bytes, from + EXPIRES_AT_PREFIX.length, to);
        if (at < 0) return null;
        if (exp === 0 || at < exp) exp = at;
        continue;
      }
      if (startsWith(bytes, from, to, PREIMAGE_PREFIX)) {
        const caveat = caveatText(bytes, from, to);
        if (caveat === undefined) return null;
        const value = caveat.slice(PREIMAGE_PREFIX.length);
        if (preimage !== undefined && preimage !== value) return null;
        preimage = value;
        continue;
      }
      if (conditions === undefined) {
        if (matched < lastBytes.length && equalBytesAt(bytes, from, to, lastBytes[matched]!)) {
          matched++;
          continue;
        }
        conditions = last.slice(0, matched);
      }
      const caveat = caveatText(bytes, from, to);
      if (caveat === undefined) return null;
      if (!conditions.includes(caveat)) conditions.push(caveat);
    }
    if (exp === 0) return null;
    let caveats = last;
    if (conditions !== undefined || matched !== last.length) {
      conditions ??= last.slice(0, matched);
      if (conditions.length > MAX_CAVEATS) return null;
      caveats = this.shared(conditions);
    }
    const { hashWords, sigWords } = this;
    wordsAt(bytes, id + HASH_AT, hashWords);
    wordsAt(bytes, layout.signatureFrom, sigWords);
    return { v: MACAROON_TOKEN_VERSION, kid: this.kidAt(bytes, id + TOKEN_ID_AT), exp, caveats, preimage, hashWords, sigWords };
  }

  /** The key id, the token id's first four bytes as lower-case hex. */
  private kidAt(bytes: Uint8Array, at: number): string {
    const word = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
    if (word !== this.lastKidWord) {
      this.lastKid = (word >>> 0).toString(16).padStart(8, '0');
      this.lastKidWord = word;
    }
    return this.lastKid;
  }

  /** The list read, or the last one when it holds the same conditions (so a route's tokens share one, recognised by identity). */
  private shared(conditions: string[]): readonly string[] {
    const last = this.lastConditions;
    if (conditions.length === last.length && conditions.every((c, i) => c === last[i])) return last;
    this.lastConditionBytes = conditions.map(asciiBytes);
    return (this.lastConditions = Object.freeze(conditions));
  }
}

const asciiBytes = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
const EXPIRES_AT_PREFIX = asciiBytes(`${EXPIRES_AT}=`);
const PREIMAGE_PREFIX = asciiBytes(`${PREIMAGE}=`);

/** Whether bytes[from, to) begins with `prefix`. */
function startsWith(bytes: Uint8Array, from: number, to: number, prefix: Uint8Array): boolean {
  if (to - from < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[from + i] !== prefix[i]) return false;
  return true;
}

/** Whether bytes[from, to) are `expected`. */
function equalBytesAt(bytes: Uint8Array, from: number, to: number, expected: Uint8Array): boolean {
  return to - from === expected.length && startsWith(bytes, from, to, expected);
}

/**
 * A caveat's bytes as text if they are `name=value` in the grammar (caveats.ts),
 * checked on the bytes: a lower-case letter, up to 31 more of [a-z0-9_], `=`,
 * then up to 512 printable ASCII characters.
 */
function caveatText(bytes: Uint8Array, from: number, to: number): string | undefined {
  const first = bytes[from];
  if (first === undefined || from >= to || first < 97 || first > 122) return undefined;
  let at = from + 1;
  for (; at < to && bytes[at] !== 61; at++) {
    const b = bytes[at]!;
    if (!((b >= 97 && b <= 122) || (b >= 48 && b <= 57) || b === 95)) return undefined;
  }
  if (at === to || at - from > MAX_NAME || to - at - 1 > MAX_VALUE) return undefined;
  for (let i = at + 1; i < to; i++) if (bytes[i]! < 0x20 || bytes[i]! > 0x7e) return undefined;
  return String.fromCharCode.apply(null, bytes.subarray(from, to) as unknown as number[]);
}

/** Unix seconds in bytes[from, to): digits, no leading zero, a positive safe integer; or -1. */
function unixSecondsAt(bytes: Uint8Array, from: number, to: number): number {
  if (to <= from || to - from > 16 || bytes[from] === 48) return -1;
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = bytes[i]! - 48;
    if (digit < 0 || digit > 9) return -1;
    value = value * 10 + digit;
  }
  return Number.isSafeInteger(value) ? value : -1;
}

/** 32 bytes from bytes[at] as eight big-endian words into out. */
export function wordsAt(bytes: Uint8Array, at: number, out: Int32Array): void {
  for (let i = 0; i < 8; i++, at += 4) out[i] = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
}
