// `l402-paywall/lightning`: what every backend shares and nothing that talks to
// one: the BOLT11 codec, the provider interface and its errors, the checks of
// issued invoices and preimages, the bounded reading of a backend's answer,
// Lightning Address schemas. Edge-safe.
export { decodeInvoice, encodeInvoice, nobleInvoiceSigner, InvalidInvoice } from './lightning/bolt11.js';
export type { DecodedInvoice, InvoiceFields, InvoiceSigner, Network } from './lightning/bolt11.js';
export { PaymentFailed, ProviderConfigError, ProviderUnavailable, ProviderUnsupported, WebhookRejected } from './lightning/provider.js';
export type {
  CreateInvoiceRequest,
  CreatedInvoice,
  InvoiceStatus,
  LightningProvider,
  PaidInvoice,
  PayInvoiceRequest,
  PaymentStatus,
  WebhookDelivery,
  WebhookEvent,
} from './lightning/provider.js';
export { checkedPreimage, invoiceToPay, issuedInvoice, isPreimageOf } from './lightning/providers/checks.js';
export type { ExpectedInvoice } from './lightning/providers/checks.js';
export { readBoundedText } from './http/read-bounded.js';
export type { BoundedText, ReadBoundedOptions } from './http/read-bounded.js';
export { LightningAddress, LightningAddressWithLoopback, lightningAddressSchema, splitLightningAddress } from './lightning/address.js';
export type { LightningAddressParts } from './lightning/address.js';
// Prepaid sessions (docs/sessions.md): withL402's `session` option, the ledger, refunds.
export { lightningSessions } from './sessions/seller.js';
export { EVENT_STREAM_HEADERS, meteredEventStream } from './sessions/meter.js';
export type { MeteredStreamOptions } from './sessions/meter.js';
export type { LightningSessionsOptions } from './sessions/seller.js';
export { canRefund, closeIdleSessions, refundDue, refundPayment, refundSession } from './sessions/refunds.js';
export type { RefundOptions, RefundPayment, RefundReport } from './sessions/refunds.js';
export { SPENT_BATCH_UNITS } from './sessions/observer.js';
export type {
  SessionClosed,
  SessionObservation,
  SessionObserver,
  SessionOpened,
  SessionRefunded,
  SessionSpent,
  SessionToppedUp,
  SessionTopUpRefused,
} from './sessions/observer.js';
export { scriptedSessionLedger } from './sessions/ledger-scripts.js';
export { memorySessionLedger, MEMORY_SESSION_RETENTION_MS } from './sessions/memory-ledger.js';
export type { MemoryLedgerFootprint, MemorySessionLedger, MemorySessionLedgerOptions } from './sessions/memory-ledger.js';
export type { RefundState, SessionAnswer, SessionLedger, SessionRecord, SessionRefund } from './sessions/ledger.js';
