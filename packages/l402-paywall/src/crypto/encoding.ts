// Byte <-> text helpers on Web APIs only, so the core (src/l402) runs on every runtime.
// Module-level values here are lookup tables, filled once at load and only read after.

const encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

/** base64url without padding (RFC 4648 §5), the Payment scheme's form. */
export function base64UrlEncode(bytes: Uint8Array): string {
  return base64With(bytes, URL_DIGITS, false);
}

/** Padded standard base64 (RFC 4648 §4), what macaroon libraries and Aperture's clients expect in headers. */
export function base64Encode(bytes: Uint8Array): string {
  return base64With(bytes, STANDARD_DIGITS, true);
}

const STANDARD_DIGITS = Uint8Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/', (c) => c.charCodeAt(0));
const URL_DIGITS = Uint8Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', (c) => c.charCodeAt(0));
const asciiDecoder = new TextDecoder();

/**
 * The digits written as bytes and read into a string at once: a 402 encodes
 * a kilobyte (the request, the macaroon), and btoa of a string built a
 * character at a time, then rewritten for base64url, cost four times as much.
 */
function base64With(bytes: Uint8Array, digits: Uint8Array, pad: boolean): string {
  const whole = bytes.length - (bytes.length % 3);
  const rest = bytes.length - whole;
  const out = new Uint8Array(pad ? Math.ceil(bytes.length / 3) * 4 : Math.ceil((bytes.length * 4) / 3));
  let at = 0;
  for (let i = 0; i < whole; i += 3, at += 4) {
    const group = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    out[at] = digits[group >>> 18]!;
    out[at + 1] = digits[(group >>> 12) & 63]!;
    out[at + 2] = digits[(group >>> 6) & 63]!;
    out[at + 3] = digits[group & 63]!;
  }
  if (rest > 0) {
    const group = (bytes[whole]! << 16) | (rest === 2 ? bytes[whole + 1]! << 8 : 0);
    out[at++] = digits[group >>> 18]!;
    out[at++] = digits[(group >>> 12) & 63]!;
    if (rest === 2) out[at++] = digits[(group >>> 6) & 63]!;
    if (pad) out.fill(61, at); // "="
  }
  return asciiDecoder.decode(out);
}

