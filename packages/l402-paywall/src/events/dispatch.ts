// Hands events to the operator's onEvent so that it can never hurt a request
// or a payment: a throw is caught and reported, a returned promise is never
// awaited, and promises still pending are counted: past `maxPending` new
// events are dropped (and counted) rather than piling up behind a handler
// that never answers.
import type { L402Event } from './types.js';

export type EventHandler = (event: L402Event) => unknown;
export type ErrorReporter = (error: unknown, context: string) => void;

export const DEFAULT_MAX_PENDING_EVENTS = 1000;

export interface Dispatcher {
  (event: L402Event): void;
  /** Events not handed over because `maxPending` promises were still unresolved. */
  readonly dropped: number;
}

export function dispatcher(onEvent: EventHandler, onError: ErrorReporter, maxPending = DEFAULT_MAX_PENDING_EVENTS): Dispatcher {
  let pending = 0;
  let dropped = 0;
  const settled = () => {
    pending -= 1;
  };
  const failed = (error: unknown) => {
    pending -= 1;
    report(error, 'onEvent failed');
  };
  // onError is the operator's too: it must not throw into us either.
  const report = (error: unknown, context: string) => {
    try {
      onError(error, context);
    } catch {
      // nothing left to tell
    }
  };
  const dispatch = (event: L402Event) => {
    if (pending >= maxPending) {
      dropped += 1;
      // Once at the first drop, then at every power of two: visible, not a flood.
      if ((dropped & (dropped - 1)) === 0)
        report(new Error(`${pending} onEvent calls have not resolved; ${dropped} event(s) dropped so far`), 'onEvent is not keeping up');
      return;
    }
    let result: unknown;
    try {
      result = onEvent(event);
    } catch (error) {
      report(error, 'onEvent failed');
      return;
    }
    if (result !== null && typeof result === 'object' && typeof (result as PromiseLike<unknown>).then === 'function') {
      pending += 1;
      Promise.resolve(result).then(settled, failed);
    }
  };
  Object.defineProperty(dispatch, 'dropped', { get: () => dropped });
  return dispatch as Dispatcher;
}
