// What the `l402-paywall` entry exports besides withL402: the paywall assembled
// from options, its decision types, and the L402 and Payment charge
// verification a caller can use alone. Edge-safe: Web APIs and @noble only.
export { createPaywall } from './assemble.js';
export { DEFAULT_REALM, realmOfRequest } from './options.js';
export type { L402Options, InvoiceLimit } from './options.js';
export { PROVIDER_RETRY_AFTER_SECONDS, refusalResponse } from '../core/refusals.js';
export { PAYMENT_RECEIPT_HEADER } from '../core/decision.js';
export type { Decision, Paid, PaidRequest, Payment, Paywall, Refusal } from '../core/decision.js';
export type { InvoiceProvider } from '../core/invoices.js';
export type { SchemeName } from '../core/scheme.js';
export type { SessionUse } from '../core/metering.js';
export { challengeHeaders } from '../schemes/l402/challenge.js';
// Sessions are sold through the `session` option: its types are named here, the seller is in l402-paywall/sessions.
export type { SessionContext, SessionOffer, SessionSeller, SessionServices, SessionStep } from '../schemes/session/seller.js';
export { memorySessionLedger } from '../schemes/session/memory-ledger.js';
export type { SessionLedger, SessionAnswer, SessionRecord, SessionRefund, RefundState } from '../schemes/session/ledger.js';
export { Keyring, mintToken, verifyToken, decodeToken, checkCaveats } from '../schemes/l402/token.js';
export type { TokenPayload, MintInput, VerifyResult, CaveatExpectations } from '../schemes/l402/token.js';
export { parseCredential, verifyAuthorization } from '../schemes/l402/credential.js';
export type { Credential, AuthorizationResult } from '../schemes/l402/credential.js';
export { CAVEAT_NAME, CAVEAT_VALUE, MAX_CAVEATS, isCaveat, isCaveatName, isCaveatValue } from '../schemes/l402/caveats.js';
export { memoryReplayStore, claimUse, releaseUse, checkAttempt, usesLifetimeMs } from '../core/replay.js';
export type { ReplayStore, MemoryReplayStore, UseRecord } from '../core/replay.js';
export { REJECTIONS } from '../core/rejections.js';
export type { Rejection, RejectionCode } from '../core/rejections.js';
export { verifyPaymentAuthorization } from '../schemes/charge/charge-scheme.js';
export type { PaymentAuthorizationResult, Scheme } from '../schemes/charge/charge-scheme.js';
