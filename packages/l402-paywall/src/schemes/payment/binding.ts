// Stateless challenge binding (draft-httpauth-payment, "Recommended:
// HMAC-SHA256 Binding"): a challenge's id is
//   base64url(HMAC-SHA256(key, realm|method|intent|request|expires|digest|opaque))
// seven slots joined by "|", an absent optional one empty, request and opaque
// as their base64url text. A credential echoes the challenge; its id verifies
// only if every bound parameter is the one issued, so the server keeps no
// record of the challenges it sent.
//
// The key is derived from the paywall's secret, never the secret itself: the
// L402 token keyring (schemes/l402/token.ts) keys its HMACs with the secret, so a binding
// key equal to it would let one scheme's MAC stand for the other's. Keys
// rotate as token keys do: the newest secret issues, every secret verifies,
// so challenges issued before a rotation stay good until they expire (the
// draft's "Challenge-Binding Secret Management").
import { equalsBase64Url } from '../../crypto/base64url-compare.js';
import { base64UrlEncode, utf8 } from '../../crypto/encoding.js';
import { KeyedHmac, hmacSha256 } from '../../crypto/sha256-block.js';
import { MIN_SECRET_BYTES, secretBytes, type KeyDeriver } from '../../crypto/secrets.js';

/** The parameters a challenge id binds, request and opaque as their base64url text. */
export interface BoundParameters {
  realm: string;
  method: string;
  intent: string;
  request: string;
  expires?: string;
  digest?: string;
  opaque?: string;
}

/** What a binding key is derived with: HMAC-SHA256(secret, label). Versioned, so a change of scheme changes every key. */
export const BINDING_KEY_LABEL = 'MPP/v1 challenge binding';

/**
 * The HMAC input, or undefined when a slot holds a "|": the join is then no
 * longer one-to-one (realm "a|b" and method "c" would read as realm "a" and
 * method "b|c"), so such parameters are never issued and never verify.
 */
export function bindingInput(p: BoundParameters): string | undefined {
  const slots = [p.realm, p.method, p.intent, p.request, p.expires ?? '', p.digest ?? '', p.opaque ?? ''];
  for (const slot of slots) if (slot.includes('|')) return undefined;
  return slots.join('|');
}

/** The id of a challenge under one key: base64url without padding of the HMAC. Throws on parameters bindingInput refuses. */
export function challengeId(key: Uint8Array, parameters: BoundParameters): string {
  const input = writeBindingInput(parameters);
  if (input === undefined) throw new TypeError(SEPARATOR_IN_SLOT);
  return base64UrlEncode(hmacSha256(key, input));
}

const SEPARATOR_IN_SLOT = 'A challenge parameter contains "|", which the binding cannot separate';

/** The binding key of one secret (UTF-8 bytes). */
export function deriveBindingKey(secret: Uint8Array): Uint8Array {
  return hmacSha256(secret, utf8(BINDING_KEY_LABEL));
}

/** Binding keys, newest first: the newest issues, every one verifies. */
export class BindingKeyring {
  readonly #keys: readonly Uint8Array[];
  /** Each key's HMAC, its pads absorbed once: verifying MACs a kilobyte per credential. */
  readonly #macs: readonly KeyedHmac[];

  /** From the keys themselves (each at least 32 bytes), newest first; fromSecrets derives them from the paywall's secrets. */
  constructor(keys: readonly Uint8Array[]) {
    if (!Array.isArray(keys) || keys.length === 0) throw new TypeError('BindingKeyring needs at least one key');
    for (const key of keys) {
      if (!(key instanceof Uint8Array) || key.length < MIN_SECRET_BYTES) throw new TypeError(`A binding key must be at least ${MIN_SECRET_BYTES} bytes`);
    }
    this.#keys = keys.map((key) => key.slice());
    this.#macs = this.#keys.map((key) => new KeyedHmac(key));
  }

  /**
   * The keys of the paywall's secret or secrets (newest first), checked as the
   * token keyring checks them, with the same messages: the same secrets
   * configure both schemes.
   */
  static fromSecrets(secret: string | readonly string[]): BindingKeyring {
    const secrets = typeof secret === 'string' ? [secret] : secret;
    secretBytes(secrets);
    return new BindingKeyring([...new Set(secrets)].map((s) => deriveBindingKey(utf8(s))));
  }

  /** The keys of a token keyring's secrets (newest first): the same keys fromSecrets derives from them. */
  static fromKeyring(keyring: KeyDeriver): BindingKeyring {
    return new BindingKeyring(keyring.deriveKeys(BINDING_KEY_LABEL));
  }

  /** The id the newest key gives these parameters (challengeId's, with the key's pads absorbed once). Throws where challengeId does. */
  issue(parameters: BoundParameters): string {
    const input = writeBindingInput(parameters);
    if (input === undefined) throw new TypeError(SEPARATOR_IN_SLOT);
    return base64UrlEncode(this.#macs[0]!.mac(input));
  }

  /**
   * Whether `id` is the id of these parameters under any key. Each comparison
   * is constant-time and every key is tried, so the time taken says nothing
   * about how much of the id was right or which key matched.
   */
  verify(id: string, parameters: BoundParameters): boolean {
    const input = writeBindingInput(parameters);
    if (input === undefined) return false;
    let matched = false;
    for (const mac of this.#macs) matched = equalsBase64Url(mac.mac(input), id) || matched;
    return matched;
  }
}

const encoder = new TextEncoder();
// The HMAC input is written here rather than joined into a string and encoded
// again (a kilobyte per credential); it is MACed before the next call, and
// JavaScript runs one call at a time. Its size holds any input this server's
// own challenges make (about 1 KB); a longer one (verify is public) gets a
// buffer of its own, so no caller can leave a large one behind.
const inputBytes = new Uint8Array(8 * 1024);

/** bindingInput's text as UTF-8 bytes, written into the shared buffer (a view of it); undefined where bindingInput is. */
function writeBindingInput(p: BoundParameters): Uint8Array | undefined {
  const slots = [p.realm, p.method, p.intent, p.request, p.expires ?? '', p.digest ?? '', p.opaque ?? ''];
  let most = slots.length;
  for (const slot of slots) {
    if (slot.includes('|')) return undefined;
    most += slot.length * 3; // UTF-8 takes at most three bytes per UTF-16 code unit
  }
  const out = most > inputBytes.length ? new Uint8Array(most) : inputBytes;
  let at = 0;
  for (let i = 0; i < slots.length; i++) {
    if (i > 0) out[at++] = 0x7c; // "|"
    const slot = slots[i]!;
    // Short ASCII slots (realm, method, intent, expires) by character: each
    // encodeInto has a fixed cost beyond a short slot's whole copy.
    let copied = 0;
    if (slot.length <= 64) {
      while (copied < slot.length && slot.charCodeAt(copied) < 0x80) {
        out[at + copied] = slot.charCodeAt(copied);
        copied++;
      }
    }
    at += copied === slot.length ? copied : encoder.encodeInto(slot, out.subarray(at)).written;
  }
  return out.subarray(0, at);
}
