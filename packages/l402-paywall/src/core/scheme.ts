// What the paywall's pipeline (pipeline.ts) knows of a payment scheme: an
// interface, never a scheme. L402 (schemes/l402), the Payment charge
// (schemes/charge) and the prepaid session (schemes/session) implement it;
// the assembly (paywall/) builds them from the options and hands the pipeline
// the list. A scheme
//
//   recognises  an Authorization value, parsed once: its credential, or undefined ("not mine");
//   verifies    that credential against the route's terms: a use for the pipeline to
//               claim, a refusal, an answer of its own, or a request it paid for itself;
//   offers      its part of a 402 (WWW-Authenticate values and body members).
import type { Paid, SchemeName } from './decision.js';
import type { ProblemCode } from './problem.js';
import type { Rejection } from './rejections.js';
import type { PaymentKind } from './accept-payment.js';

export type { SchemeName };

/**
 * What a request is held to: the route it is for, its price, and the other
 * conditions a credential for it must carry. One object for every request
 * when route, price and conditions are fixed, so a scheme may remember what
 * passed under it (L402's checked caveat list). Its shape is what L402's
 * checkCaveats takes.
 */
export interface Terms {
  readonly route: string;
  readonly priceSats: number;
  readonly priceMsat: number;
  /** Conditions besides route and price (`uses` among them when above 1). */
  readonly exact: Readonly<Record<string, string>>;
}

export function termsOf(route: string, priceSats: number, exact: Readonly<Record<string, string>>): Terms {
  return { route, priceSats, priceMsat: priceSats * 1000, exact };
}

/** Why a credential was refused: our code and sentence, the problem type when the scheme names its own, and members for the 402's body (a session's balance). */
export interface RefusalReason extends Rejection {
  problem?: ProblemCode;
  extra?: Record<string, unknown>;
}

/** What a paid credential leaves for the replay claim: its payment hash (as words and as hex) and when it expires. */
export interface ClaimKey {
  readonly hashWords: Int32Array;
  readonly hash: string;
  readonly exp: number;
}

/** A credential verified and held to the terms: the pipeline claims one use of it in the replay store. */
export interface ClaimUse {
  readonly kind: 'claim';
  readonly key: ClaimKey;
  readonly scheme: PaywallScheme;
  /** The Payment challenge answered (Payment only): the receipt names it. */
  readonly challengeId: string | undefined;
  /** What the credential says was paid. */
  readonly amountMsat: number;
  readonly route: string;
  /** The clock reading it was verified at (unix seconds). */
  readonly at: number;
  /** The attempt that holds the use ('' for a store's synchronous claim, which holds it without one); set by the pipeline. */
  attempt: string;
}

/** What a scheme's verification comes to. */
export type Verdict =
  | ClaimUse
  /** A 402 with a fresh challenge, or (badRequest) a 400 that no credential of this request could fix. */
  | { readonly kind: 'refuse'; readonly reason: RefusalReason; readonly badRequest?: boolean }
  /** The paywall's own answer (a session's topUp or close): 200 JSON with its receipt; the handler does not run. */
  | { readonly kind: 'answer'; readonly body: Record<string, unknown>; readonly receipt: string }
  /** A paid request whose use the scheme holds itself (a session's unit, spent in its ledger). */
  | { readonly kind: 'paid'; readonly paid: Paid }
  /** The scheme's store is down: 503, retry with the same credential. */
  | { readonly kind: 'unavailable'; readonly message: string };

/**
 * One request's Authorization value, read by every scheme that looks at it:
 * a wire shared by several schemes (the Payment scheme's charge and session
 * intents) is decoded once, by the first that asks, and the others get the
 * same reading. Lives as long as the request's recognition: nothing is kept
 * across requests.
 */
export class Presented {
  #reader: ((authorization: string) => unknown) | undefined;
  #reading: unknown;

  constructor(readonly authorization: string) {}

  /** `reader(authorization)`, computed once per reader for this value. */
  read<T>(reader: (authorization: string) => T): T {
    if (this.#reader !== reader) {
      this.#reading = reader(this.authorization);
      this.#reader = reader;
    }
    return this.#reading as T;
  }
}

/**
 * Whether an Authorization value is in the auth-scheme `lowerName` (any case,
 * then a space): the first character decides for most values, with no string made.
 */
export function hasAuthScheme(value: string, lowerName: string): boolean {
  const n = lowerName.length;
  return (
    (value.charCodeAt(0) | 32) === lowerName.charCodeAt(0) &&
    value.length > n + 1 &&
    value.charCodeAt(n) === 32 &&
    value.slice(0, n).toLowerCase() === lowerName
  );
}

/** A fresh invoice, as the provider made it. */
export interface Invoice {
  invoice: string;
  paymentHash: string;
}

/** What a scheme is told when it makes its part of a 402. */
export interface OfferContext {
  /** The route's invoice (made once for every scheme that sells with it), or undefined when the provider could not make one. */
  readonly invoice: Promise<Invoice | undefined> | undefined;
  /** The invoice's description. */
  readonly memo: string;
  /** When the challenge stops being accepted (unix seconds): no later than the invoice. */
  readonly expiresAt: number;
}

/** A scheme's part of a 402. */
export interface Offer {
  /** WWW-Authenticate values, in the order they are sent. */
  readonly authenticate: readonly string[];
  /**
   * Set when the values are Payment challenges: their method and intent, by
   * which a client's Accept-Payment header selects and orders them.
   */
  readonly payment?: PaymentKind;
  /** Members of the 402's body before the invoice (L402's macaroon, where clients have always found it). */
  readonly leadingBody?: Record<string, unknown>;
  /** Members of the 402's body after the problem details (challengeId, session). */
  readonly body?: Record<string, unknown>;
  /** The invoice this offer sells with when it is not the route's (a session's deposit): the body names it when no scheme sells with the route's. */
  readonly ownInvoice?: Invoice;
}

export interface PaywallScheme<Credential = unknown> {
  readonly name: SchemeName;
  /** Whether it sells with the route's invoice (L402, the charge): the pipeline makes one for all such schemes together. */
  readonly sellsWithRouteInvoice: boolean;
  /** Whether a use it claims is kept when the handler fails (the charge with keepPaymentOnFailure). */
  readonly keepsUseOnFailure: boolean;
  /** Its credential in an Authorization value, read once; undefined when the value is not this scheme's. Synchronous, never throws. */
  recognise(presented: Presented): Credential | undefined;
  /** The credential against the request's terms, at `nowSeconds`. Synchronous when it can be (L402 and the charge are). */
  verify(credential: Credential, request: Request, terms: Terms, nowSeconds: number): Verdict | Promise<Verdict>;
  /** Its part of a 402, or undefined when it has none to make now (onError told). */
  offer(request: Request, terms: Terms, context: OfferContext): Offer | undefined | Promise<Offer | undefined>;
  /** The Payment-Receipt value of a paid answer of a use it claimed, if it has one. */
  receipt?(use: ClaimUse): string | undefined;
}
