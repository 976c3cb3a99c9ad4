// The edge-safe L402 core: Web APIs and @noble only.
export { createPaywall, challengeHeaders, refusalResponse, PROVIDER_RETRY_AFTER_SECONDS, DEFAULT_REALM } from './paywall.js';
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
} from './paywall.js';
export { memorySessionLedger } from '../sessions/memory-ledger.js';
export type { SessionLedger, SessionAnswer, SessionRecord, SessionRefund, RefundState } from '../sessions/ledger.js';
export { Keyring, mintToken, verifyToken, decodeToken, checkCaveats } from './token.js';
export type { TokenPayload, MintInput, VerifyResult, CaveatExpectations } from './token.js';
export { parseCredential, verifyAuthorization } from './credential.js';
export type { Credential, AuthorizationResult } from './credential.js';
export { CAVEAT_NAME, CAVEAT_VALUE, MAX_CAVEATS, isCaveat, isCaveatName, isCaveatValue } from './caveats.js';
export { memoryReplayStore, claimUse, releaseUse, checkAttempt, usesLifetimeMs } from './replay.js';
export type { ReplayStore, MemoryReplayStore, UseRecord } from './replay.js';
export { REJECTIONS } from './reasons.js';
export type { Rejection, RejectionCode } from './reasons.js';
export { verifyPaymentAuthorization } from './payment-scheme.js';
export type { PaymentAuthorizationResult, Scheme } from './payment-scheme.js';
