// The audit event builder, as the entry points hand it to withL402 and the
// adapters (adapters/audit.ts). The core imports nothing from events/: it is given
// this loader, which brings events/server.ts in on first use, as a chunk of its
// own, and only for a paywall whose onEvent is set.
import type { LoadAuditBuilder } from './audit-builder.js';

export const loadServerAudit: LoadAuditBuilder = () => import('./server.js').then((events) => events.serverAudit);
