// A fresh paid credential for the benchmarks' paid route: a token minted for a
// new payment hash, and that payment's preimage, as the Authorization value.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { mintToken, type Keyring } from 'l402-paywall';

export function paidAuthorization(keyring: Keyring, route = '/api/paid', expiresAt = Math.floor(Date.now() / 1000) + 3600): string {
  const preimage = randomBytes(32);
  const token = mintToken(keyring, { paymentHash: bytesToHex(sha256(preimage)), expiresAt, caveats: { route, price_msat: 1000 } });
  return `L402 ${token}:${bytesToHex(preimage)}`;
}
