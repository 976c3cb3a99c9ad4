// The paywall's decision, shared by every adapter: a request either carries a
// credential some scheme accepts (paid, or answered by the paywall itself) or
// gets a fresh 402 challenge. The pipeline knows the scheme interface
// (scheme.ts), never a scheme:
//
//   terms (route, price, conditions) -> recognise (the first scheme whose
//   credential it is, parsed once) -> verify and hold to the terms -> claim
//   (one use in the replay store) -> serve (Paid) | answer | refuse (402 with
//   every scheme's offer, 400, 429, 503) -> release (a failed handler's use)
//
// Each step is written once. The synchronous fast path is the same steps with
// nothing awaited: terms fixed at construction, a scheme that verifies
// synchronously, and a store that declares a synchronous claim
// (ReplayStore.claimSync). Every scheme that claims keys the use by the
// payment hash, so one payment opens one request whichever of its credentials
// is shown. Verification is local; the only I/O on the paid path is the claim.
import type { Decision, Paid, PaidRequest, Refusal, SyncCapablePaywall } from './decision.js';
import { isDevNodeInProduction, type InvoiceMaker } from './invoices.js';
import type { AttemptNames } from './attempts.js';
import {
  NOT_CONFIGURED_RETRY_AFTER_SECONDS,
  PROBLEM_OF,
  answered,
  badRequest,
  problemMembers,
  rateLimited,
  refusalContentType,
  unavailable,
  type InvoiceLimit,
} from './refusals.js';
import { REJECTIONS } from './rejections.js';
import { giveBack, type Background } from './release.js';
import type { ReplayStore } from './replay.js';
import { parseAcceptPayment, rankByPreference, type PaymentKind } from './accept-payment.js';
import { Presented, hasAuthScheme, type ClaimUse, type Offer, type PaywallScheme, type RefusalReason, type Terms, type Verdict } from './scheme.js';

type MaybePromise<T> = T | Promise<T>;

/** What the assembly (paywall/) hands the pipeline: the schemes, in the order their offers are sent, and the shared services. */
export interface PipelineSettings {
  /** In the order their challenges appear in a 402; asked in this order to recognise a credential. */
  schemes: readonly PaywallScheme[];
  replay: ReplayStore;
  /** Requests one use-claiming payment opens. */
  uses: number;
  /** Token and challenge lifetime, seconds. */
  ttlSeconds: number;
  invoices: InvoiceMaker;
  attempts: AttemptNames;
  background: Background;
  /** The terms of every request, when nothing depends on the request. */
  fixedTerms: Terms | undefined;
  /** The terms of one request (used when fixedTerms is unset). */
  termsOf(request: Request): Promise<Terms>;
  /** The description of a 402's invoice. */
  memo(request: Request, terms: Terms): string;
  limitInvoices?: (request: Request) => MaybePromise<InvoiceLimit | undefined | void>;
  /** The 402's sentence for a request without a credential when it should say more than REJECTIONS.PAYMENT_REQUIRED (a route sold by the session alone). */
  paymentRequiredMessage?: string;
  /** The sentence for a credential no scheme recognises. */
  unrecognisedMessage: string;
}

const PAYMENT_REQUIRED: RefusalReason = { code: 'PAYMENT_REQUIRED', message: REJECTIONS.PAYMENT_REQUIRED };

export class PaywallPipeline implements SyncCapablePaywall {
  readonly #settings: PipelineSettings;
  readonly #schemes: readonly PaywallScheme[];
  readonly #replay: ReplayStore;
  /** Whether some scheme sells with the route's invoice (L402, the charge): then the 402 makes one. */
  readonly #sellsWithRouteInvoice: boolean;

  constructor(settings: PipelineSettings) {
    this.#settings = settings;
    this.#schemes = settings.schemes;
    this.#replay = settings.replay;
    this.#sellsWithRouteInvoice = settings.schemes.some((scheme) => scheme.sellsWithRouteInvoice);
  }

  decideSyncWhenPossible(request: Request): Decision | Promise<Decision> {
    const fixed = this.#settings.fixedTerms;
    // With the terms fixed, nothing waits until the replay claim, and a store
    // with a synchronous claim answers that at once: then the decision comes
    // back as it is, and withL402 spends no promise or await on it.
    return fixed ? this.#decideUnder(request, fixed, Date.now() / 1000) : this.#decideAsync(request);
  }

  decideNow(request: Request): Decision | Promise<Decision> {
    return this.decideSyncWhenPossible(request);
  }

  async decide(request: Request): Promise<Decision> {
    return this.decideSyncWhenPossible(request);
  }

