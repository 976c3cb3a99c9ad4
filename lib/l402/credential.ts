// Parses `Authorization: L402 <token>:<preimage>` as real clients send it
// (reference/l402-interop.md): L402 or legacy LSAT in any case, base64url or
// standard base64 token, preimage hex in any case.
import { reject, type Rejection } from './reasons.js';

export interface Credential {
  token: string;
  /** 32 bytes, lower-case hex. */
  preimage: string;
}

// Any preimage text is taken here so a non-hex one is reported as INVALID_PREIMAGE.
const CREDENTIAL = /^(?:l402|lsat)[ \t]+([A-Za-z0-9+/_=-]+):([^\s:]+)[ \t]*$/i;
const PREIMAGE = /^[0-9a-f]{64}$/;
const MAX_HEADER_LENGTH = 8192;

export type ParseResult = { ok: true; credential: Credential } | { ok: false; rejection: Rejection };

export function parseCredential(header: string | null | undefined): ParseResult {
  if (!header) return reject('PAYMENT_REQUIRED');
  if (header.length > MAX_HEADER_LENGTH) return reject('MALFORMED_CREDENTIAL');
  return parseCommonForm(header) ?? parseAnyForm(header);
}

function parseAnyForm(header: string): ParseResult {
  const match = CREDENTIAL.exec(header.trim());
  if (!match) return reject('MALFORMED_CREDENTIAL');
  const preimage = match[2]!.toLowerCase();
  if (!PREIMAGE.test(preimage)) return reject('INVALID_PREIMAGE');
  return { ok: true, credential: { token: match[1]!, preimage } };
}

// Character classes by code unit: bit 1 a token character, bit 2 a hex digit
// (either case), bit 4 an upper-case hex letter.
const TOKEN_CHAR = 1;
const HEX = 2;
const UPPER_HEX = 4;
const CLASS = new Uint8Array(128);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=-') CLASS[c.charCodeAt(0)]! |= TOKEN_CHAR;
for (const c of '0123456789abcdefABCDEF') CLASS[c.charCodeAt(0)]! |= HEX;
for (const c of 'ABCDEF') CLASS[c.charCodeAt(0)]! |= UPPER_HEX;

/**
 * One pass, no regex and no copies, over the form clients send: scheme, spaces
 * or tabs, token, colon, 64 hex digits and nothing after. Returns undefined for
 * anything else (surrounding whitespace, a bad preimage, ...), which
 * parseAnyForm then decides, so both accept and refuse exactly the same headers.
 */
function parseCommonForm(header: string): ParseResult | undefined {
  const n = header.length;
  // The scheme: letters in any case (| 0x20 folds ASCII letters only), digits exactly.
  const s0 = header.charCodeAt(0) | 0x20;
  const s1 = header.charCodeAt(1);
  const s2 = header.charCodeAt(2);
  const s3 = header.charCodeAt(3);
  if (s0 !== 0x6c) return undefined; // l
  const isL402 = s1 === 0x34 && s2 === 0x30 && s3 === 0x32;
  const isLsat = (s1 | 0x20) === 0x73 && (s2 | 0x20) === 0x61 && (s3 | 0x20) === 0x74;
  if (!isL402 && !isLsat) return undefined;
  let i = 4;
  while (i < n && (header.charCodeAt(i) === 0x20 || header.charCodeAt(i) === 0x09)) i++;
  if (i === 4) return undefined;
  const tokenStart = i;
  const colon = n - 65;
  if (colon <= tokenStart || header.charCodeAt(colon) !== 0x3a) return undefined;
  for (; i < colon; i++) {
    const c = header.charCodeAt(i);
    if (c >= 128 || (CLASS[c]! & TOKEN_CHAR) === 0) return undefined;
  }
  let upper = false;
  for (i = colon + 1; i < n; i++) {
    const c = header.charCodeAt(i);
    if (c >= 128) return undefined;
    const k = CLASS[c]!;
    if ((k & HEX) === 0) return undefined;
    if (k & UPPER_HEX) upper = true;
  }
  const preimage = header.slice(colon + 1);
  return { ok: true, credential: { token: header.slice(tokenStart, colon), preimage: upper ? preimage.toLowerCase() : preimage } };
}
