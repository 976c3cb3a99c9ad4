// Replay protection (DESIGN.md decision 3): uses are counted per payment hash,
// claimed atomically before the handler runs and released when it fails.

export interface ReplayStore {
  /**
   * Records one use of `paymentHash` unless `maxUses` uses are already recorded.
   * Must be atomic across every instance sharing the store. An in-process
   * store may answer synchronously, which spares the paid path an await.
   * @param expiresAt unix seconds after which the token is dead anyway
   */
  claim(paymentHash: string, maxUses: number, expiresAt: number): boolean | Promise<boolean>;
  /** Gives back one use (the paid request failed and may be retried). */
  release(paymentHash: string): Promise<void>;
}

/** One process only: fine for a single server, wrong for serverless (use a shared store). */
export function memoryReplayStore(): ReplayStore {
  const uses = new Map<string, { count: number; expiresAt: number }>();
  let nextSweep = 0;
  const sweep = (now: number) => {
    if (now < nextSweep) return;
    nextSweep = now + 60;
    for (const [hash, entry] of uses) if (entry.expiresAt <= now) uses.delete(hash);
  };
  return {
    claim(paymentHash, maxUses, expiresAt) {
      const now = Date.now() / 1000;
      sweep(now);
      const entry = uses.get(paymentHash);
      if (entry && entry.expiresAt > now) {
        if (entry.count >= maxUses) return false;
        entry.count++;
        return true;
      }
      uses.set(paymentHash, { count: 1, expiresAt });
      return true;
    },
    async release(paymentHash) {
      const entry = uses.get(paymentHash);
      if (entry && --entry.count <= 0) uses.delete(paymentHash);
    },
  };
}