  async #decideAsync(request: Request): Promise<Decision> {
    const terms = await this.#settings.termsOf(request);
    // The clock read after the terms, which may have taken a while: one reading for the credential's expiry and the claim.
    return this.#decideUnder(request, terms, Date.now() / 1000);
  }

  /** Recognise, verify, then act on the verdict: each refusal is a fresh challenge. */
  #decideUnder(request: Request, terms: Terms, nowSeconds: number): Decision | Promise<Decision> {
    const authorization = request.headers.get('authorization') ?? macaroonAlone(request.headers);
    if (!authorization) return this.#challenge(request, terms, PAYMENT_REQUIRED);
    const presented = new Presented(authorization);
    for (const scheme of this.#schemes) {
      const credential = scheme.recognise(presented);
      if (credential === undefined) continue;
      const verdict = scheme.verify(credential, request, terms, nowSeconds);
      return verdict instanceof Promise ? verdict.then((v) => this.#act(v, request, terms)) : this.#act(verdict, request, terms);
    }
    return this.#challenge(request, terms, { code: 'MALFORMED_CREDENTIAL', message: this.#settings.unrecognisedMessage });
  }

  #act(verdict: Verdict, request: Request, terms: Terms): Decision | Promise<Decision> {
    switch (verdict.kind) {
      case 'claim':
        return this.#claim(request, terms, verdict);
      case 'refuse':
        return verdict.badRequest ? badRequest(request, verdict.reason) : this.#challenge(request, terms, verdict.reason);
      case 'answer':
        return answered(verdict.body, verdict.receipt);
      case 'paid':
        return verdict.paid;
      case 'unavailable':
        return unavailable('STORE_UNAVAILABLE', verdict.message);
    }
  }

  /** Claims one use for an accepted credential, whichever its scheme: synchronously when the store declares it can. */
  #claim(request: Request, terms: Terms, use: ClaimUse): Decision | Promise<Decision> {
    const replay = this.#replay;
    const { key } = use;
    const uses = this.#settings.uses;
    if (replay.claimSync) {
      // The store answers in process, with certainty: no attempt to keep. It
      // takes the hash as the words it was verified as, and the clock reading
      // the credential was checked at.
      let claimed: boolean;
      try {
        claimed = replay.claimSync(key.hashWords, uses, key.exp, use.at);
      } catch (error) {
        return this.#storeDown(error, use);
      }
      return this.#answer(claimed, request, terms, use);
    }
    use.attempt = this.#settings.attempts.next();
    let claim: boolean | Promise<boolean>;
    try {
      claim = replay.claim(key.hash, uses, key.exp, use.attempt);
    } catch (error) {
      return this.#storeDown(error, use);
    }
    if (typeof claim === 'boolean') return this.#answer(claim, request, terms, use);
    return claim.then(
      (claimed) => this.#answer(claimed, request, terms, use),
      (error: unknown) => this.#storeDown(error, use),
    );
  }

  /** The use is claimed (paid) or was already spent (a fresh challenge). */
  #answer(claimed: boolean, request: Request, terms: Terms, use: ClaimUse): Decision | Promise<Decision> {
    if (!claimed) return this.#challenge(request, terms, { code: 'TOKEN_ALREADY_USED', message: REJECTIONS.TOKEN_ALREADY_USED });
    return new PaidUse(use, use.scheme.keepsUseOnFailure ? undefined : this.#replay, this.#settings.background);
  }

  /** The store failed. A claim may have landed before its answer was lost: given back by its attempt, or the payer's retry would find it spent. */
  #storeDown(error: unknown, use: ClaimUse): Refusal {
    const { background } = this.#settings;
    background.onError(error, 'replay store unavailable');
    if (use.attempt) void giveBack(this.#replay, use, background);
    return unavailable('STORE_UNAVAILABLE', 'Payment verification store temporarily unavailable; retry with the same token');
  }

  /** A 402 with a fresh invoice and every scheme's offer for it, or why none can be made now. */
  async #challenge(request: Request, terms: Terms, why: RefusalReason): Promise<Refusal> {
    const settings = this.#settings;
    const { route, priceSats } = terms;
    if (settings.limitInvoices) {
      let limit: InvoiceLimit | undefined | void;
      try {
        limit = await settings.limitInvoices(request);
      } catch (error) {
        settings.background.onError(error, 'checking the invoice limit failed');
        return unavailable('STORE_UNAVAILABLE', 'Rate limit store temporarily unavailable; try again shortly');
      }
      if (limit) return rateLimited(limit);
    }
    const memo = settings.memo(request, terms);
    // Read before the invoice is made: the token and the Payment challenge expire no later than the invoice.
    const expiresAt = Math.floor(Date.now() / 1000) + settings.ttlSeconds;
    const sells = this.#sellsWithRouteInvoice;
    // The route's invoice (L402 and the charge) and a session's deposit invoice, made together.
    const invoice = sells ? settings.invoices.make(terms.priceMsat, memo) : undefined;
    let offers: (Offer | undefined)[];
    let charged: Awaited<typeof invoice>;
    try {
      offers = await Promise.all(this.#schemes.map((scheme) => scheme.offer(request, terms, { invoice, memo, expiresAt })));
      charged = await invoice;
    } catch (error) {
      // The dev node under a production NODE_ENV: said as what it is, not as a backend that is briefly down.
      if (isDevNodeInProduction(error)) return unavailable(error.code, error.message, NOT_CONFIGURED_RETRY_AFTER_SECONDS);
      throw error;
    }
    offers = inPreferredOrder(offers, request);
    const own = offers.find((offer) => offer?.ownInvoice)?.ownInvoice;
    if ((sells && !charged) || (!charged && !own)) return unavailable('PROVIDER_UNAVAILABLE', 'Lightning provider temporarily unavailable; try again shortly');
    const shown = (charged ?? own)!;
    const authenticate: [string, string][] = [];
    let leading: Record<string, unknown> = {};
    let members: Record<string, unknown> = {};
    for (const offer of offers) {
      if (!offer) continue;
      for (const value of offer.authenticate) authenticate.push(['WWW-Authenticate', value]);
      if (offer.leadingBody) leading = { ...leading, ...offer.leadingBody };
      if (offer.body) members = { ...members, ...offer.body };
    }
    if (authenticate.length === 0)
      return unavailable('PROVIDER_UNAVAILABLE', 'This invoice cannot be offered in any scheme this server speaks; try again shortly');
    const problem = why.problem ?? PROBLEM_OF[why.code];
    // A route sold by the session alone: the generic message would send the client to L402, which it does not take.
    const message = why.code === 'PAYMENT_REQUIRED' && settings.paymentRequiredMessage ? settings.paymentRequiredMessage : why.message;
    return {
      kind: 'refused',
      status: 402,
      headers: [['Content-Type', refusalContentType(request)], ['Cache-Control', 'no-store'], ...authenticate],
      route,
      body: {
        error: message,
        code: why.code,
        ...leading,
        invoice: shown.invoice,
        paymentHash: shown.paymentHash,
        priceSats,
        expiresAt: new Date(expiresAt * 1000).toISOString(),
        // RFC 9457, with the drafts' problem types; the schemes' members (challengeId names the fresh Payment challenge).
        ...problemMembers(problem, message),
        ...members,
        ...why.extra,
      },
    };
  }
}

