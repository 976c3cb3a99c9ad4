// Waiting, bounded: the service's timers, in one place.

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * The promise's outcome, or `timeoutError()` thrown after `ms`. The timer does
 * not keep the process alive, and a late failure of the promise after the
 * timeout is not an unhandled rejection.
 */
export function withTimeout<T>(promise: Promise<T>, ms: number, timeoutError: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError()), ms);
    timer.unref?.();
  });
  promise.catch(() => {});
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
