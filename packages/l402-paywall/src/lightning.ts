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
// Prepaid sessions: their own entry, l402-paywall/sessions. Re-exported here,
// kept for compatibility with code written before that entry existed.
export * from './sessions.js';
