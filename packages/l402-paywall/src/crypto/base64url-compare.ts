// Constant-time comparison of a text against the base64url (no padding) of
// bytes, without writing the encoding out: a Payment challenge id is checked
// against the MAC this server computes, and encoding the MAC to a string (then
// comparing) cost more than the comparison itself. Each digit is mapped to its
// character by arithmetic on masks rather than by a table indexed with MAC
// bits, so neither memory access nor branches depend on the secret-derived
// value; only the text's length (public) ends it early.

/** The base64url character (RFC 4648 §5) of a 6-bit value, without branches or a table. */
function digitChar(d: number): number {
  // A-Z for 0-25, a-z for 26-51, 0-9 for 52-61, '-' for 62, '_' for 63: start
  // at 'A' + d and shift by each range's offset once d is past its start
  // ((last - d) >> 8 is -1, all ones, exactly when d > last).
  let c = d + 65;
  c += ((25 - d) >> 8) & 6; // 26 -> 'a' (97 = 26 + 65 + 6)
  c -= ((51 - d) >> 8) & 75; // 52 -> '0' (48 = 52 + 71 - 75)
  c -= ((61 - d) >> 8) & 13; // 62 -> '-' (45 = 62 - 4 - 13)
  c += ((62 - d) >> 8) & 49; // 63 -> '_' (95 = 63 - 17 + 49)
  return c;
}

/** Whether `text` is exactly the unpadded base64url of `bytes`: the same work whatever characters differ (length is not secret). */
export function equalsBase64Url(bytes: Uint8Array, text: string): boolean {
  const n = bytes.length;
  if (text.length !== Math.ceil((n * 4) / 3)) return false;
  let diff = 0;
  let at = 0;
  let i = 0;
  for (; i + 3 <= n; i += 3) {
    const group = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    diff |= digitChar(group >>> 18) ^ text.charCodeAt(at);
    diff |= digitChar((group >>> 12) & 63) ^ text.charCodeAt(at + 1);
    diff |= digitChar((group >>> 6) & 63) ^ text.charCodeAt(at + 2);
    diff |= digitChar(group & 63) ^ text.charCodeAt(at + 3);
    at += 4;
  }
  const rest = n - i;
  if (rest > 0) {
    const group = (bytes[i]! << 16) | (rest === 2 ? bytes[i + 1]! << 8 : 0);
    diff |= digitChar(group >>> 18) ^ text.charCodeAt(at);
    diff |= digitChar((group >>> 12) & 63) ^ text.charCodeAt(at + 1);
    if (rest === 2) diff |= digitChar((group >>> 6) & 63) ^ text.charCodeAt(at + 2);
  }
  return diff === 0;
}
