// The token format verified the plain way, with nothing of ours: atob,
// JSON.parse, @noble/hashes' HMAC and SHA-256, both HMACs computed afresh per
// token. What a careful implementation from docs/library-reference.md's "Token format" would
// do, and the yardstick for what the hand-tuned verifier (token.ts,
// sha256-block.ts) buys: npm run bench prints the two side by side.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { hexToBytes } from '@noble/hashes/utils.js';

const CAVEAT = /^[a-z][a-z0-9_]{0,31}=[\x20-\x7e]{0,512}$/;
const HEX_64 = /^[0-9a-f]{64}$/;
const encoder = new TextEncoder();

/** Secrets by key id, as a Keyring holds them. */
export function plainKeys(secrets: readonly string[]): Map<string, Uint8Array> {
  const keys = new Map<string, Uint8Array>();
  for (const secret of secrets) {
    const key = encoder.encode(secret);
    const kid = Array.from(hmac(sha256, key, encoder.encode('L402/v1 key id')).subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join('');
    keys.set(kid, key);
  }
  return keys;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/** The token's caveats when it verifies against the preimage (signature, expiry, SHA256(preimage) == hash), else null. */
export function plainVerify(keys: Map<string, Uint8Array>, token: string, preimage: string, nowSeconds: number): string[] | null {
  let t: Record<string, unknown>;
  try {
    t = JSON.parse(atob(token.replace(/-/g, '+').replace(/_/g, '/'))) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (typeof t !== 'object' || t === null || t.v !== 1 || typeof t.kid !== 'string') return null;
  if (typeof t.hash !== 'string' || !HEX_64.test(t.hash) || typeof t.sig !== 'string' || !HEX_64.test(t.sig)) return null;
  if (typeof t.exp !== 'number' || !Number.isSafeInteger(t.exp) || t.exp <= 0) return null;
  if (!Array.isArray(t.caveats) || t.caveats.length > 16 || !t.caveats.every((c) => typeof c === 'string' && CAVEAT.test(c))) return null;
  const secret = keys.get(t.kid);
  if (!secret || !HEX_64.test(preimage)) return null;
  const caveatKey = hmac(sha256, secret, encoder.encode(`L402/v1 caveats\n${(t.caveats as string[]).join('\n')}`));
  const message = new Uint8Array(41);
  message[0] = 1;
  message.set(hexToBytes(t.hash), 1);
  new DataView(message.buffer).setBigUint64(33, BigInt(t.exp));
  if (!equalBytes(hmac(sha256, caveatKey, message), hexToBytes(t.sig))) return null;
  if (t.exp <= nowSeconds) return null;
  return equalBytes(sha256(hexToBytes(preimage)), hexToBytes(t.hash)) ? (t.caveats as string[]) : null;
}
