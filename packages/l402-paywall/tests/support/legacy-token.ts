// Tokens of format 1 (base64url JSON, what releases before the macaroon
// minted), made the way those releases made them, from the keyring's
// signature (Keyring.sign): for the tests that hold the legacy reader to its
// answers while it is still there (docs/l402-token.md "Tokens of format 1").
// Remove with the reader.
import type { Keyring, MintInput } from 'l402-paywall';

export function mintLegacyToken(keyring: Keyring, input: MintInput): string {
  const hash = input.paymentHash.toLowerCase();
  const caveats = Object.entries(input.caveats ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .sort();
  const payload = { v: 1, kid: keyring.signingKid, hash, exp: input.expiresAt, caveats, sig: keyring.sign(hash, input.expiresAt, caveats) };
  return Buffer.from(JSON.stringify(payload)).toString('base64url');
}
