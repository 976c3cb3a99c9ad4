// Byte <-> text helpers on Web APIs only, so lib/l402 runs on every runtime.

const encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}

export function base64UrlEncode(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i++) binary += String.fromCharCode(bytes[i]!);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/**
 * Decodes base64url or standard base64 (padded or not) to a binary string (one
 * char per byte), or null. atob implements WHATWG forgiving-base64, which
 * accepts missing padding; only the URL-safe alphabet needs mapping back.
 * Callers that accept only ASCII need no UTF-8 decoding step.
 */
export function base64ToBinary(input: string): string | null {
  // Our tokens are base64 of ASCII JSON, where only '>', '?', '~' (in a
  // caveat) can make a - or _; two searches cost less than two replaces that
  // find nothing.
  const standard = input.indexOf('-') < 0 && input.indexOf('_') < 0 ? input : input.replace(/-/g, '+').replace(/_/g, '/');
  try {
    return atob(standard);
  } catch {
    return null;
  }
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

// On the hot path the digits go straight to SHA-256's big-endian words, no byte
// array in between. Each digit's value comes from NIBBLE (128 bytes: two cache
// lines, where a table by digit pair was 32 KiB and, with a server's cold
// caches, cost more in misses than it saved in look-ups). A non-digit reads
// -1, which sets bit 31 of the OR of all values; a character beyond ASCII
// sets bit 7 of the OR of all codes.
/** Writes 32 bytes of lower-case hex into out[0..7] as big-endian words; false if not hex. */
export function hex32Words(hex: string, out: Int32Array): boolean {
  if (hex.length !== 64) return false;
  let values = 0;
  let chars = 0;
  for (let w = 0, at = 0; w < 8; w++, at += 8) {
    let word = 0;
    for (let i = at; i < at + 8; i++) {
      const c = hex.charCodeAt(i);
      const v = NIBBLE[c & 127]!;
      chars |= c;
      values |= v;
      word = (word << 4) | (v & 15);
    }
    out[w] = word;
  }
  return values >= 0 && chars < 128;
}

/** Constant-time equality of two digests as 8 words each. */
export function equalWords(a: Int32Array, b: Int32Array): boolean {
  let diff = 0;
  for (let i = 0; i < 8; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** Lower-case hex of 8 big-endian words. */
export function wordsHex(words: Int32Array): string {
  let hex = '';
  for (let i = 0; i < 8; i++) hex += (words[i]! >>> 0).toString(16).padStart(8, '0');
  return hex;
}

export function randomHex32(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}
