// Why a credential was refused: a stable code for programs and a sentence for people.

export const REJECTIONS = {
  PAYMENT_REQUIRED: 'Payment required: pay the invoice and retry with Authorization: L402 <macaroon>:<preimage>',
  MALFORMED_CREDENTIAL: 'Authorization header is not an L402 credential of the form "L402 <macaroon>:<preimage>"',
  INVALID_PREIMAGE: 'Preimage must be exactly 32 bytes of hex',
  MALFORMED_TOKEN: 'Token is not a valid L402 token',
  UNKNOWN_KEY: 'Token was signed with a key this server does not know',
  BAD_SIGNATURE: 'Token signature is invalid',
  TOKEN_EXPIRED: 'Token expired',
  PREIMAGE_MISMATCH: 'Preimage does not match the payment hash of the token',
  WRONG_ROUTE: 'Token was issued for a different route',
  INSUFFICIENT_PRICE: 'Token was paid for a lower price than this route costs',
  CAVEAT_NOT_SATISFIED: 'Token carries a condition this request does not meet',
  TOKEN_ALREADY_USED: 'Token has already been used',
  // The Payment scheme (docs/mpp.md).
  UNKNOWN_CHALLENGE: 'Payment challenge was not issued by this server, or was changed since',
  WRONG_REALM: 'Payment challenge was issued for another realm',
  MULTIPLE_CREDENTIALS: 'A request carries one Payment credential, not several',
  METHOD_UNSUPPORTED: 'This server takes Payment credentials of method lightning, intent charge',
  // The Payment scheme's session intent (docs/sessions.md).
  SESSION_NOT_FOUND: 'No session of this id is known here: open one with the deposit in a fresh challenge',
  SESSION_CLOSED: 'The session is closed: no further actions are accepted; open a new one',
  INSUFFICIENT_BALANCE: 'The session balance does not cover this request: top it up with the deposit invoice of the fresh challenge',
  INVALID_RETURN_INVOICE: "The return invoice must be a BOLT 11 invoice without an amount, on the deposit invoice's network",
  DEPOSIT_ALREADY_USED: 'This deposit (or top-up) payment has already been used',
  SESSION_CHALLENGE_MISMATCH: 'bearer and close echo the challenge the session was opened with (its paymentHash is the session id), not a later one',
} as const;

export type RejectionCode = keyof typeof REJECTIONS;

export interface Rejection {
  code: RejectionCode;
  message: string;
}

export function reject(code: RejectionCode): { ok: false; rejection: Rejection } {
  return { ok: false, rejection: { code, message: REJECTIONS[code] } };
}
