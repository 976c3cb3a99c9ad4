// The paywall's audit hook. With `onEvent` unset there is none: withL402 and
// the adapters test for it and build nothing. With it set, the event builder
// (events/server.ts) is loaded on first construction, as its own chunk, so
// the core stays small for everyone who does not use events.
import type { L402Options, Paid, Refusal } from './paywall.js';

export interface PaywallAudit {
  /** A 402 (challenge, and the refused credential if any) or a 503. */
  refused(request: Request, refusal: Refusal, startedAt: number): void;
  /** A paid request answered with `status` (below 500). */
  served(request: Request, paid: Paid, status: number, startedAt: number): void;
}

const settled = Promise.resolve();

export function paywallAudit(options: L402Options, onError: (error: unknown, context: string) => void): PaywallAudit | undefined {
  const onEvent = options.onEvent;
  if (!onEvent) return undefined;
  let loaded: PaywallAudit | undefined;
  const loading: Promise<PaywallAudit | undefined> = import('../events/server.js').then(
    (events) => (loaded = events.serverAudit({ ...options, onEvent }, onError)),
    (error) => {
      onError(error, 'loading the audit event builder failed; no events will be sent');
      return undefined;
    },
  );
  // Each event is built after the current request's work (a microtask), never
  // in its way; a builder that throws is reported, not passed to the response.
  const build = (audit: PaywallAudit | undefined, work: (audit: PaywallAudit) => void) => {
    if (!audit) return;
    try {
      work(audit);
    } catch (error) {
      onError(error, 'building an audit event failed');
    }
  };
  // A settled promise's then(), not queueMicrotask: Node wraps each
  // queueMicrotask callback in an AsyncResource, which cost more than the event.
  const run = (work: (audit: PaywallAudit) => void) => {
    void (loaded ? settled : loading).then(() => build(loaded, work));
  };
  return {
    refused: (request, refusal, startedAt) => run((audit) => audit.refused(request, refusal, startedAt)),
    served: (request, paid, status, startedAt) => run((audit) => audit.served(request, paid, status, startedAt)),
  };
}
