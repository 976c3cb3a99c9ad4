// Parses an L402 credential in every form a public client sends
// (docs/l402-token.md "Credentials"):
//   Authorization: L402 <token>:<preimage>     L402 or legacy LSAT in any case, the token in
//                                              standard or URL-safe base64, padded or not, the
//                                              preimage hex in any case;
//   Authorization: LSAT <t>:<p>, L402 <t>:<p>  Aperture's REST clients send both fields, and a Web
//                                              Request joins them with ", ": one credential, twice;
//   Macaroon: <hex>  (or Grpc-Metadata-Macaroon) the macaroon alone, its preimage in a `preimage=`
//                                              caveat, read by the pipeline as `Macaroon <hex>`.
// verifyAuthorization takes the header to a verified token, the paywall's per-request check.
import { base64Encode, hexToBytes, isLowerHex } from '../../crypto/encoding.js';
import { reject, type Rejection } from '../../core/rejections.js';
import { verifyToken, type Keyring, type VerifyResult } from './token.js';

export interface Credential {
  token: string;
  /** 32 bytes, lower-case hex; empty when the credential is a macaroon alone, which carries its preimage in a caveat. */
  preimage: string;
}

// Any preimage text is taken here so a non-hex one is reported as INVALID_PREIMAGE.
const CREDENTIAL = /^(?:l402|lsat)[ \t]+([A-Za-z0-9+/_=-]+):([^\s:]+)[ \t]*$/i;
const PREIMAGE = /^[0-9a-f]{64}$/;
const MACAROON_ALONE = /^macaroon[ \t]+((?:[0-9a-fA-F]{2})+)[ \t]*$/i;
const MAX_HEADER_LENGTH = 8192;

export type ParseResult = { ok: true; credential: Credential } | { ok: false; rejection: Rejection };

export function parseCredential(header: string | null | undefined): ParseResult {
  if (!header) return reject('PAYMENT_REQUIRED');
  if (header.length > MAX_HEADER_LENGTH) return reject('MALFORMED_CREDENTIAL');
  const alone = MACAROON_ALONE.exec(header.trim());
  if (alone) return { ok: true, credential: { token: base64Encode(hexToBytes(alone[1]!)), preimage: '' } };
  // No credential holds a comma, so fields joined by ", " split back apart; each must be the same credential.
  const fields = header.split(',');
  if (fields.length === 1) return parseOne(header);
  let found: Credential | undefined;
  for (const field of fields) {
    const parsed = parseOne(field);
    if (!parsed.ok || (found && (found.token !== parsed.credential.token || found.preimage !== parsed.credential.preimage)))
      return reject('MALFORMED_CREDENTIAL');
    found = parsed.credential;
  }
  return { ok: true, credential: found! };
}

function parseOne(field: string): ParseResult {
  const match = CREDENTIAL.exec(field.trim());
  if (!match) return reject('MALFORMED_CREDENTIAL');
  const preimage = match[2]!.toLowerCase();
  if (!PREIMAGE.test(preimage)) return reject('INVALID_PREIMAGE');
  return { ok: true, credential: { token: match[1]!, preimage } };
}

export type AuthorizationResult = VerifyResult;

/**
 * parseCredential, then verifyToken: the same answers, sooner. The form
 * clients send (scheme, one space, token, colon, 64 lower-case hex digits) is
 * read where it stands in the header, with no regex and no substrings: with
 * caches as cold as a server leaves them, header to verified token costs
 * about a third less. Any other form, and any refusal, goes the general way,
 * so the reason given is always its reason.
 */
export function verifyAuthorization(keyring: Keyring, header: string | null | undefined, nowSeconds = Date.now() / 1000): AuthorizationResult {
  if (header && header.length <= MAX_HEADER_LENGTH && hasScheme(header) && header.charCodeAt(4) === 32) {
    const colon = header.indexOf(':', 5);
    if (colon > 5 && header.length === colon + 65) {
      const result = keyring.verifyAt(header, 5, colon, header, colon + 1, nowSeconds);
      if (result.ok) return result;
      // A refusal after the token was read whole is the general way's too,
      // unless that way refuses the preimage's form first.
      const { code } = result.rejection;
      if (code !== 'MALFORMED_TOKEN' && code !== 'PREIMAGE_MISMATCH' && isLowerHex(header.slice(colon + 1), 64)) return result;
    }
  }
  const parsed = parseCredential(header);
  return parsed.ok ? verifyToken(keyring, parsed.credential.token, parsed.credential.preimage, nowSeconds) : parsed;
}

/** L402 or LSAT in any case. Only letters are folded (| 32): a digit folded that way would match a control character too. */
function hasScheme(header: string): boolean {
  const c1 = header.charCodeAt(1);
  return (
    (header.charCodeAt(0) | 32) === 108 && // l
    ((c1 === 52 && header.charCodeAt(2) === 48 && header.charCodeAt(3) === 50) || // 402
      ((c1 | 32) === 115 && (header.charCodeAt(2) | 32) === 97 && (header.charCodeAt(3) | 32) === 116)) // sat
  );
}
