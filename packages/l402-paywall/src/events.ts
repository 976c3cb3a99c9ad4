// `l402-paywall/events`: signed audit events (CloudEvents 1.0, Standard
// Webhooks signatures) and a sink that delivers them. Edge-safe: Web APIs and @noble only.
export { EVENT_TYPES, EVENT_TYPE_PREFIX, AGENT_ID_HEADER, SESSION_ID_HEADER, PAYMENT_VERIFICATION } from './events/types.js';
export type {
  L402Event,
  L402EventType,
  L402EventData,
  AgentIdentity,
  Causation,
  PaymentProof,
  PrepaidSessionFacts,
  ServerEventOptions,
} from './events/types.js';
export { serverEvents, challengeEventId } from './events/server.js';
export { sessionEvents, sessionEventId } from './events/session.js';
export type { ServerEvents } from './events/server.js';
export type { ClientEventOptions } from './events/client.js';
export { dispatcher, DEFAULT_MAX_PENDING_EVENTS } from './events/dispatch.js';
export type { EventHandler, Dispatcher, ErrorReporter } from './events/dispatch.js';
export { traceFrom, newTraceparent, childSpan } from './events/cloudevent.js';
export { signEvent, verifyEvent, generateEventSecret, EventVerificationError, SECRET_PREFIX, DEFAULT_TOLERANCE_SECONDS } from './events/signing.js';
export type { SignatureHeaders, EventVerificationCode } from './events/signing.js';
// The signer's own rule for a secret, so an application can refuse an unusable one at start-up rather than at the first event.
export { secretKey as eventSecretKey } from './events/signing.js';
export { httpEventSink } from './events/http-sink.js';
export type { HttpEventSink, HttpEventSinkOptions, EventSinkStats } from './events/http-sink.js';
