// The Payment scheme (docs/mpp.md) as the paywall speaks it beside L402: what
// a Lightning charge challenge needs from an invoice, how an Authorization
// value is told to be a Payment credential, the problem type of each refusal,
// and the receipt of a paid answer. The codecs themselves are in mpp/.
import { hex32Words } from '../../crypto/encoding.js';
import { REJECTIONS, type Rejection, type RejectionCode } from '../../core/rejections.js';
import type { Keyring } from '../l402/token.js';
import { BindingKeyring } from '../payment/binding.js';
import { verifyCharge, type LightningNetwork, type VerifiedCharge } from '../payment/charge.js';
import { PROBLEMS, PROBLEM_CONTENT_TYPE, problemType, type ProblemCode } from '../../core/problem.js';
import { encodeJson, formatTime } from '../payment/wire.js';

/** Which credential a request paid with. */
export type Scheme = 'L402' | 'Payment';

/**
 * The network of a BOLT 11 invoice, by its human-readable prefix, as the
 * Lightning method names it; undefined for testnet (the draft has no name for
 * it) or anything that is not an invoice: then no Payment challenge is offered for it.
 */
export function invoiceNetwork(invoice: string): LightningNetwork | undefined {
  // BOLT 11's bech32 in one case (what the charge request takes), before the prefix is looked at.
  if (invoice.length > 4096 || !/^(?:ln[0-9a-z]+|LN[0-9A-Z]+)$/.test(invoice)) return undefined;
  const lower = invoice.slice(0, 8).toLowerCase();
  if (lower.startsWith('lnbcrt')) return 'regtest';
  if (lower.startsWith('lntbs')) return 'signet';
  if (lower.startsWith('lnbc')) return 'mainnet';
  return undefined;
}

/** Whether an Authorization value is in the Payment scheme (any case, then a space): one character decides for every L402 one. */
export function isPaymentAuthorization(header: string): boolean {
  return (header.charCodeAt(0) | 32) === 112 && header.length > 8 && header.slice(0, 8).toLowerCase() === 'payment ';
}

/** Two Payment credentials in one request: headers joined by a comma, as Headers.get joins them (base64url holds none). */
export function hasSecondPaymentCredential(header: string): boolean {
  return /,\s*payment\s/i.test(header);
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

/** Our code for a refusal of a Payment credential by mpp/credential.ts. */
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

/**
 * A verified Payment credential as the replay claim takes it: the payment
 * hash (as words and as hex) and when its challenge expires, as a verified
 * L402 token has them.
 */
export class ChargeUse {
  readonly hashWords = new Int32Array(8);

  constructor(
    readonly hash: string,
    readonly exp: number,
    readonly challengeId: string,
  ) {
    hex32Words(hash, this.hashWords);
  }
}

/** The Payment-Receipt value for a paid answer (mpp/receipt.ts's format, built from values this server checked). */
export function receiptOf(challengeId: string, paymentHash: string, atSeconds: number): string {
  return encodeJson({ challengeId, method: 'lightning', reference: paymentHash, status: 'success', timestamp: formatTime(atSeconds) });
}

const bindingKeyrings = new WeakMap<Keyring, BindingKeyring>();

/** The Payment challenge binding keys of a token keyring's secrets, derived once per keyring. */
export function bindingKeyringOf(keyring: Keyring): BindingKeyring {
  let binding = bindingKeyrings.get(keyring);
  if (!binding) bindingKeyrings.set(keyring, (binding = BindingKeyring.fromKeyring(keyring)));
  return binding;
}

export type PaymentAuthorizationResult =
  | {
      ok: true;
      charge: VerifiedCharge;
      /** What the challenge was bound to (opaque) and its amount (`price_msat`), as caveats, sorted: held to a request as a token's caveats are (checkCaveats). */
      caveats: readonly string[];
    }
  | { ok: false; rejection: Rejection; problem: ProblemCode };

/**
 * An `Authorization: Payment …` value checked as the paywall checks it, with
 * the binding keys of `keys` (a token keyring's are derived from its secrets):
 * one credential, issued by this server and unchanged, not expired, its
 * preimage that of its payment hash. Whether it fits a request (realm, route,
 * price, conditions: checkCaveats of `caveats`) and whether it was used is
 * the caller's to decide. Local: no store, no network.
 */
export function verifyPaymentAuthorization(
  keys: Keyring | BindingKeyring,
  header: string | null | undefined,
  nowSeconds = Date.now() / 1000,
): PaymentAuthorizationResult {
  if (header?.includes(',') && hasSecondPaymentCredential(header))
    return { ok: false, rejection: { code: 'MULTIPLE_CREDENTIALS', message: REJECTIONS.MULTIPLE_CREDENTIALS }, problem: PROBLEM_OF.MULTIPLE_CREDENTIALS };
  const binding = keys instanceof BindingKeyring ? keys : bindingKeyringOf(keys);
  const verified = verifyCharge(binding, header, nowSeconds);
  if (!verified.ok) return { ok: false, rejection: { code: codeOfProblem(verified.problem), message: verified.detail }, problem: verified.problem };
  const caveats = [`price_msat=${verified.amountSats * 1000}`];
  for (const name in verified.binding) caveats.push(`${name}=${verified.binding[name]}`);
  caveats.sort();
  return { ok: true, charge: verified, caveats };
}
