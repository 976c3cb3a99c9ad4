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
  private lastConditions = NO_CONDITIONS;

  /** bytes[0, length) as an L402 macaroon: its fields, or null. */
  read(bytes: Uint8Array, length: number): MacaroonFields | null {
    const layout = this.layout;
    if (!layout.read(bytes, length)) return null;
    const id = layout.identifierFrom;
    if (layout.identifierTo - id !== IDENTIFIER_BYTES || bytes[id] !== 0 || bytes[id + 1] !== 0) return null;
    let exp = 0;
    let preimage: string | undefined;
    const conditions: string[] = [];
    for (let i = 0; i < layout.caveatCount; i++) {
      const caveat = caveatText(bytes, layout.caveatFrom[i]!, layout.caveatTo[i]!);
      if (caveat === undefined) return null;
      if (caveat.startsWith('expires_at=')) {
        const at = readUnixSeconds(caveat, EXPIRES_AT.length + 1);
        if (at === undefined) return null;
        if (exp === 0 || at < exp) exp = at;
      } else if (caveat.startsWith('preimage=')) {
        const value = caveat.slice(PREIMAGE.length + 1);
        if (preimage !== undefined && preimage !== value) return null;
        preimage = value;
      } else if (!conditions.includes(caveat)) {
        conditions.push(caveat);
      }
    }
    if (exp === 0 || conditions.length > MAX_CAVEATS) return null;
    const { hashWords, sigWords } = this;
    wordsAt(bytes, id + HASH_AT, hashWords);
    wordsAt(bytes, layout.signatureFrom, sigWords);
    return { v: MACAROON_TOKEN_VERSION, kid: this.kidAt(bytes, id + TOKEN_ID_AT), exp, caveats: this.shared(conditions), preimage, hashWords, sigWords };
  }

  /** The key id, the token id's first four bytes as lower-case hex. */
  private kidAt(bytes: Uint8Array, at: number): string {
    return (((bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!) >>> 0).toString(16).padStart(8, '0');
  }

  /** The list read, or the last one when it holds the same conditions (so a route's tokens share one, recognised by identity). */
  private shared(conditions: string[]): readonly string[] {
    const last = this.lastConditions;
    if (conditions.length === last.length && conditions.every((c, i) => c === last[i])) return last;
    return (this.lastConditions = Object.freeze(conditions));
  }
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

/** Unix seconds in `text` from `at`: digits, no leading zero, a positive safe integer. */
function readUnixSeconds(text: string, at: number): number | undefined {
  const digits = text.slice(at);
  if (!/^[1-9][0-9]{0,15}$/.test(digits)) return undefined;
  const value = Number(digits);
  return Number.isSafeInteger(value) ? value : undefined;
}

/** 32 bytes from bytes[at] as eight big-endian words into out. */
export function wordsAt(bytes: Uint8Array, at: number, out: Int32Array): void {
  for (let i = 0; i < 8; i++, at += 4) out[i] = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
}
