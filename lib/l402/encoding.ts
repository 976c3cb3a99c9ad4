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

/** Writes 32 bytes of lower-case hex into `out` at `offset` without allocating; false if not hex. */
export function hex32Into(hex: string, out: Uint8Array, offset: number): boolean {
  if (hex.length !== 64) return false;
  for (let i = 0; i < 32; i++) {
    const b = byteAt(hex, i);
    if (b < 0) return false;
    out[offset + i] = b;
  }
  return true;
}

/** Constant-time equality of 32 `bytes` and a 32-byte lower-case hex string (false if not hex). */
export function equalsHex32(bytes: Uint8Array, hex: string): boolean {
  if (hex.length !== 64) return false;
  let diff = 0;
  for (let i = 0; i < 32; i++) diff |= bytes[i]! ^ byteAt(hex, i); // -1 for a bad digit sets high bits
  return diff === 0;
}

export function randomHex32(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  let hex = '';
  for (const b of bytes) hex += b.toString(16).padStart(2, '0');
  return hex;
}
