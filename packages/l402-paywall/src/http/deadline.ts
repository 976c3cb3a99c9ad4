// Time limits on work that reads from someone else's server: a signal that
// fires when it should even while nobody holds on to it.

/**
 * A signal that aborts with a TimeoutError after `ms`, or with the caller's
 * reason. Its controller is held by its own timer until then, so that it
 * still fires while the caller reads the body, after every Request that
 * carried it is gone (a Request's copy of a signal follows its source only
 * while that Request lives, and AbortSignal.timeout's only while referenced).
 */
export function deadline(ms: number, callerSignal?: AbortSignal): AbortSignal {
  const controller = new AbortController();
  if (callerSignal?.aborted) controller.abort(callerSignal.reason);
  callerSignal?.addEventListener('abort', () => controller.abort(callerSignal.reason), { once: true });
  const timer = setTimeout(() => controller.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), ms);
  // Never what keeps a process running (Node; other runtimes have no unref).
  (timer as { unref?: () => void }).unref?.();
  return controller.signal;
}
