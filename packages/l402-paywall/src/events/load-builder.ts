// The event builders, as the entry points and the assembly hand them on. The
// core imports nothing from events/: it is given these loaders, which bring
// events/server.ts (the audit events) and events/session.ts (a prepaid
// session's events) in on first use, each as a chunk of its own, and only for
// a paywall whose onEvent is set.
import type { LoadAuditBuilder } from './audit-builder.js';
import type { sessionEvents } from './session.js';

export const loadServerAudit: LoadAuditBuilder = () => import('./server.js').then((events) => events.serverAudit);

/** Brings the session event builder (events/session.ts's sessionEvents). */
export type LoadSessionEvents = () => Promise<typeof sessionEvents>;

export const loadSessionEvents: LoadSessionEvents = () => import('./session.js').then((events) => events.sessionEvents);
