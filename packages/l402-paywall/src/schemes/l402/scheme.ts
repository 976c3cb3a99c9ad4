// L402 as a scheme of the paywall (core/scheme.ts): a token and its preimage
// in `Authorization: L402 <token>:<preimage>` (credential.ts), verified
// against the keyring and held to the route's terms by its caveats; a 402's
// offer is a token minted for the route's invoice, in both challenge forms.
import type { Rejection } from '../../core/rejections.js';
import {
  hasAuthScheme,
  type ClaimUse,
  type Offer,
  type OfferContext,
  type PaywallScheme,
  type Presented,
  type Terms,
  type Verdict,
} from '../../core/scheme.js';
import { challengeHeaders } from './challenge.js';
import { verifyAuthorization } from './credential.js';
import { checkCaveats, mintToken, type Keyring, type VerifiedToken } from './token.js';

export interface L402SchemeOptions {
  keyring: Keyring;
  /**
   * Whether credentials in the Payment scheme are left to the schemes that
   * take them (the charge, the session). Without such a scheme, L402 takes
   * every credential, and refuses what is not its own as malformed.
   */
  leavesPaymentCredentials: boolean;
}

export class L402Scheme implements PaywallScheme<string> {
  readonly name = 'L402';
  readonly sellsWithRouteInvoice = true;
  readonly keepsUseOnFailure = false;
  readonly #keyring: Keyring;
  readonly #leavesPayment: boolean;
  // A route's tokens share one frozen caveat list (token.ts), so under the
  // same (fixed) terms the list that passed last time passes again, for the same amount.
  #passedCaveats: readonly string[] | undefined;
  #passedTerms: Terms | undefined;
  #passedAmountMsat = 0;

  constructor({ keyring, leavesPaymentCredentials }: L402SchemeOptions) {
    this.#keyring = keyring;
    this.#leavesPayment = leavesPaymentCredentials;
  }

  recognise(presented: Presented): string | undefined {
    const value = presented.authorization;
    return this.#leavesPayment && hasAuthScheme(value, 'payment') ? undefined : value;
  }

  verify(authorization: string, _request: Request, terms: Terms, nowSeconds: number): Verdict {
    const verified = verifyAuthorization(this.#keyring, authorization, nowSeconds);
    if (!verified.ok) return { kind: 'refuse', reason: verified.rejection };
    const token = verified.token;
    const amountMsat = this.#holdToTerms(token, terms);
    if (typeof amountMsat !== 'number') return { kind: 'refuse', reason: amountMsat };
    const use: ClaimUse = { kind: 'claim', key: token, scheme: this, challengeId: undefined, amountMsat, route: terms.route, at: nowSeconds, attempt: '' };
    return use;
  }

  async offer(_request: Request, terms: Terms, { invoice, expiresAt }: OfferContext): Promise<Offer | undefined> {
    const made = await invoice;
    if (!made) return undefined;
    const macaroon = mintToken(this.#keyring, {
      paymentHash: made.paymentHash,
      expiresAt,
      caveats: { ...terms.exact, route: terms.route, price_msat: terms.priceMsat },
    });
    return { authenticate: challengeHeaders(macaroon, made.invoice), leadingBody: { macaroon } };
  }

  /** The token's conditions against the request's terms: what it paid (millisatoshis), or why not. */
  #holdToTerms(token: VerifiedToken, terms: Terms): number | Rejection {
    const caveats = token.caveats;
    if (caveats === this.#passedCaveats && terms === this.#passedTerms) return this.#passedAmountMsat;
    const checked = checkCaveats(caveats, terms);
    if (!checked.ok) return checked.rejection;
    const amountMsat = paidMsat(caveats);
    if (Object.isFrozen(caveats)) {
      this.#passedCaveats = caveats;
      this.#passedTerms = terms;
      this.#passedAmountMsat = amountMsat;
    }
    return amountMsat;
  }
}

// checkCaveats has made sure exactly one price_msat caveat is there.
function paidMsat(caveats: readonly string[]): number {
  for (const c of caveats) if (c.startsWith('price_msat=')) return Number(c.slice(11));
  return NaN;
}
