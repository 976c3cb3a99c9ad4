// Proof of payment: a preimage whose SHA-256 is the payment hash. One copy for
// the server's verifiers, the backends' checks and the client's wallets.
import { hex32Words, wordsEqualHex } from './encoding.js';
import { padBlock, sha256Block } from './sha256-block.js';

/**
 * Whether `preimage` (64 hex digits) hashes to `paymentHash` (64 hex digits):
 * one SHA-256 compression and a constant-time comparison. Lower-case hex only,
 * as both are written on the wire; callers holding another case lower it first.
 */
export function isPreimageOf(preimage: string, paymentHash: string): boolean {
  const block = new Int32Array(16);
  if (!hex32Words(preimage, block)) return false;
  padBlock(block, 32, 0);
  // The digest over the block's first words: the compression reads the whole block before it writes.
  sha256Block(block, block);
  return wordsEqualHex(block, paymentHash);
}
