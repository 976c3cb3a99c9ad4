// The "Payment" HTTP authentication scheme (the Machine Payments Protocol)
// with its Lightning charge method, beside L402 (docs/mpp.md). Edge-safe:
// Web APIs, @noble and zod.
export { BindingKeyring, BINDING_KEY_LABEL, bindingInput, challengeId, deriveBindingKey } from './binding.js';
export type { BoundParameters } from './binding.js';
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
} from './challenge.js';
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
} from './challenge.js';
export { MAX_CREDENTIAL_LENGTH, formatCredential, parsePaymentCredential, verifyLightningCredential } from './credential.js';
export type { CredentialParse, CredentialVerification, PaymentCredential, VerifiedCharge } from './credential.js';
export { PAYMENT_RECEIPT_HEADER, formatReceipt, parseReceipt } from './receipt.js';
export type { LightningReceipt, ReceiptInput, ReceiptParse } from './receipt.js';
export { PROBLEMS, PROBLEM_CONTENT_TYPE, problemDetails, problemType } from './problem.js';
export type { ProblemCode, ProblemDetails, Refused } from './problem.js';
export { canonicalJson } from './jcs.js';
export {
  SESSION_INTENT,
  checkReturnInvoice,
  formatSessionCredential,
  parseSessionCredential,
  readLightningSession,
  sessionChallenge,
  sessionReceipt,
  verifySessionCredential,
} from './session.js';
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
} from './session.js';
