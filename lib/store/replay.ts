// The L402 replay store on a shared key-value store, so every function
// instance sees every use of a payment hash.
import type { ReplayStore } from 'l402-paywall';
import type { KeyValueStore } from './types.js';

// Kept past token expiry so clock skew between instances cannot reopen a token.
const SKEW_MS = 5 * 60_000;

export interface KvReplayStore extends ReplayStore {
  /** Uses recorded so far, without recording one. */
  usedCount(paymentHash: string): Promise<number>;
}

export function kvReplayStore(store: KeyValueStore, prefix = 'l402:uses:'): KvReplayStore {
  return {
    async usedCount(paymentHash) {
      return Number((await store.get(prefix + paymentHash)) ?? 0);
    },
    async claim(paymentHash, maxUses, expiresAt) {
      const ttlMs = Math.max(1000, Math.ceil(expiresAt * 1000 - Date.now())) + SKEW_MS;
      return (await store.incrementBelow(prefix + paymentHash, maxUses, ttlMs)) !== null;
    },
    async release(paymentHash) {
      await store.decrementToZero(prefix + paymentHash);
    },
  };
}
