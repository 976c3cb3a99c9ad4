// The answers the paywall gives without serving: their status, headers and
// body (RFC 9457 problem details with the Payment drafts' problem types, which
// every scheme's refusals carry), and the Response an adapter sends for one.
import { PAYMENT_RECEIPT_HEADER, type Refusal } from './decision.js';
import { PROBLEMS, PROBLEM_CONTENT_TYPE, problemType, type ProblemCode } from './problem.js';
import type { RejectionCode } from './rejections.js';
import type { RefusalReason } from './scheme.js';

export const PROVIDER_RETRY_AFTER_SECONDS = 5;
/** A setting is made by a person and a redeploy: no use asking again within seconds. */
export const NOT_CONFIGURED_RETRY_AFTER_SECONDS = 60;

/** What limitInvoices answers when a request may not have an invoice now. */
export interface InvoiceLimit {
  retryAfterSeconds: number;
  message?: string;
}

/** The problem type (draft-httpauth-payment, draft-lightning-charge) a refusal of either scheme is reported as. */
export const PROBLEM_OF: Record<RejectionCode, ProblemCode> = {
  PAYMENT_REQUIRED: 'payment-required',
  MALFORMED_CREDENTIAL: 'lightning/malformed-credential',
  INVALID_PREIMAGE: 'lightning/malformed-credential',
  MALFORMED_TOKEN: 'lightning/malformed-credential',
  MULTIPLE_CREDENTIALS: 'malformed-credential',
  METHOD_UNSUPPORTED: 'method-unsupported',
  UNKNOWN_KEY: 'lightning/unknown-challenge',
  BAD_SIGNATURE: 'lightning/unknown-challenge',
  UNKNOWN_CHALLENGE: 'lightning/unknown-challenge',
  // The Lightning draft's type for a challenge already consumed.
  TOKEN_ALREADY_USED: 'lightning/unknown-challenge',
  TOKEN_EXPIRED: 'lightning/expired-invoice',
  PREIMAGE_MISMATCH: 'lightning/invalid-preimage',
  WRONG_ROUTE: 'invalid-challenge',
  WRONG_REALM: 'invalid-challenge',
  CAVEAT_NOT_SATISFIED: 'invalid-challenge',
  INSUFFICIENT_PRICE: 'payment-insufficient',
  SESSION_NOT_FOUND: 'lightning/session-not-found',
  SESSION_CLOSED: 'lightning/session-closed',
  INSUFFICIENT_BALANCE: 'lightning/insufficient-balance',
  INVALID_RETURN_INVOICE: 'lightning/invalid-return-invoice',
  DEPOSIT_ALREADY_USED: 'lightning/unknown-challenge',
  SESSION_CHALLENGE_MISMATCH: 'invalid-challenge',
};

/** Our code for a refusal of a Payment credential by the Payment codecs (schemes/payment). */
export function codeOfProblem(problem: ProblemCode): RejectionCode {
  switch (problem) {
    case 'payment-required':
      return 'PAYMENT_REQUIRED';
    case 'method-unsupported':
      return 'METHOD_UNSUPPORTED';
    case 'lightning/expired-invoice':
    case 'lightning/challenge-expired':
    case 'payment-expired':
      return 'TOKEN_EXPIRED';
    case 'lightning/invalid-preimage':
      return 'PREIMAGE_MISMATCH';
    case 'lightning/unknown-challenge':
    case 'verification-failed':
      return 'UNKNOWN_CHALLENGE';
    // Only the session intent says it: a bearer or close that echoes another challenge than the session's opening one.
    case 'invalid-challenge':
      return 'SESSION_CHALLENGE_MISMATCH';
    case 'payment-insufficient':
      return 'INSUFFICIENT_PRICE';
    case 'lightning/invalid-return-invoice':
      return 'INVALID_RETURN_INVOICE';
    case 'lightning/session-not-found':
      return 'SESSION_NOT_FOUND';
    case 'lightning/session-closed':
      return 'SESSION_CLOSED';
    case 'lightning/insufficient-balance':
      return 'INSUFFICIENT_BALANCE';
    default:
      return 'MALFORMED_CREDENTIAL';
  }
}

/** The RFC 9457 members of a refusal's body. */
export function problemMembers(problem: ProblemCode, detail: string): { type: string; title: string; status: number; detail: string } {
  const { title, status } = PROBLEMS[problem];
  return { type: problemType(problem), title, status, detail };
}

/**
 * The content type of a refusal: application/json, as every answer of this
 * API, unless the client asks for problem details by name (Accept).
 */
export function refusalContentType(request: Request): string {
  const accept = request.headers.get('accept');
  return accept?.includes(PROBLEM_CONTENT_TYPE) ? PROBLEM_CONTENT_TYPE : 'application/json';
}

/** 400: a request no credential of it could fix (two Payment credentials, another payment method); no challenge. */
export function badRequest(request: Request, why: RefusalReason): Refusal {
  const problem = why.problem ?? PROBLEM_OF[why.code];
  return {
    kind: 'refused',
    status: 400,
    headers: [
      ['Content-Type', refusalContentType(request)],
      ['Cache-Control', 'no-store'],
    ],
    body: { error: why.message, code: why.code, ...problemMembers(problem, why.message), status: 400 },
  };
}

/** 429 without a challenge: this client may not have another invoice yet. */
export function rateLimited(limit: InvoiceLimit): Refusal {
  const retryAfter = Math.max(1, Math.ceil(limit.retryAfterSeconds));
  return {
    kind: 'refused',
    status: 429,
    headers: [
      ['Content-Type', 'application/json'],
      ['Cache-Control', 'no-store'],
      ['Retry-After', String(retryAfter)],
    ],
    body: { error: limit.message ?? 'Too many invoices requested; try again later', code: 'RATE_LIMITED', retryAfter },
  };
}

/** 503 without a challenge: nothing can be sold or checked right now. */
export function unavailable(code: string, error: string, retryAfter = PROVIDER_RETRY_AFTER_SECONDS, extra: Record<string, unknown> = {}): Refusal {
  return {
    kind: 'refused',
    status: 503,
    headers: [
      ['Content-Type', 'application/json'],
      ['Cache-Control', 'no-store'],
      ['Retry-After', String(retryAfter)],
    ],
    body: { error, code, ...extra, retryAfter },
  };
}

/** An answer the paywall gives itself (a session's topUp or close): 200, JSON, its receipt; the handler does not run. */
export function answered(body: Record<string, unknown>, receipt: string): Refusal {
  return {
    kind: 'refused',
    status: 200,
    headers: [
      ['Content-Type', 'application/json'],
      ['Cache-Control', 'no-store'],
      [PAYMENT_RECEIPT_HEADER, receipt],
    ],
    body,
  };
}

export function refusalResponse(challenge: Refusal): Response {
  const headers = new Headers();
  for (const [key, value] of challenge.headers) headers.append(key, value);
  return new Response(JSON.stringify(challenge.body), { status: challenge.status, headers });
}
