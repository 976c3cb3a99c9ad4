// The development wallet's key, apart from the login that signs with it
// (dev-login.ts): who is an admin (auth.ts) asks for it too, and the login
// needs auth.ts through lnurl-auth.ts, so one module would import itself.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { servicePart, type ServiceContext } from '../context.js';

export interface DevLoginKey {
  secretKey: Uint8Array;
  /** 33-byte compressed public key, hex. */
  pubkey: string;
}

const derivedKey = servicePart('dev login key', (ctx): DevLoginKey => {
  // Derived, not stored: the same dev node key (kept under DATA_DIR) gives the same login across restarts.
  const secretKey = hmac(sha256, hexToBytes(ctx.config.lightning.devNodePrivateKey), utf8ToBytes('l402 dev login key'));
  return { secretKey, pubkey: bytesToHex(secp256k1.getPublicKey(secretKey, true)) };
});

/** The development wallet's key; undefined wherever the dev node is not the provider or in production. */
export function devLoginKey(ctx: ServiceContext): DevLoginKey | undefined {
  if (!ctx.devNode || ctx.config.production || ctx.config.lightning.provider !== 'dev') return undefined;
  return ctx.part(derivedKey);
}
