// `l402-paywall/mpp`: the "Payment" HTTP authentication scheme's wire (the
// Machine Payments Protocol): its challenges, credentials and receipts, the
// Lightning charge and session intents' codecs and their binding keyring, for
// a client or a page that speaks the scheme without the paywall. Edge-safe:
// Web APIs, @noble and zod.
export { BindingKeyring, BINDING_KEY_LABEL, bindingInput, challengeId, deriveBindingKey } from './schemes/payment/binding.js';
export type { BoundParameters } from './schemes/payment/binding.js';
export {
  CHARGE_INTENT,
  LIGHTNING_METHOD,
  MAX_AUTHENTICATE_LENGTH,
  MAX_PAYMENT_CHALLENGES,
  PAYMENT_SCHEME,
  formatChallenge,
  lightningChargeChallenge,
  parsePaymentChallenges,
  readLightningCharge,
} from './schemes/payment/challenge.js';
export type {
  BindingFields,
  ChallengeRefusal,
  LightningCharge,
  LightningChargeOptions,
  LightningChargeRead,
  LightningChargeRequest,
  LightningNetwork,
  ParsedChallenges,
  PaymentChallenge,
} from './schemes/payment/challenge.js';
export { MAX_CREDENTIAL_LENGTH, formatCredential, parsePaymentCredential, verifyLightningCredential } from './schemes/payment/credential.js';
export type { CredentialParse, CredentialVerification, PaymentCredential, VerifiedCharge } from './schemes/payment/credential.js';
export { PAYMENT_RECEIPT_HEADER, formatReceipt, parseReceipt } from './schemes/payment/receipt.js';
export type { LightningReceipt, ReceiptInput, ReceiptParse } from './schemes/payment/receipt.js';
export { PROBLEMS, PROBLEM_CONTENT_TYPE, problemDetails, problemType } from './core/problem.js';
export type { ProblemCode, ProblemDetails, Refused } from './core/problem.js';
export { canonicalJson } from './schemes/payment/jcs.js';
export {
  SESSION_INTENT,
  checkReturnInvoice,
  formatSessionCredential,
  parseSessionCredential,
  readLightningSession,
  sessionChallenge,
  sessionReceipt,
  verifySessionCredential,
} from './schemes/session/codec.js';
export type {
  LightningSessionOffer,
  LightningSessionOptions,
  LightningSessionRead,
  LightningSessionRequest,
  RefundStatus,
  SessionAction,
  SessionCredential,
  SessionPayload,
  SessionVerification,
  VerifiedSessionAction,
} from './schemes/session/codec.js';
