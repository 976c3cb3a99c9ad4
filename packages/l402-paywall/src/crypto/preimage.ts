// Proof of payment: a preimage whose SHA-256 is the payment hash. One copy for
// the server's verifiers, the backends' checks and the client's wallets.
import { equalWords, hex32Words } from './encoding.js';
import { padBlock, sha256Block } from './sha256-block.js';

/**
 * Whether `preimage` (64 hex digits) hashes to `paymentHash` (64 hex digits):
 * one SHA-256 compression and a constant-time comparison. Lower-case hex only,
 * as both are written on the wire; callers holding another case lower it first.
 */
export function isPreimageOf(preimage: string, paymentHash: string): boolean {
  const block = new Int32Array(16);
  const hash = new Int32Array(8);
  const digest = new Int32Array(8);
  if (!hex32Words(preimage, block) || !hex32Words(paymentHash, hash)) return false;
  padBlock(block, 32, 0);
  sha256Block(block, digest);
  return equalWords(digest, hash);
}
