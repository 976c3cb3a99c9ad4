// What the audit builder (server.ts) is to the adapters (adapters/audit.ts): the
// hook they call after each answer, and how it is loaded. Types only.
import type { Paid, Refusal } from '../core/decision.js';
import type { EventHandler } from './dispatch.js';
import type { ServerEventOptions } from './types.js';

/** What the audit builder reads of the paywall's options (L402Options has them): named here, so events/ imports nothing of the assembly. */
export interface AuditedOptions {
  onEvent: EventHandler;
  events?: ServerEventOptions;
  tokenTtlSeconds?: number;
}

/** When the answer was decided: performance.now() (for durations) and Date.now() (the event's time). */
export interface AnsweredAt {
  startedAt: number;
  endedAt: number;
  time: number;
}

/** What events/server.ts makes of a request once it is off the request path. */
export interface AuditBuilder {
  refused(request: Request, refusal: Refusal, at: AnsweredAt): void;
  served(request: Request, paid: Paid, status: number, at: AnsweredAt): void;
}

/** Brings the builder (events/server.ts's serverAudit); handed to withL402 and the adapters by the entry points. */
export type LoadAuditBuilder = () => Promise<(options: AuditedOptions, onError: (error: unknown, context: string) => void) => AuditBuilder>;
