// The Payment scheme's Lightning charge (draft-lightning-charge, docs/mpp.md)
// as a scheme of the paywall (core/scheme.ts): a credential answering one of
// this server's charge challenges, verified statelessly (the challenge id is
// an HMAC, schemes/payment/binding.ts), held to the route's terms (realm,
// route, price, conditions) and claimed as L402's tokens are, by payment hash;
// a 402's offer is a charge challenge for the route's invoice.
import { hex32Words } from '../../crypto/encoding.js';
import { codeOfProblem, PROBLEM_OF } from '../../core/refusals.js';
import { checkCaveats } from '../../core/conditions.js';
import { REJECTIONS, type Rejection } from '../../core/rejections.js';
import type { ProblemCode } from '../../core/problem.js';
import {
  hasAuthScheme,
  type ClaimKey,
  type ClaimUse,
  type Offer,
  type OfferContext,
  type PaywallScheme,
  type Presented,
  type SchemeName,
  type Terms,
  type Verdict,
} from '../../core/scheme.js';
import type { KeyDeriver } from '../../crypto/secrets.js';
import { BindingKeyring } from '../payment/binding.js';
import {
  CHARGE_INTENT,
  chargeChallenge,
  echoesIntent,
  formatChallenge,
  readPaymentAuthorization,
  verifyChargeReading,
  type BindingFields,
  type PaymentReading,
  type VerifiedCharge,
} from '../payment/charge.js';
import { invoiceNetwork } from '../payment/network.js';
import { encodeJson, formatTime } from '../payment/wire.js';

/**
 * Which credential a request paid with.
 * @deprecated SchemeName (core/scheme.ts), the library's one scheme-name type; kept for compatibility.
 */
export type Scheme = SchemeName;

export { invoiceNetwork };

/** Whether an Authorization value is in the Payment scheme (any case, then a space): one character decides for every L402 one. */
export function isPaymentAuthorization(header: string): boolean {
  return hasAuthScheme(header, 'payment');
}

/** Two Payment credentials in one request: headers joined by a comma, as Headers.get joins them (base64url holds none). */
export function hasSecondPaymentCredential(header: string): boolean {
  return /,\s*payment\s/i.test(header);
}

/**
 * A verified Payment credential as the replay claim takes it: the payment
 * hash (as words and as hex) and when its challenge expires, as a verified
 * L402 token has them.
 */
export class ChargeUse implements ClaimKey {
  readonly hashWords = new Int32Array(8);

  constructor(
    readonly hash: string,
    readonly exp: number,
    readonly challengeId: string,
  ) {
    hex32Words(hash, this.hashWords);
  }
}

/** The Payment-Receipt value for a paid answer (schemes/payment/receipt.ts's format, built from values this server checked). */
export function receiptOf(challengeId: string, paymentHash: string, atSeconds: number): string {
  return encodeJson({ challengeId, method: 'lightning', reference: paymentHash, status: 'success', timestamp: formatTime(atSeconds) });
}

// Keyed by the caller's keyring and gone with it: verifyPaymentAuthorization's
// callers pass the same keyring again and again, and deriving costs two HMACs per secret.
const bindingKeyrings = new WeakMap<KeyDeriver, BindingKeyring>();

/** The Payment challenge binding keys of a token keyring's secrets, derived once per keyring. */
export function bindingKeyringOf(keyring: KeyDeriver): BindingKeyring {
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
  keys: KeyDeriver | BindingKeyring,
  header: string | null | undefined,
  nowSeconds = Date.now() / 1000,
): PaymentAuthorizationResult {
  const binding = keys instanceof BindingKeyring ? keys : bindingKeyringOf(keys);
  const reading: PaymentReading | undefined = header ? readPaymentAuthorization(header) : undefined;
  return verifyReading(binding, header, reading, nowSeconds);
}

type ReadingVerification = { ok: true; charge: VerifiedCharge; caveats: readonly string[] } | { ok: false; rejection: Rejection; problem: ProblemCode };

/** One credential, read (`reading`, undefined for no value), verified as a charge. */
function verifyReading(
  binding: BindingKeyring,
  header: string | null | undefined,
  reading: PaymentReading | undefined,
  nowSeconds: number,
): ReadingVerification {
  if (header?.includes(',') && hasSecondPaymentCredential(header))
    return { ok: false, rejection: { code: 'MULTIPLE_CREDENTIALS', message: REJECTIONS.MULTIPLE_CREDENTIALS }, problem: PROBLEM_OF.MULTIPLE_CREDENTIALS };
  const verified = reading
    ? verifyChargeReading(binding, reading, nowSeconds)
    : ({
        ok: false,
        problem: 'payment-required',
        detail: 'Payment required: pay the invoice in the challenge and retry with Authorization: Payment <credential>',
      } as const);
  if (!verified.ok) return { ok: false, rejection: { code: codeOfProblem(verified.problem), message: verified.detail }, problem: verified.problem };
  return { ok: true, charge: verified, caveats: caveatsOf(verified.binding, verified.amountSats) };
}

