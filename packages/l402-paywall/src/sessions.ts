// `l402-paywall/sessions`: selling a route by the prepaid session (docs/sessions.md).
// lightningSessions makes withL402's `session` option; meteredEventStream spends
// a session's units per streamed chunk; meterByUsage (with openAiUsage) by the
// usage an upstream reports, under a reservation; the ledgers keep the sessions (in memory,
// or scripted over Redis or Upstash); the refunds pay back what was not spent
// (closeIdleSessions and refundDue for a cron). Talks to a backend: a refund pays
// the client's return invoice through the provider. Edge-safe.
export { lightningSessions } from './schemes/session/seller.js';
export { EVENT_STREAM_HEADERS, meteredEventStream } from './schemes/session/meter.js';
export type { MeteredStreamOptions } from './schemes/session/meter.js';
export { meterByUsage } from './adapters/meter-by-usage.js';
export { meterSessionByUsage, openAiUsage } from './schemes/session/usage-meter.js';
export type { MeterByUsageOptions, OpenAiUsageOptions, UsageMeter } from './schemes/session/usage-meter.js';
export type { AtReservation, ReservationSettled, ReserveAnswer, SessionReservation } from './core/metering.js';
export type { LightningSessionsOptions } from './schemes/session/seller.js';
export { canRefund, closeIdleSessions, refundDue, refundPayment, refundSession } from './schemes/session/refunds.js';
export type { RefundOptions, RefundPayment, RefundReport } from './schemes/session/refunds.js';
export { SPENT_BATCH_UNITS } from './schemes/session/observer.js';
export type {
  SessionClosed,
  SessionObservation,
  SessionObserver,
  SessionOpened,
  SessionRefunded,
  SessionSpent,
  SessionToppedUp,
  SessionTopUpRefused,
} from './schemes/session/observer.js';
export { scriptedSessionLedger } from './schemes/session/ledger-scripts.js';
export { memorySessionLedger, MEMORY_SESSION_RETENTION_MS } from './schemes/session/memory-ledger.js';
export type { MemoryLedgerFootprint, MemorySessionLedger, MemorySessionLedgerOptions } from './schemes/session/memory-ledger.js';
export type { RefundState, SessionAnswer, SessionLedger, SessionRecord, SessionRefund, SettleAnswer } from './schemes/session/ledger.js';
