// LUD-04 signature check, pure: the wallet signs the 32 raw bytes of k1 with
// the linking key (secp256k1 ECDSA, DER), with no hashing of its own.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hexToBytes } from '@noble/hashes/utils.js';

const K1 = /^[0-9a-f]{64}$/;
const COMPRESSED_KEY = /^0[23][0-9a-f]{64}$/;
// A DER ECDSA signature is at most 72 bytes (two 33-byte integers and 6 bytes of framing).
const DER_SIGNATURE = /^30[0-9a-f]{10,142}$/;

export type LnurlAuthCheck = { ok: true } | { ok: false; reason: string };

/** Verifies `sig` (DER hex) by `key` (33-byte compressed hex) over k1 (32 bytes hex). Never throws. */
export function verifyLnurlAuthSignature(k1: string, sig: string, key: string): LnurlAuthCheck {
  k1 = k1.toLowerCase();
  sig = sig.toLowerCase();
  key = key.toLowerCase();
  if (!K1.test(k1)) return { ok: false, reason: 'k1 must be 32 bytes of hex' };
  if (!COMPRESSED_KEY.test(key)) return { ok: false, reason: 'key must be a 33-byte compressed secp256k1 public key in hex' };
  if (!DER_SIGNATURE.test(sig) || sig.length % 2 !== 0) return { ok: false, reason: 'sig must be a DER-encoded signature in hex' };
  try {
    // prehash false: k1 is already the 32-byte digest the wallet signed.
    // lowS false: a valid high-S signature proves the key just as well, and
    // malleability is harmless for a single-use challenge.
    const valid = secp256k1.verify(hexToBytes(sig), hexToBytes(k1), hexToBytes(key), { prehash: false, lowS: false, format: 'der' });
    return valid ? { ok: true } : { ok: false, reason: 'signature does not verify for this key and k1' };
  } catch {
    // Points off the curve and malformed DER land here.
    return { ok: false, reason: 'signature or key is malformed' };
  }
}
