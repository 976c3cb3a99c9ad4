// The paywall's signing secrets, checked once for every key made from them:
// L402's token keyring (schemes/l402/token.ts) signs with them, the Payment
// scheme's binding keyring (schemes/payment/binding.ts) derives its keys from
// them. Same checks, same messages, whichever scheme is configured.
import { utf8 } from './encoding.js';

export const MIN_SECRET_BYTES = 32;

/** Something that derives keys for another use from its secrets (HMAC-SHA256(secret, label), newest first): a token Keyring does. */
export interface KeyDeriver {
  deriveKeys(label: string): Uint8Array[];
}

/** Each secret's UTF-8 bytes, newest first; throws a TypeError naming the secret that is not a string or is shorter than MIN_SECRET_BYTES. */
export function secretBytes(secrets: readonly string[]): Uint8Array[] {
  if (!Array.isArray(secrets) || secrets.length === 0) throw new TypeError('Keyring needs at least one secret');
  return secrets.map((secret, i) => {
    const name = `secret${secrets.length > 1 ? `[${i}]` : ''}`;
    if (typeof secret !== 'string')
      throw new TypeError(`${name} must be a string, got ${secret === undefined ? 'undefined (is the environment variable set?)' : typeof secret}`);
    const key = utf8(secret);
    // Short secrets can be guessed offline from one token; 32 bytes is what `openssl rand -hex 32` gives with room to spare.
    if (key.length < MIN_SECRET_BYTES)
      throw new TypeError(`${name} must be at least ${MIN_SECRET_BYTES} bytes, got ${key.length} (generate one with \`openssl rand -hex 32\`)`);
    return key;
  });
}
