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
  try {
    return atob(input.replace(/-/g, '+').replace(/_/g, '/'));
  } catch {
    return null;
  }
}

// Lower-case hex only: tokens and normalised preimages are lower case, so one
// spelling per value and no case folding on the hot path.
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) NIBBLE['0123456789abcdef'.charCodeAt(i)] = i;

function byteAt(hex: string, i: number): number {
  const hi = NIBBLE[hex.charCodeAt(2 * i)] ?? -1;
  const lo = NIBBLE[hex.charCodeAt(2 * i + 1)] ?? -1;
  return hi < 0 || lo < 0 ? -1 : (hi << 4) | lo;
}

/** True for exactly 32 bytes of lower-case hex. */
export function isHex32(value: unknown): value is string {
  if (typeof value !== 'string' || value.length !== 64) return false;
  for (let i = 0; i < 32; i++) if (byteAt(value, i) < 0) return false;
  return true;
}

// On the hot path the digits go straight to SHA-256's big-endian words, no byte
// array in between, two digits per look-up: PAIR[(first << 7) | second] is the
// byte, or 256 when either is not a digit (32 KiB, measured faster than one
// look-up per digit). Characters beyond ASCII are caught by OR-ing them all.
const PAIR = new Int16Array(1 << 14).fill(256);
for (let i = 0; i < 16; i++) {
  for (let j = 0; j < 16; j++) PAIR[('0123456789abcdef'.charCodeAt(i) << 7) | '0123456789abcdef'.charCodeAt(j)] = (i << 4) | j;
}

/** Writes 32 bytes of lower-case hex into out[0..7] as big-endian words; false if not hex. */
export function hex32Words(hex: string, out: Int32Array): boolean {
  if (hex.length !== 64) return false;
  let bytes = 0;
  let chars = 0;
  for (let w = 0, at = 0; w < 8; w++, at += 8) {
    const c0 = hex.charCodeAt(at), c1 = hex.charCodeAt(at + 1), c2 = hex.charCodeAt(at + 2), c3 = hex.charCodeAt(at + 3);
    const c4 = hex.charCodeAt(at + 4), c5 = hex.charCodeAt(at + 5), c6 = hex.charCodeAt(at + 6), c7 = hex.charCodeAt(at + 7);
    chars |= c0 | c1 | c2 | c3 | c4 | c5 | c6 | c7;
    const b0 = PAIR[((c0 << 7) | c1) & 16383]!, b1 = PAIR[((c2 << 7) | c3) & 16383]!;
    const b2 = PAIR[((c4 << 7) | c5) & 16383]!, b3 = PAIR[((c6 << 7) | c7) & 16383]!;
    bytes |= b0 | b1 | b2 | b3;
    out[w] = (b0 << 24) | (b1 << 16) | (b2 << 8) | b3;
  }
  return bytes < 256 && chars < 128;
}

const compared = new Int32Array(8);

/** Constant-time equality of 8 big-endian `words` and a 32-byte lower-case hex string (false if not hex). */
export function equalsHex32Words(words: Int32Array, hex: string): boolean {
  const wellFormed = hex32Words(hex, compared); // reads every digit either way
  let diff = 0;
  for (let i = 0; i < 8; i++) diff |= words[i]! ^ compared[i]!;
  return wellFormed && diff === 0;
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
