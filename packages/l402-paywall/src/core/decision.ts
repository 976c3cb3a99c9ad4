// What the paywall decides of a request, as the adapters (withL402, the Node
// middleware) consume it: refused (a 402 with a fresh challenge, a 400, 429 or
// 503, or the paywall's own 200 for a session's top-up or close), or paid.
import type { SessionUse } from './metering.js';

/** The HTTP authentication scheme a credential came in: which one paid. The one scheme-name type of the library. */
export type SchemeName = 'L402' | 'Payment';

/** The header a paid answer's (and a session's top-up or close's) receipt goes in (draft-httpauth-payment). */
export const PAYMENT_RECEIPT_HEADER = 'Payment-Receipt';

/** The record of a paid request: what paid for it, for the handler (getPayment) and onPaid. */
export interface PaidRequest {
  paymentHash: string;
  route: string;
  /** What the token (or Payment challenge) says was paid, in millisatoshis. */
  amountMsat: number;
  /** Which credential paid: an L402 token or a Payment credential. Always set by the paywall (optional in the type so records made before it existed still type-check). */
  scheme?: SchemeName;
  /** The Payment challenge answered (Payment credentials only). */
  challengeId?: string;
  /** Set when a session paid (a bearer or open action): spend more units of it, e.g. per streamed chunk. */
  session?: SessionUse;
}

/**
 * The paid-request record's name before PaidRequest: kept for compatibility.
 * @deprecated use PaidRequest ("Payment" is also the HTTP scheme's name).
 */
export type Payment = PaidRequest;

/** A 402 with a fresh challenge, a 400, 429 or 503 when nothing can be sold or checked, or the paywall's own 200 (a session's topUp or close). */
export interface Refusal {
  kind: 'refused';
  /** 200: a session's topUp or close, answered by the paywall itself (the handler does not run). */
  status: 200 | 400 | 402 | 429 | 503;
  /** Pairs, because WWW-Authenticate appears twice. */
  headers: [string, string][];
  body: Record<string, unknown>;
  /** What the challenge's token is bound to (402 only). */
  route?: string;
}

export interface Paid {
  kind: 'paid';
  payment: PaidRequest;
  /** When the credential expires (unix seconds). */
  readonly expiresAt: number;
  /** Give the use back: the handler failed, the client may retry. */
  release(): Promise<void>;
  /** The paid answer went out (status below 500): a session reports what the request spent. */
  served?(): void;
  /** The Payment-Receipt value (Payment credentials only): for an answer below 400, never an error. */
  readonly receipt: string | undefined;
}

export type Decision = Refusal | Paid;

export interface Paywall {
  decide(request: Request): Promise<Decision>;
}

/**
 * A Paywall that also answers without a promise when nothing needs one
 * (withL402's hot path: fixed terms and a replay store with a synchronous claim).
 */
export interface SyncCapablePaywall extends Paywall {
  /** The decision, synchronously when every step could be taken at once, else a promise of it. */
  decideSyncWhenPossible(request: Request): Decision | Promise<Decision>;
  /** @deprecated the name before decideSyncWhenPossible, kept for the adapters until they move. */
  decideNow(request: Request): Decision | Promise<Decision>;
}

/** @deprecated SyncCapablePaywall's name before it: kept for compatibility. */
export type PaywallWithNow = SyncCapablePaywall;
