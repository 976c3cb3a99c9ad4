// The paywall's audit hook. With `onEvent` unset there is none: withL402 and
// the adapters test for it and build nothing. With it set, the event builder
// is loaded on first construction. The core imports nothing from events/: the
// entry points hand withL402 and the adapters the loader (events/load-builder.ts),
// which brings events/server.ts as its own chunk, so the core stays small for
// everyone who does not use events.
//
// On the request path a request leaves only what its events need later (the
// Request, the decision, two clock readings) in a list: well under a
// microsecond. The events are built and handed to onEvent after the response,
// in a later task, a batch at a time. `events.waitUntil` (Vercel's, a Worker's
// ctx.waitUntil) keeps a serverless function alive until that has happened.
import type { L402Options } from '../paywall/options.js';
import type { Paid, Refusal } from '../core/decision.js';

export interface PaywallAudit {
  /** A 402 (challenge, and the refused credential if any) or a 503. */
  refused(request: Request, refusal: Refusal, startedAt: number): void;
  /** A paid request answered with `status` (below 500). */
  served(request: Request, paid: Paid, status: number, startedAt: number): void;
}

// The builder's contract is the events' own (events/audit-builder.ts): events/ imports nothing of the adapters.
import type { AnsweredAt, AuditBuilder, LoadAuditBuilder } from '../events/audit-builder.js';
export type { AnsweredAt, AuditBuilder, LoadAuditBuilder };

type Work = (builder: AuditBuilder) => void;

// Past this many requests waiting for their events (a server that never yields
// to the event loop), the batch is built at once rather than kept growing.
const MAX_WAITING = 1024;

const later: (run: () => void) => void = typeof setImmediate === 'function' ? (run) => setImmediate(run) : (run) => setTimeout(run, 0);

export function paywallAudit(
  options: L402Options,
  reportError: (error: unknown, context: string) => void,
  loadBuilder: LoadAuditBuilder,
): PaywallAudit | undefined {
  const onEvent = options.onEvent;
  if (!onEvent) return undefined;
  // The operator's onError runs in our timer task here: a throw from it must not escape.
  const onError = (error: unknown, context: string) => {
    try {
      reportError(error, context);
    } catch {
      // nothing left to tell
    }
  };
  const waitUntil = options.events?.waitUntil ?? options.waitUntil;
  let builder: AuditBuilder | undefined;
  const loading: Promise<unknown> = loadBuilder().then(
    (serverAudit) => (builder = serverAudit({ ...options, onEvent }, onError)),
    (error) => onError(error, 'loading the audit event builder failed; no events will be sent'),
  );

  let waiting: Work[] = [];
  let batchDone: (() => void) | undefined;
  let scheduled = false;

  const buildWaiting = () => {
    scheduled = false;
    const batch = waiting;
    const done = batchDone;
    waiting = [];
    batchDone = undefined;
    if (builder) {
      for (const work of batch) {
        try {
          work(builder);
        } catch (error) {
          onError(error, 'building an audit event failed');
        }
      }
    }
    done?.();
  };

  const schedule = () => {
    scheduled = true;
    if (waitUntil) {
      try {
        waitUntil(new Promise<void>((resolve) => (batchDone = resolve)));
      } catch (error) {
        onError(error, 'waitUntil failed');
      }
    }
    // The builder module loads once; until then its import is what the batch waits for.
    if (builder) later(buildWaiting);
    else void loading.then(() => later(buildWaiting));
  };

  const handOff = (work: Work) => {
    waiting.push(work);
    if (!scheduled) schedule();
    else if (waiting.length >= MAX_WAITING && builder) buildWaiting();
  };

  return {
    refused(request, refusal, startedAt) {
      const at: AnsweredAt = { startedAt, endedAt: performance.now(), time: Date.now() };
      handOff((b) => b.refused(request, refusal, at));
    },
    served(request, paid, status, startedAt) {
      const at: AnsweredAt = { startedAt, endedAt: performance.now(), time: Date.now() };
      handOff((b) => b.served(request, paid, status, at));
    },
  };
}
