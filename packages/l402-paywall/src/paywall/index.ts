// The edge-safe L402 core: Web APIs and @noble only.
export { getPayment } from '../l402/with-l402.js';
export { createPaywall, challengeHeaders, refusalResponse, PROVIDER_RETRY_AFTER_SECONDS, DEFAULT_REALM } from '../core/pipeline.js';
export type {
  L402Options,
  InvoiceProvider,
  Payment,
  Decision,
  Refusal,
  Paid,
  Paywall,
  SessionSeller,
  SessionUse,
  SessionContext,
  SessionStep,
  SessionOffer,
} from '../core/pipeline.js';
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
