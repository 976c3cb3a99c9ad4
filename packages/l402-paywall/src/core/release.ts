// Giving a claimed use back when the handler failed: the payer may retry
// with the same credential. The store may be down just then: tried again in
// the background for about a minute.
import type { ReplayStore } from './replay.js';
import type { ClaimKey } from './scheme.js';

/** Waits between tries of a release the store did not take: about a minute in all. */
export const RELEASE_RETRY_DELAYS_MS: readonly number[] = [1000, 2000, 4000, 8000, 16000, 32000];

/** Where work after the answer reports, and what keeps it alive. */
export interface Background {
  onError: (error: unknown, context: string) => void;
  waitUntil?: (promise: Promise<unknown>) => void;
}

/**
 * Gives a use back: tried once now, and while the store fails, again in the
 * background (RELEASE_RETRY_DELAYS_MS) until it is taken or the token is
 * dead. Resolves after the first try; a release never throws.
 */
export function giveBack(replay: ReplayStore, { key: token, attempt }: { key: ClaimKey; attempt: string }, { onError, waitUntil }: Background): Promise<void> {
  const tryOnce = async () => {
    try {
      await replay.release(token.hash, attempt, token.exp);
      return true;
    } catch (error) {
      onError(error, 'releasing a use failed');
      return false;
    }
  };
  const first = tryOnce();
  const retries = first.then(async (taken) => {
    for (const delay of RELEASE_RETRY_DELAYS_MS) {
      if (taken || token.exp * 1000 <= Date.now()) return;
      await pause(delay);
      taken = await tryOnce();
    }
  });
  if (waitUntil) {
    try {
      waitUntil(retries);
    } catch (error) {
      onError(error, 'waitUntil failed');
    }
  }
  return first.then(() => undefined);
}

/** A wait that does not keep a Node process alive by itself. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });
}
