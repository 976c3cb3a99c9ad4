// A prepaid session's audit events through the paywall's own onEvent
// (docs/events.md "Prepaid sessions"): with onEvent set and a `session`
// option, the assembly gives the session scheme this observer
// (SessionServices.observe), which builds each observation into a CloudEvent
// with events/session.ts. That builder is loaded when the paywall is built, as
// a chunk of its own (events/load-builder.ts), so a paywall without onEvent or
// sessions never loads it; what is told before it has loaded waits for it, in order.
import { loadSessionEvents } from '../events/load-builder.js';
import type { SessionObservation, SessionObserver } from '../schemes/session/observer.js';
import type { L402Options } from './options.js';

type ReportError = (error: unknown, context: string) => void;

/** The session scheme's observer that emits to `options.onEvent`; undefined without onEvent (then nothing is loaded). */
export function sessionEventObserver(options: L402Options, onError: ReportError): SessionObserver | undefined {
  const onEvent = options.onEvent;
  if (!onEvent) return undefined;
  const waitUntil = options.events?.waitUntil ?? options.waitUntil;
  let emit: SessionObserver | undefined;
  // Told before the builder loaded; undefined once it has (or failed to).
  let waiting: SessionObservation[] | undefined = [];
  const loading = loadSessionEvents().then(
    (sessionEvents) => {
      const builder = sessionEvents(onEvent, { ...options.events, onError });
      const told = waiting ?? [];
      waiting = undefined;
      emit = builder;
      for (const observation of told) emitSafely(builder, observation, onError);
    },
    (error: unknown) => {
      waiting = undefined;
      onError(error, 'loading the session event builder failed; no session events will be sent');
    },
  );
  return (observation) => {
    if (emit) return emit(observation);
    if (!waiting) return;
    waiting.push(observation);
    // A serverless function lives until the builder has loaded and the waiting events are handed on.
    if (waiting.length === 1 && waitUntil) {
      try {
        waitUntil(loading);
      } catch (error) {
        onError(error, 'waitUntil failed');
      }
    }
  };
}

function emitSafely(emit: SessionObserver, observation: SessionObservation, onError: ReportError): void {
  try {
    emit(observation);
  } catch (error) {
    onError(error, 'building a session event failed');
  }
}
