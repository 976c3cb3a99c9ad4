// Credentials that may open more requests: a server can sell several requests
// per payment (this project's `uses` option, Aperture's time-limited tokens).
// Kept per origin and path; sent with the next request there until the server
// refuses them (any 402, e.g. TOKEN_ALREADY_USED or TOKEN_EXPIRED) or they are
// known to be used up or expired. Tokens this project mints say how many uses
// they carry and when they expire; other servers' tokens are opaque, so they
// are tried until refused (a refusal costs no round trip: its 402 carries the
// fresh challenge that is paid instead).
import { decodeToken } from '../schemes/l402/token.js';
import { setNewest } from '../util/bounded-map.js';

export interface StoredCredential {
  /** The Authorization header value. */
  authorization: string;
  /** Uses left as far as the client knows; Infinity when the token does not say. */
  usesLeft: number;
  /** Unix seconds, when the token says. */
  expiresAt?: number;
}

export interface TokenStore {
  get(key: string): StoredCredential | undefined;
  set(key: string, credential: StoredCredential): void;
  delete(key: string): void;
}

/**
 * An in-memory token store (by default each wallet has one, for the calls
 * paying with it). Other servers' tokens say nothing of their expiry, so an agent
 * paying many paths would keep them all: past `maxEntries` the oldest goes.
 */
export function createTokenStore(options: { maxEntries?: number } = {}): TokenStore {
  const maxEntries = options.maxEntries ?? 10_000;
  if (!Number.isSafeInteger(maxEntries) || maxEntries < 1) throw new TypeError(`createTokenStore: maxEntries must be a positive integer, got ${maxEntries}`);
  const map = new Map<string, StoredCredential>();
  return {
    get: (key) => map.get(key),
    set: (key, credential) => setNewest(map, key, credential, maxEntries),
    delete: (key) => void map.delete(key),
  };
}

export function tokenKey(url: URL): string {
  return url.origin + url.pathname;
}

/**
 * The credential to keep after a just-paid token's request was answered
 * `status` (undefined: no answer came), or undefined when it has nothing left.
 * 401/402: refused, nothing. A 5xx or no answer: all of it, since the server
 * gives the use back when it fails, and the next call must not pay again for
 * it (if the request was served after all, that call is refused and pays the
 * fresh challenge in the same answer). Anything else used one use (the
 * paywall counts every answer below 500): what it allows beyond that.
 */
export function keptCredential(authorization: string, token: string, status: number | undefined): StoredCredential | undefined {
  if (status === 401 || status === 402) return undefined;
  const failed = status === undefined || status >= 500;
  const ours = decodeToken(token);
  if (!ours) return { authorization, usesLeft: Infinity };
  const uses = ours.caveats.find((c) => c.startsWith('uses='));
  const total = uses ? Number(uses.slice(5)) : 1;
  const left = failed ? total : total - 1;
  if (!(left > 0)) return undefined;
  return { authorization, usesLeft: left, expiresAt: ours.exp };
}

/** The credential to send with a request to key, if one is known to be usable. */
export function usableCredential(store: TokenStore, key: string): StoredCredential | undefined {
  const credential = store.get(key);
  if (!credential) return undefined;
  if (credential.usesLeft <= 0 || (credential.expiresAt !== undefined && credential.expiresAt <= Date.now() / 1000)) {
    store.delete(key);
    return undefined;
  }
  return credential;
}

/** Counts a use the server accepted; forgets the token once it has none left. */
export function countUse(store: TokenStore, key: string, credential: StoredCredential): void {
  credential.usesLeft -= 1;
  if (credential.usesLeft <= 0) store.delete(key);
}
