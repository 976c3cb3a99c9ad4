/**
 * The L402 scheme's WWW-Authenticate values, each its own field
 * (docs/l402-token.md "Challenges"): `LSAT` then `L402` with
 * `macaroon="…", invoice="…"` in that order (lsat-js, lnget, Aperture's
 * interceptor and Lightning Labs' L402 SDK read the key at the start, and the
 * invoice right after it), then the bLIP-26 revision's opaque form
 * `version="0", token="…"`, which carries the same macaroon.
 */
export function challengeHeaders(macaroon: string, invoice: string): string[] {
  return [
    `LSAT macaroon="${macaroon}", invoice="${invoice}"`,
    `L402 macaroon="${macaroon}", invoice="${invoice}"`,
    `L402 version="0", token="${macaroon}", invoice="${invoice}"`,
  ];
}
