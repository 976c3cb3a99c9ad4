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
  const match = CREDENTIAL.exec(header.trim());
  if (!match) return reject('MALFORMED_CREDENTIAL');
  const preimage = match[2]!.toLowerCase();
  if (!PREIMAGE.test(preimage)) return reject('INVALID_PREIMAGE');
  return { ok: true, credential: { token: match[1]!, preimage } };
}