/**
 * The offers in the order the client asked for. A client that sends a
 * well-formed Accept-Payment gets the Payment challenges it takes first,
 * ordered by its preference (server order on ties), without those it refuses,
 * then the other schemes' in the server's order; one that showed a Payment
 * credential (refused, or it would not be here) gets the Payment challenges
 * first. Otherwise the server's order: the L402 family, then Payment. A
 * preference that would leave no challenge at all is not honoured: a 402
 * without one helps nobody.
 */
function inPreferredOrder(offers: readonly (Offer | undefined)[], request: Request): (Offer | undefined)[] {
  const payment = offers.filter((offer): offer is Offer & { payment: PaymentKind } => offer?.payment !== undefined);
  if (payment.length === 0) return [...offers];
  const others = offers.filter((offer) => offer !== undefined && offer.payment === undefined);
  const ranges = parseAcceptPayment(request.headers.get('accept-payment'));
  if (ranges) {
    const taken = rankByPreference(payment, (offer) => offer.payment, ranges);
    if (taken.length > 0 || others.length > 0) return [...taken, ...others];
    return [...offers];
  }
  const authorization = request.headers.get('authorization');
  return authorization !== null && hasAuthScheme(authorization, 'payment') ? [...payment, ...others] : [...offers];
}

/** A class rather than closures per paid request; the record (and its hash as hex) is made when first asked for. */
class PaidUse implements Paid {
  readonly kind = 'paid';
  #payment: PaidRequest | undefined;

  /** `replay` undefined: the use is kept even if the handler fails (keepPaymentOnFailure). */
  constructor(
    private readonly use: ClaimUse,
    private readonly replay: ReplayStore | undefined,
    private readonly background: Background,
  ) {}

  get expiresAt(): number {
    return this.use.key.exp;
  }

  get payment(): PaidRequest {
    const { key, route, amountMsat, scheme, challengeId } = this.use;
    return (this.#payment ??= {
      paymentHash: key.hash,
      route,
      amountMsat,
      scheme: scheme.name,
      ...(challengeId !== undefined && { challengeId }),
    });
  }

  get receipt(): string | undefined {
    return this.use.scheme.receipt?.(this.use);
  }

  release(): Promise<void> {
    return this.replay ? giveBack(this.replay, this.use, this.background) : Promise.resolve();
  }
}

/**
 * Aperture's clients may send the macaroon alone, in hex, in a `Macaroon` or
 * `Grpc-Metadata-Macaroon` header, with its preimage in a caveat: when there is
 * no Authorization, that is the value `Macaroon <hex>`, which the L402 scheme reads.
 */
function macaroonAlone(headers: Headers): string | null {
  const hex = headers.get('macaroon') ?? headers.get('grpc-metadata-macaroon');
  return hex === null ? null : `Macaroon ${hex}`;
}
