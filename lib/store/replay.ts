// The L402 replay store on a shared key-value store, so every function
// instance sees every use of a payment hash.
import type { ReplayStore } from 'l402-paywall';
import type { KeyValueStore } from './types.js';

export interface KvReplayStore extends ReplayStore {
  /** Uses recorded so far, without recording one. */
  usedCount(paymentHash: string): Promise<number>;
}

export function kvReplayStore(store: KeyValueStore, prefix = 'l402:uses:'): KvReplayStore {
  return {
    usedCount: (paymentHash) => store.usesHeld(prefix + paymentHash),
    claim: (paymentHash, maxUses, expiresAt, attempt) => store.claimUse(prefix + paymentHash, maxUses, expiresAt, attempt),
    release: (paymentHash, attempt, expiresAt) => store.releaseUse(prefix + paymentHash, attempt, expiresAt),
  };
}
