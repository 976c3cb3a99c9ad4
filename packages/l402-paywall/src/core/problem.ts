// Why a Payment credential was refused, as RFC 9457 problem details: the
// drafts put the reason in an application/problem+json body, never in the
// WWW-Authenticate parameters. The core draft (draft-httpauth-payment, "Error
// Codes") defines the general types; the Lightning charge draft defines its
// own under lightning/ for the failures particular to it.

const PROBLEM_BASE = 'https://paymentauth.org/problems/';

/** Every problem type this module reports, by its path under https://paymentauth.org/problems/, with its title and status. */
export const PROBLEMS = {
  // draft-httpauth-payment
  'payment-required': { title: 'Payment Required', status: 402 },
  'payment-insufficient': { title: 'Payment Insufficient', status: 402 },
  'payment-expired': { title: 'Payment Expired', status: 402 },
  'verification-failed': { title: 'Payment Verification Failed', status: 402 },
  'method-unsupported': { title: 'Method Unsupported', status: 400 },
  'malformed-credential': { title: 'Malformed Credential', status: 402 },
  'invalid-challenge': { title: 'Invalid Challenge', status: 402 },
  // draft-lightning-charge, "Error Responses"
  'lightning/malformed-credential': { title: 'Malformed Credential', status: 402 },
  'lightning/unknown-challenge': { title: 'Unknown Challenge', status: 402 },
  'lightning/invalid-preimage': { title: 'Invalid Preimage', status: 402 },
  'lightning/expired-invoice': { title: 'Expired Invoice', status: 402 },
  // draft-lightning-session-00, "Error Responses"
  'lightning/challenge-expired': { title: 'Challenge Expired', status: 402 },
  'lightning/invalid-return-invoice': { title: 'Invalid Return Invoice', status: 402 },
  'lightning/session-not-found': { title: 'Session Not Found', status: 402 },
  'lightning/session-closed': { title: 'Session Closed', status: 402 },
  'lightning/insufficient-balance': { title: 'Insufficient Balance', status: 402 },
} as const satisfies Record<string, { title: string; status: 400 | 402 }>;

export type ProblemCode = keyof typeof PROBLEMS;

/** A refusal as the Payment modules answer it: the problem, and a sentence for a person that holds no secret. */
export interface Refused {
  ok: false;
  problem: ProblemCode;
  detail: string;
}

export function refuse(problem: ProblemCode, detail: string): Refused {
  return { ok: false, problem, detail };
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** An RFC 9457 problem details object; extension members beside the standard ones (e.g. `challengeId`, as the core draft's example has). */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  [extension: string]: unknown;
}

/** The full URI of a problem type. */
export function problemType(code: ProblemCode): string {
  return PROBLEM_BASE + code;
}

/** The body of a refusal; extensions never replace the standard members. */
export function problemDetails(code: ProblemCode, detail: string, extensions: Record<string, unknown> = {}): ProblemDetails {
  const { title, status } = PROBLEMS[code];
  return { ...extensions, type: problemType(code), title, status, detail };
}
