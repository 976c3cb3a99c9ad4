// The dashboard's development login: outside production, with the embedded
// dev node as the provider, the server plays the wallet. It signs the real
// LNURL-auth challenge (k1) with a development key derived from the dev node's
// key and hands the signature to the same callback check a phone wallet's goes
// through (answerWallet), so the page then collects its login token by polling as
// usual. Nothing else about the login changes. The key is an admin locally, so
// it sees the demo payments made from the landing page (they have no owner).
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { HttpError } from '../../http/errors.js';
import type { ServiceContext } from '../context.js';
import { devLoginKey } from './dev-login-key.js';
import { answerWallet, type WalletAnswer } from './lnurl-auth.js';

/** Signs the challenge `k1` as the development wallet and calls back; the wallet's LUD-04 answer. */
export async function signInWithDevWallet(ctx: ServiceContext, k1: string, clientIp: string): Promise<WalletAnswer & { pubkey: string }> {
  const key = devLoginKey(ctx);
  if (!key) throw new HttpError(404, 'NOT_FOUND', 'No dev login here: it exists only with the embedded dev node outside production');
  const sig = bytesToHex(secp256k1.sign(hexToBytes(k1), key.secretKey, { prehash: false, format: 'der' }));
  // As a wallet echoes the login QR code's callback: a k1 issued for anything but a login (an erasure) is refused there.
  return { ...(await answerWallet(ctx, { tag: 'login', action: 'login', k1, sig, key: key.pubkey }, clientIp)), pubkey: key.pubkey };
}
