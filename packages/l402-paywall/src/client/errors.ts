// Why fetchWithL402 did not pay, or why a payment did not give what it should:
// a stable code for programs, a sentence for people. `refused` errors are
// raised before anything is sent to the wallet; the others after.
import type { AddressKind } from '../http/address-kind.js';

export const REFUSAL_CODES = [
  'PRICE_ABOVE_MAXIMUM',
  'BUDGET_EXCEEDED',
  'INVOICE_INVALID',
  'INVOICE_WITHOUT_AMOUNT',
  'WRONG_NETWORK',
  'INVOICE_EXPIRED',
  'TOKEN_INVOICE_MISMATCH',
  /** A Payment challenge's convenience fields (payment hash, network, amount) disagree with its invoice. */
  'CHALLENGE_INVOICE_MISMATCH',
  /** The 402 asks for payment only by methods or intents this client does not pay (not Lightning charge, not L402). */
  'UNSUPPORTED_CHALLENGE',
  /**
   * A metered stream's top-up demand not paid: another one before any chunk
   * arrived for the last, or past the session store's maxTopUpsPerCall.
   */
  'TOP_UP_REFUSED',
  /** A held session was refused for a reason that is not its balance (the server's code in `serverCode`): it is not replaced by a new deposit. */
  'SESSION_REFUSED',
] as const;

export const PAYMENT_ERROR_CODES = [
  /** The wallet did not pay (no route, no balance, refused): nothing was spent, the budget is as it was. */
  'PAYMENT_FAILED',
  /** The wallet could not say whether it paid (timeout, 5xx): the budget stays charged and the invoice is never paid again. */
  'PAYMENT_OUTCOME_UNKNOWN',
  /** The wallet answered a preimage that does not hash to the invoice's payment hash. */
  'PREIMAGE_MISMATCH',
  /** A top-up was paid and the server did not credit it, nor open a session with it: the payment stays counted as spent. */
  'TOP_UP_NOT_CREDITED',
] as const;

export type RefusalCode = (typeof REFUSAL_CODES)[number];
export type PaymentErrorCode = (typeof PAYMENT_ERROR_CODES)[number];
export type L402ClientErrorCode = RefusalCode | PaymentErrorCode;

export interface L402ErrorDetails {
  /** The URL whose challenge this is about. */
  url?: string;
  paymentHash?: string;
  amountMsat?: number | null;
  maxPriceMsat?: number;
  network?: string;
  walletNetwork?: string;
  expiresAt?: number;
  /** The scheme of the challenge this is about: `L402` (or `LSAT`) or `Payment`. */
  scheme?: string;
  /** A Payment challenge's id. */
  challengeId?: string;
  /** UNSUPPORTED_CHALLENGE: the method/intent pairs offered, e.g. `tempo/charge`. */
  unsupported?: string[];
  /** SESSION_REFUSED, TOP_UP_NOT_CREDITED: the session concerned. */
  sessionId?: string;
  /** SESSION_REFUSED, TOP_UP_NOT_CREDITED: the server's code for its refusal (e.g. WRONG_ROUTE, SESSION_CLOSED), when it gave one. */
  serverCode?: string;
}

export class L402ClientError extends Error {
  override readonly name = 'L402ClientError';
  /** True when nothing was sent to the wallet. */
  readonly refused: boolean;
  constructor(
    readonly code: L402ClientErrorCode,
    message: string,
    readonly details: L402ErrorDetails = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.refused = (REFUSAL_CODES as readonly string[]).includes(code);
  }
}

/**
 * The destination policy (fetchWithL402's `destinations`) kept a request from
 * going out: its host, or a redirect's, is not a public address and was not
 * allowed. Nothing was sent to that host.
 */
export class DestinationRefused extends Error {
  override readonly name = 'DestinationRefused';
  readonly code = 'DESTINATION_REFUSED';
  constructor(
    message: string,
    /** The URL that was not fetched. */
    readonly url: string,
    /** What its host is: 'loopback', 'private', 'link-local', ... */
    readonly addressKind: AddressKind,
    /** True when a redirect led there (the URL asked for was allowed). */
    readonly redirected: boolean,
  ) {
    super(message);
  }
}

/**
 * What a wallet's createInvoice throws when asked for an invoice without an
 * amount that its backend cannot make (LNbits, Nostr Wallet Connect): such a
 * wallet cannot give a prepaid session its return invoice, so fetchWithL402
 * pays per request and says why (`sessionNotUsed`). Nothing was asked of the
 * backend. Recognised by `code`, so any wallet can throw one of its own.
 */
export class AmountlessInvoiceUnsupported extends Error {
  override readonly name = 'AmountlessInvoiceUnsupported';
  readonly code = 'AMOUNTLESS_INVOICE_UNSUPPORTED';
  constructor(
    /** The backend, as people know it: "LNbits", "NWC wallet". */
    readonly backend: string,
    /** Why it cannot: what its API lacks. */
    readonly reason: string,
  ) {
    super(`${backend} cannot make an invoice without an amount: ${reason}`);
  }
}

/** Whether `error` is an AmountlessInvoiceUnsupported (by its code: a wallet may bring its own copy of the class). */
export function isAmountlessInvoiceUnsupported(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'AMOUNTLESS_INVOICE_UNSUPPORTED';
}

/**
 * What a wallet throws when it definitely did not pay (the provider classes of
 * `l402-paywall/lightning` fit: PaymentFailed). Anything else thrown by a
 * wallet counts as not paid too, unless it says the outcome is unknown
 * (`outcomeUnknown: true`, or the backends' ProviderUnavailable).
 */
export function outcomeUnknown(error: unknown): boolean {
  if (!error || typeof error !== 'object') return false;
  const e = error as { outcomeUnknown?: unknown; name?: unknown };
  return e.outcomeUnknown === true || e.name === 'ProviderUnavailable';
}