// The digit values of both base64 alphabets, standard (+/) and URL-safe (-_),
// by byte; -1 for every other byte, '=' included.
const BASE64 = new Int8Array(256).fill(-1);
for (let i = 0; i < 64; i++) BASE64['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;
BASE64[45] = 62; // -
BASE64[95] = 63; // _

/** The longest text base64ToBytes takes. */
export const MAX_BASE64_LENGTH = 8192;

/**
 * Decodes text[from, to) as base64 or base64url, padded or not, into `out`:
 * the number of bytes written, or -1. WHATWG forgiving-base64 (what atob
 * accepts once - and _ are mapped back), except that whitespace is refused
 * rather than skipped: credentials never carry any. Leftover bits of a last
 * partial group are ignored, as atob does. At most MAX_BASE64_LENGTH
 * characters; `out` must hold 3/4 of them. Bytes rather than atob's binary
 * string, so a token's fields are read without strings; the text is copied
 * to bytes by TextEncoder first (into `scratch`, a byte per character, which
 * a caller on the hot path owns and passes; text longer than it is refused),
 * which costs less than reading it by charCodeAt.
 */
export function base64ToBytes(text: string, from: number, to: number, out: Uint8Array, scratch?: Uint8Array): number {
  const input = from === 0 && to === text.length ? text : text.slice(from, to);
  if (input.length > MAX_BASE64_LENGTH) return -1;
  const ascii = scratch ?? new Uint8Array(input.length);
  const { read, written } = encoder.encodeInto(input, ascii);
  // Anything beyond ASCII takes more than one byte; anything too long is not all read.
  if (read !== input.length || written !== input.length) return -1;
  let length = written;
  if (length % 4 === 0 && length > 0 && ascii[length - 1] === 61) length -= ascii[length - 2] === 61 ? 2 : 1;
  const tail = length % 4;
  if (tail === 1) return -1;
  const b = ascii;
  let n = 0;
  let invalid = 0; // a non-digit is -1, which makes its group negative
  let at = 0;
  for (const end = length - tail; at < end; at += 4) {
    const group = (BASE64[b[at]!]! << 18) | (BASE64[b[at + 1]!]! << 12) | (BASE64[b[at + 2]!]! << 6) | BASE64[b[at + 3]!]!;
    invalid |= group;
    out[n] = group >> 16;
    out[n + 1] = group >> 8;
    out[n + 2] = group;
    n += 3;
  }
  if (tail > 0) {
    const group = (BASE64[b[at]!]! << 18) | (BASE64[b[at + 1]!]! << 12) | (tail === 3 ? BASE64[b[at + 2]!]! << 6 : 0);
    invalid |= group;
    out[n++] = group >> 16;
    if (tail === 3) out[n++] = group >> 8;
  }
  return invalid < 0 ? -1 : n;
}

/** bytes[0, length) as a string of one character per byte (what atob answers). */
export function binaryString(bytes: Uint8Array, length: number): string {
  let text = '';
  // In chunks: apply() puts every byte on the stack as an argument.
  for (let at = 0; at < length; at += 4096) text += String.fromCharCode.apply(null, bytes.subarray(at, Math.min(length, at + 4096)) as unknown as number[]);
  return text;
}

// Lower-case hex only: tokens and normalised preimages are lower case, so one
// spelling per value and no case folding on the hot path.
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;

/** True for exactly `length` lower-case hex digits. */
export function isLowerHex(value: string, length: number): boolean {
  if (value.length !== length) return false;
  let values = 0;
  for (let i = 0; i < length; i++) {
    const c = value.charCodeAt(i);
    values |= NIBBLE[c & 127]! | (c & ~127); // a non-digit is -1; beyond ASCII sets bit 7 or higher
  }
  return values >= 0 && values < 16;
}

/** True for exactly 32 bytes of lower-case hex. */
export function isHex32(value: unknown): value is string {
  return typeof value === 'string' && isLowerHex(value, 64);
}

// On the hot path the digits go straight to SHA-256's big-endian words, no
// bytes in between. Each digit's value comes from NIBBLE (128 bytes: two cache
// lines, where a table by digit pair was 32 KiB and, with a server's cold
// caches, cost more in misses than it saved in look-ups). A non-digit reads
// -1, which sets bit 31 of the OR of all values; a character (or byte)
// beyond ASCII sets bit 7.
/** Writes 32 bytes of lower-case hex into out[0..7] as big-endian words; false if not hex. */
export function hex32Words(hex: string, out: Int32Array): boolean {
  return hex.length === 64 && hexWordsAt(hex, 0, out);
}

/** hex32Words of the 64 characters of `text` from `at` (the caller checks there are 64). */
export function hexWordsAt(text: string, at: number, out: Int32Array): boolean {
  let values = 0;
  let chars = 0;
  for (let w = 0; w < 8; w++, at += 8) {
    let word = 0;
    for (let i = at; i < at + 8; i++) {
      const c = text.charCodeAt(i);
      const v = NIBBLE[c & 127]!;
      chars |= c;
      values |= v;
      word = (word << 4) | (v & 15);
    }
    out[w] = word;
  }
  return values >= 0 && chars < 128;
}

/** hexWordsAt for hex digits as bytes (a decoded token), from bytes[at]. */
export function hexBytesWords(bytes: Uint8Array, at: number, out: Int32Array): boolean {
  let values = 0;
  for (let w = 0; w < 8; w++, at += 8) {
    let word = 0;
    for (let i = at; i < at + 8; i++) {
      const b = bytes[i]!;
      const v = NIBBLE[b & 127]!;
      values |= v | (b & 128);
      word = (word << 4) | (v & 15);
    }
    out[w] = word;
  }
  return values >= 0 && values < 16;
}

/** Constant-time equality of two digests as 8 words each. */
export function equalWords(a: Int32Array, b: Int32Array): boolean {
  let diff = 0;
  for (let i = 0; i < 8; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

const DIGIT = Uint8Array.from('0123456789abcdef', (c) => c.charCodeAt(0));

/** Whether `hex` is the lower-case hex of words[0..7], compared in constant time (no early exit). */
export function wordsEqualHex(words: Int32Array, hex: string): boolean {
  if (hex.length !== 64) return false;
  let diff = 0;
  for (let i = 0; i < 64; i++) diff |= hex.charCodeAt(i) ^ DIGIT[(words[i >> 3]! >>> (28 - 4 * (i & 7))) & 15]!;
  return diff === 0;
}

/** Eight words as their 32 big-endian bytes, into `out` from `at` (a new array by default). */
export function wordsBytes(words: Int32Array, out: Uint8Array = new Uint8Array(32), at = 0): Uint8Array {
  for (let i = 0; i < 8; i++, at += 4) {
    const w = words[i]!;
    out[at] = w >>> 24;
    out[at + 1] = w >>> 16;
    out[at + 2] = w >>> 8;
    out[at + 3] = w;
  }
  return out;
}

/** Lower-case hex of 8 big-endian words. */
export function wordsHex(words: Int32Array): string {
  // A string per word, each made in one call: on a paid request's path this
  // cost a fifth of toString(16) and padStart.
  let hex = '';
  for (let i = 0; i < 8; i++) {
    const w = words[i]!;
    hex += String.fromCharCode(
      DIGIT[(w >>> 28) & 15]!,
      DIGIT[(w >>> 24) & 15]!,
      DIGIT[(w >>> 20) & 15]!,
      DIGIT[(w >>> 16) & 15]!,
      DIGIT[(w >>> 12) & 15]!,
      DIGIT[(w >>> 8) & 15]!,
      DIGIT[(w >>> 4) & 15]!,
      DIGIT[w & 15]!,
    );
  }
  return hex;
}

/** Bytes of hex digits (an even number of them, checked by the caller). */
export function hexToBytes(hex: string): Uint8Array {
  const bytes = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

export function randomHex32(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}