// A route's credentials share one binding (the reading of its opaque is kept,
// schemes/payment/charge.ts) and one price, so their caveats are made once:
// frozen, as every caller gets the same list. Gone with the binding.
const caveatsByBinding = new WeakMap<BindingFields, Map<number, readonly string[]>>();

/** What a charge was bound to and its amount (`price_msat`), as caveats, sorted. */
function caveatsOf(binding: BindingFields, amountSats: number): readonly string[] {
  let byAmount = caveatsByBinding.get(binding);
  if (!byAmount) caveatsByBinding.set(binding, (byAmount = new Map()));
  let caveats = byAmount.get(amountSats);
  if (!caveats) {
    const made = [`price_msat=${amountSats * 1000}`];
    for (const name in binding) made.push(`${name}=${binding[name]}`);
    caveats = Object.freeze(made.sort());
    // A few prices per route at most; a binding with many (a price per request) is not worth keeping.
    if (byAmount.size < 16) byAmount.set(amountSats, caveats);
  }
  return caveats;
}

export interface ChargeSchemeOptions {
  binding: BindingKeyring;
  /** The Payment challenges' realm for a request (the `realm` option). */
  realmOf(request: Request): string;
  /** Keep the use spent when the handler fails (keepPaymentOnFailure). */
  keepUseOnFailure: boolean;
  /** Whether credentials of the session intent are left to the session scheme. */
  leavesSessions: boolean;
  onError(error: unknown, context: string): void;
}

export class ChargeScheme implements PaywallScheme<Presented> {
  readonly name = 'Payment';
  readonly sellsWithRouteInvoice = true;
  readonly keepsUseOnFailure: boolean;
  readonly #options: ChargeSchemeOptions;

  constructor(options: ChargeSchemeOptions) {
    this.#options = options;
    this.keepsUseOnFailure = options.keepUseOnFailure;
  }

  recognise(presented: Presented): Presented | undefined {
    if (!hasAuthScheme(presented.authorization, 'payment')) return undefined;
    if (this.#options.leavesSessions) {
      const reading = presented.read(readPaymentAuthorization);
      if (reading.ok && echoesIntent(reading.json, 'session')) return undefined;
    }
    return presented;
  }

  /** Verified statelessly, held to the terms as a token's caveats are, then the same claim as L402's. */
  verify(presented: Presented, request: Request, terms: Terms, nowSeconds: number): Verdict {
    const { authorization } = presented;
    const result = verifyReading(this.#options.binding, authorization, presented.read(readPaymentAuthorization), nowSeconds);
    if (!result.ok) {
      const reason = { ...result.rejection, problem: result.problem };
      // The core draft: two Payment credentials, or one for another method, are 400.
      const fixable = reason.code !== 'MULTIPLE_CREDENTIALS' && reason.code !== 'METHOD_UNSUPPORTED';
      return { kind: 'refuse', reason, badRequest: !fixable };
    }
    const verified = result.charge;
    if (verified.realm !== this.#options.realmOf(request)) return { kind: 'refuse', reason: { code: 'WRONG_REALM', message: REJECTIONS.WRONG_REALM } };
    // What the challenge was bound to (opaque) and its amount, as conditions: held to the terms as a token's caveats are.
    const checked = checkCaveats(result.caveats, terms);
    if (!checked.ok) return { kind: 'refuse', reason: checked.rejection };
    const use: ClaimUse = {
      kind: 'claim',
      key: new ChargeUse(verified.paymentHash, verified.expiresAt, verified.challengeId),
      scheme: this,
      challengeId: verified.challengeId,
      amountMsat: verified.amountSats * 1000,
      route: terms.route,
      at: nowSeconds,
      attempt: '',
    };
    return use;
  }

  /** A charge challenge for the route's invoice: none (and onError told) when the invoice or the options cannot make one. */
  async offer(request: Request, terms: Terms, { invoice, memo, expiresAt }: OfferContext): Promise<Offer | undefined> {
    const made = await invoice;
    if (!made) return undefined;
    const network = invoiceNetwork(made.invoice);
    if (!network) return undefined;
    try {
      const challenge = chargeChallenge(this.#options.binding, {
        realm: this.#options.realmOf(request),
        invoice: made.invoice,
        paymentHash: made.paymentHash,
        amountSats: terms.priceSats,
        network,
        description: memo,
        expires: new Date(expiresAt * 1000),
        binding: { ...terms.exact, route: terms.route },
      });
      return {
        authenticate: [formatChallenge(challenge)],
        payment: { method: challenge.method, intent: challenge.intent },
        body: { challengeId: challenge.id },
      };
    } catch (error) {
      this.#options.onError(error, 'making the Payment challenge failed; the 402 offers L402 only');
      return undefined;
    }
  }

  receipt(use: ClaimUse): string {
    return receiptOf(use.challengeId!, use.key.hash, use.at);
  }
}

export { CHARGE_INTENT };
