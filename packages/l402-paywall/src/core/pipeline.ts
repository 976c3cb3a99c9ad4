// The paywall decision shared by withL402 (Web handlers) and the Node adapter:
// a request either carries a valid, unused, paid credential or gets a fresh
// 402 challenge. Verification is local; the only I/O on the paid path is the
// replay-store claim (docs/architecture.md decisions 3-5).
import { verifyAuthorization } from '../schemes/l402/credential.js';
import {
  ChargeUse,
  PROBLEM_OF,
  bindingKeyringOf,
  invoiceNetwork,
  isPaymentAuthorization,
  problemMembers,
  receiptOf,
  refusalContentType,
  verifyPaymentAuthorization,
  type Scheme,
} from '../schemes/charge/charge-scheme.js';
import type { BindingKeyring } from '../schemes/payment/binding.js';
import { PAYMENT_RECEIPT_HEADER, chargeChallenge, formatChallenge, type PaymentChallenge } from '../schemes/payment/charge.js';
import type { ProblemCode } from './problem.js';
import type { SessionAnswer } from '../schemes/session/ledger.js';
import { REJECTIONS, type Rejection, type RejectionCode } from './rejections.js';
import { memoryReplayStore, type ReplayStore } from './replay.js';
import { Keyring, checkCaveats, mintToken, type CaveatExpectations, type VerifiedToken } from '../schemes/l402/token.js';
import type { L402Event, ServerEventOptions } from '../events/types.js';

/** What the paywall needs from a Lightning backend (lib/lightning providers fit it). */
export interface InvoiceProvider {
  createInvoice(request: { amountMsat: number; memo?: string; expirySeconds?: number }): Promise<{ invoice: string; paymentHash: string }>;
}

/**
 * Selling a route by the session (the Payment scheme's `intent="session"`,
 * draft-lightning-session-00; docs/sessions.md): `lightningSessions({
 * unitPriceSats, ledger })` from l402-paywall/lightning makes one. Kept out
 * of the edge core (its refunds decode invoices); the paywall speaks to it
 * through this contract.
 */
export interface SessionSeller {
  /** Throws a TypeError naming the backend when it cannot refund sessions (pay invoices without an amount). */
  check(provider: InvoiceProvider): void;
  /** Whether an Authorization value in the Payment scheme echoes a session challenge. */
  isSessionCredential(authorization: string): boolean;
  /** A 402's session challenge (a fresh deposit invoice) and what its body says of it; undefined when none can be made now. */
  offer(context: SessionContext, memo: string, expiresAt: number): Promise<SessionOffer | undefined>;
  /** Acts on a session credential. */
  decide(context: SessionContext, authorization: string, nowSeconds: number): Promise<SessionStep>;
}

/** What the paywall hands a session seller for one request. */
export interface SessionContext {
  binding: BindingKeyring;
  realm: string;
  route: string;
  /** Conditions besides route (caveats), bound into the challenge and required of a credential. */
  exact: Record<string, string>;
  provider: InvoiceProvider;
  replay: ReplayStore;
  /** A fresh attempt name for a replay claim. */
  attempt(): string;
  onError(error: unknown, context: string): void;
  /** An invoice, or undefined (onError told) when the provider cannot make one now. */
  invoice(amountMsat: number, memo: string): Promise<{ invoice: string; paymentHash: string } | undefined>;
}

/** A 402's session challenge: its WWW-Authenticate value and the `session` member of the body. */
export interface SessionOffer {
  header: string;
  body: Record<string, unknown>;
}

/** What a session credential comes to: a refusal (a 402 with a fresh challenge, or 400), an answer of the paywall's own (topUp, close), a paid request, or the store down. */
export type SessionStep =
  | { kind: 'refuse'; code: RejectionCode; message: string; problem?: ProblemCode; extra?: Record<string, unknown>; badRequest?: boolean }
  | { kind: 'answer'; body: Record<string, unknown>; receipt: string }
  | { kind: 'paid'; paid: Paid }
  | { kind: 'unavailable'; message: string };

/** A session a paid request runs under (Payment.session): the seam for metering a streamed answer. */
export interface SessionUse {
  /** The session's id: its deposit's payment hash. */
  id: string;
  unitPriceSats: number;
  /** Spends `units` more units in one atomic step: refused (`insufficient`, nothing taken) when the balance does not cover them all. */
  spend(units: number): Promise<SessionAnswer>;
  /**
   * For a layer that spends after the answer has gone out (meteredEventStream):
   * the request's spending is reported (lightningSessions' onSession) once the
   * function it answers is called, when the stream is done, rather than when
   * the answer leaves.
   */
  hold?(): () => void;
  /**
   * For a metered stream that runs dry: claims the session's one wait for a
   * top-up until `untilMs` (unix ms), marked in the paywall's replay store so
   * that one stream per session is held across every instance sharing it.
   * Answers what gives the mark back, or undefined when another stream holds
   * it (or the store could not say: onError is told, and nothing is held).
   */
  claimTopUpWait?(untilMs: number): Promise<(() => Promise<void>) | undefined>;
}

type MaybePromise<T> = T | Promise<T>;

export interface L402Options {
  /** Whole satoshis per request, or a function of the request. */
  priceSats: number | ((request: Request) => MaybePromise<number>);
  provider: InvoiceProvider;
  /**
   * Signing secret(s), newest first (older ones still verify), or a Keyring.
   * Unset (an environment variable missing, as during a build): every request
   * is answered 503 NOT_CONFIGURED until it is set; a secret that is set must
   * be at least 32 bytes, or withL402 throws.
   */
  secret: string | readonly string[] | Keyring | undefined;
  /** Where uses are counted; default in memory (one process only). */
  replayStore?: ReplayStore;
  /** Token and invoice lifetime; default 3600 seconds. */
  tokenTtlSeconds?: number;
  /** What the token is bound to; default the URL path. */
  route?: string | ((request: Request) => string);
  /** Requests one payment buys; default 1. */
  uses?: number;
  /** Invoice description. */
  memo?: (request: Request, priceSats: number) => string;
  /** Extra conditions bound into the token and required on use (e.g. an owner). */
  caveats?: (request: Request) => MaybePromise<Record<string, string>>;
  /** Runs after a paid request was served (not awaited; errors go to onError). */
  onPaid?: (payment: Payment, request: Request, response: Response) => MaybePromise<void>;
  /**
   * Keeps background work alive after the answer went out, on serverless
   * platforms (Vercel: `waitUntil` from @vercel/functions; Workers:
   * `ctx.waitUntil`): a use given back after the replay store failed is
   * retried for about a minute.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** Operational errors (provider, store); default console.error with no secrets. */
  onError?: (error: unknown, context: string) => void;
  /**
   * Asked before each invoice is made (every 402 makes one): return
   * `{retryAfterSeconds}` to answer 429 RATE_LIMITED with Retry-After instead,
   * e.g. a per-client limit. Paid requests never ask. If it throws, 503.
   */
  limitInvoices?: (request: Request) => MaybePromise<InvoiceLimit | undefined | void>;
  /**
   * Audit events (CloudEvents 1.0, see l402-paywall/events): challenge.issued,
   * token.rejected, request.served. Unset: none is built. Built after the
   * response, in a later task, and never awaited; a throw goes to onError.
   */
  onEvent?: (event: L402Event) => unknown;
  /** Who the events say emitted them (`agentId`, `source`), `maxPending` (onEvent promises) and `waitUntil` (serverless). */
  events?: ServerEventOptions;
  /**
   * Which schemes a 402 offers and which credentials are taken: L402 and
   * the IETF "Payment" scheme (Lightning charge, docs/mpp.md), both by
   * default, for the same invoice. With `uses` above 1 only L402 is offered
   * (a charge is single-use).
   */
  schemes?: { l402?: boolean; payment?: boolean };
  /**
   * The Payment challenges' realm (printable ASCII, no `|`): your public host
   * name, e.g. "api.example.com", from configuration. Default DEFAULT_REALM
   * ("l402-paywall"), never the request's Host header, which the client
   * chooses. A function of the request must not read Host either.
   */
  realm?: string | ((request: Request) => string);
  /**
   * Payment credentials only: keep the use spent when the handler fails
   * (throws or answers 5xx), as draft-lightning-charge requires. Default
   * false: given back, as for L402, so the payer can retry with the same
   * credential (docs/mpp.md "A paid request whose handler fails").
   */
  keepPaymentOnFailure?: boolean;
  /**
   * Also sells the route by the session (docs/sessions.md): every 402 then
   * carries a session challenge (a deposit invoice) beside the charge. Needs
   * a provider that pays invoices without an amount (refunds): with one that
   * cannot, withL402 throws at construction. Make it with
   * `lightningSessions({ unitPriceSats, ledger })` from l402-paywall/lightning.
   */
  session?: SessionSeller;
}

/** What limitInvoices answers when a request may not have an invoice now. */
export interface InvoiceLimit {
  retryAfterSeconds: number;
  message?: string;
}

export interface Payment {
  paymentHash: string;
  route: string;
  /** What the token (or Payment challenge) says was paid, in millisatoshis. */
  amountMsat: number;
  /** Which credential paid: an L402 token or a Payment credential. Always set by the paywall (optional in the type so payments made before it existed still type-check). */
  scheme?: Scheme;
  /** The Payment challenge answered (Payment credentials only). */
  challengeId?: string;
  /** Set when a session paid (a bearer or open action): spend more units of it, e.g. per streamed chunk. */
  session?: SessionUse;
}

/** A 402 with a fresh challenge, or a 503 when nothing can be sold or checked. */
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
  payment: Payment;
  /** When the token expires (unix seconds). */
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

export const PROVIDER_RETRY_AFTER_SECONDS = 5;

/**
 * The realm of the Payment challenges when the `realm` option is unset: a
 * fixed name. Never the request's Host header: the client chooses it, and a
 * challenge would echo `realm="evil.example"` back to whoever forged it.
 */
export const DEFAULT_REALM = 'l402-paywall';

/** The default onError: the message only (a stack or cause could carry a secret). */
export function logError(error: unknown, context: string): void {
  console.error(`[l402] ${context}:`, error instanceof Error ? error.message : error);
}

export function createPaywall(options: L402Options): Paywall {
  return buildPaywall(options);
}

/** A setting that is not set (an environment variable a build does not have): named in the 503 NOT_CONFIGURED, with what to set. */
export interface MissingSetting {
  /** The option, as the caller writes it: `secret`, `managed.serviceUrl`. */
  option: string;
  /** What to set it to, e.g. "use at least 32 random bytes". */
  hint: string;
}

/**
 * createPaywall, with the decision as soon as it is known (withL402's hot
 * path); internal. `missing` names settings besides the secret that are not
 * set (managed mode's): the paywall is then not configured, like without a secret.
 */
export function buildPaywall(options: L402Options, missing: readonly MissingSetting[] = []): PaywallWithNow {
  checkOptions(options);
  const unset = secretIsMissing(options.secret) ? [MISSING_SECRET, ...missing] : missing;
  if (unset.length > 0) return notConfigured(unset, options.onError ?? logError);
  return new PaywallPipeline(options);
}

/** What buildPaywall returns: a Paywall, and the decision without a promise when none is needed. */
export interface PaywallWithNow extends Paywall {
  decideNow(request: Request): Decision | Promise<Decision>;
}

/**
 * What a request is held to: the route it is for, its price, and the other
 * conditions a credential for it must carry. One object for every request
 * when route, price and caveats are fixed.
 */
interface Terms {
  route: string;
  priceSats: number;
  /** Conditions besides route and price (`uses` among them when above 1). */
  exact: Record<string, string>;
  /** The same, as checkCaveats takes them. */
  expect: CaveatExpectations;
}

/** What a paid credential leaves for the claim: its payment hash (as words and as hex) and when it expires. VerifiedToken and VerifiedCharge are. */
interface PaidCredential {
  readonly hashWords: Int32Array;
  readonly hash: string;
  readonly exp: number;
}

/** A verified credential whose conditions fit the request: the use claimed for it, and what the paid answer tells. */
interface Claimed {
  credential: PaidCredential;
  scheme: Scheme;
  /** The Payment challenge answered (Payment only): the receipt names it. */
  challengeId: string | undefined;
  /** What the credential says was paid. */
  amountMsat: number;
  route: string;
  /** The clock reading it was verified at (unix seconds). */
  at: number;
  /** The attempt that holds the use ('' for a store's synchronous claim, which holds it without one). */
  attempt: string;
}

/** Why a credential was refused: our code and sentence, and the problem type (a Payment credential's own, or the code's). */
interface Why extends Rejection {
  problem?: ProblemCode;
  /** Members added to the 402's body (a session's balance). */
  extra?: Record<string, unknown>;
}

/**
 * The paywall: one pipeline for every request, whichever path it takes and
 * whichever scheme the credential is in.
 *
 *   terms (route, price, conditions) -> verify (L402 or Payment) -> conditions -> claim -> answer
 *
 * Each step is written once. The synchronous fast path is the same steps with
 * nothing awaited: terms fixed at construction, and a store that declares a
 * synchronous claim (ReplayStore.claimSync). Both schemes claim the same use,
 * keyed by the payment hash, so one payment opens one request whichever of
 * its credentials is shown.
 */
class PaywallPipeline implements PaywallWithNow {
  readonly #options: L402Options;
  readonly #keyring: Keyring;
  /** Set when Payment challenges are offered and Payment credentials taken. */
  readonly #binding: BindingKeyring | undefined;
  readonly #l402: boolean;
  /** Whether the charge intent is offered (Payment credentials of intent charge taken). */
  readonly #charge: boolean;
  readonly #session: SessionSeller | undefined;
  readonly #replay: ReplayStore;
  readonly #ttl: number;
  readonly #uses: number;
  readonly #onError: (error: unknown, context: string) => void;
  readonly #background: Background;
  readonly #attempts = new AttemptNames();
  readonly #fixedPrice: number | undefined;
  /** Conditions every credential of this paywall carries besides route and price, when they do not depend on the request. */
  readonly #fixedExact: Record<string, string> | undefined;
  /** The terms of every request, when nothing depends on the request. */
  readonly #fixedTerms: Terms | undefined;
  // A route's tokens share one frozen caveat list (token.ts), so under fixed
  // terms the list that passed last time passes again, for the same amount.
  #passedCaveats: readonly string[] | undefined;
  #passedAmountMsat = 0;

  constructor(options: L402Options) {
    this.#options = options;
    const secret = options.secret!;
    this.#keyring = secret instanceof Keyring ? secret : new Keyring(typeof secret === 'string' ? [secret] : secret);
    this.#replay = options.replayStore ?? memoryReplayStore();
    this.#ttl = options.tokenTtlSeconds ?? 3600;
    this.#uses = options.uses ?? 1;
    this.#onError = options.onError ?? logError;
    if (!Number.isSafeInteger(this.#ttl) || this.#ttl <= 0) throw new Error('tokenTtlSeconds must be a positive integer');
    if (!Number.isSafeInteger(this.#uses) || this.#uses <= 0) throw new Error('uses must be a positive integer');
    this.#l402 = options.schemes?.l402 ?? true;
    const payment = options.schemes?.payment ?? this.#uses === 1;
    if (payment && this.#uses > 1)
      throw new TypeError('withL402: a Payment charge opens one request: with `uses` above 1, offer L402 only (schemes: {payment: false})');
    if (!payment && !this.#l402 && !options.session) throw new TypeError('withL402: option `schemes` turns both L402 and Payment off: nothing could be sold');
    this.#charge = payment;
    this.#session = options.session;
    this.#binding = payment || this.#session ? bindingKeyringOf(this.#keyring) : undefined;
    this.#background = { onError: this.#onError, waitUntil: options.waitUntil };
    this.#fixedPrice = typeof options.priceSats === 'number' ? validPrice(options.priceSats) : undefined;
    this.#fixedExact = options.caveats ? undefined : this.#withUses({});
    this.#fixedTerms =
      typeof options.route === 'string' && this.#fixedPrice !== undefined && this.#fixedExact
        ? terms(options.route, this.#fixedPrice, this.#fixedExact)
        : undefined;
  }

  decideNow(request: Request): Decision | Promise<Decision> {
    const fixed = this.#fixedTerms;
    // With the terms fixed, nothing waits until the replay claim, and a store
    // with a synchronous claim answers that at once: then the decision comes
    // back as it is, and withL402 spends no promise or await on it.
    return fixed ? this.#decideUnder(request, fixed, Date.now() / 1000) : this.#decideAsync(request);
  }

  async decide(request: Request): Promise<Decision> {
    return this.decideNow(request);
  }

  async #decideAsync(request: Request): Promise<Decision> {
    const held = await this.#termsOf(request);
    // The clock read after the terms, which may have taken a while: one reading for the credential's expiry and the claim.
    return this.#decideUnder(request, held, Date.now() / 1000);
  }

  /** Verify, hold to the terms, claim: each step's refusal is a fresh challenge. */
  #decideUnder(request: Request, held: Terms, nowSeconds: number): Decision | Promise<Decision> {
    const authorization = request.headers.get('authorization');
    if (authorization !== null && this.#binding && isPaymentAuthorization(authorization)) {
      if (this.#session?.isSessionCredential(authorization)) return this.#decideSession(request, held, authorization, nowSeconds);
      if (this.#charge) return this.#decidePayment(request, held, authorization, nowSeconds);
    }
    if (!this.#l402) {
      return this.#challenge(request, held, authorization ? { code: 'MALFORMED_CREDENTIAL', message: PAYMENT_ONLY } : rejection('PAYMENT_REQUIRED'));
    }
    const verified = verifyAuthorization(this.#keyring, authorization, nowSeconds);
    if (!verified.ok) return this.#challenge(request, held, verified.rejection);
    const token = verified.token;
    const amountMsat = this.#holdToTerms(token, held);
    if (typeof amountMsat !== 'number') return this.#challenge(request, held, amountMsat);
    return this.#claim(request, held, {
      credential: token,
      scheme: 'L402',
      challengeId: undefined,
      amountMsat,
      route: held.route,
      at: nowSeconds,
      attempt: '',
    });
  }

  /** The same steps for `Authorization: Payment …`: verified statelessly (mpp/credential.ts), held to the same terms, the same claim. */
  #decidePayment(request: Request, held: Terms, authorization: string, nowSeconds: number): Decision | Promise<Decision> {
    const result = verifyPaymentAuthorization(this.#binding!, authorization, nowSeconds);
    if (!result.ok) {
      const why: Why = { ...result.rejection, problem: result.problem };
      // The core draft: two Payment credentials, or one for another method, are 400.
      const fixable = why.code !== 'MULTIPLE_CREDENTIALS' && why.code !== 'METHOD_UNSUPPORTED';
      return fixable ? this.#challenge(request, held, why) : badRequest(request, why);
    }
    const verified = result.charge;
    if (verified.realm !== this.#realmOf(request)) return this.#challenge(request, held, rejection('WRONG_REALM'));
    // What the challenge was bound to (opaque), and its amount, as caveats: held to the terms as a token's are.
    const checked = checkCaveats(result.caveats, held.expect);
    if (!checked.ok) return this.#challenge(request, held, checked.rejection);
    return this.#claim(request, held, {
      credential: new ChargeUse(verified.paymentHash, verified.expiresAt, verified.challengeId),
      scheme: 'Payment',
      challengeId: verified.challengeId,
      amountMsat: verified.amountSats * 1000,
      route: held.route,
      at: nowSeconds,
      attempt: '',
    });
  }

  async #termsOf(request: Request): Promise<Terms> {
    const options = this.#options;
    const route = typeof options.route === 'string' ? options.route : options.route ? options.route(request) : new URL(request.url).pathname;
    const priceSats = this.#fixedPrice ?? validPrice(await (options.priceSats as (request: Request) => MaybePromise<number>)(request));
    const exact = this.#fixedExact ?? this.#withUses(await options.caveats!(request));
    return terms(route, priceSats, exact);
  }

  #withUses(extra: Record<string, string>): Record<string, string> {
    return this.#uses > 1 ? { ...extra, uses: String(this.#uses) } : extra;
  }

  #realmOf(request: Request): string {
    const realm = this.#options.realm;
    return typeof realm === 'string' ? realm : realm ? realm(request) : DEFAULT_REALM;
  }

  /** The token's conditions against the request's terms: what it paid (millisatoshis), or why not. */
  #holdToTerms(token: VerifiedToken, held: Terms): number | Rejection {
    const caveats = token.caveats;
    const fixed = held === this.#fixedTerms;
    if (fixed && caveats === this.#passedCaveats) return this.#passedAmountMsat;
    const checked = checkCaveats(caveats, held.expect);
    if (!checked.ok) return checked.rejection;
    const amountMsat = paidMsat(caveats);
    if (fixed && Object.isFrozen(caveats)) {
      this.#passedCaveats = caveats;
      this.#passedAmountMsat = amountMsat;
    }
    return amountMsat;
  }

  /** Claims one use for an accepted credential, whichever its scheme: synchronously when the store declares it can. */
  #claim(request: Request, held: Terms, use: Claimed): Decision | Promise<Decision> {
    const replay = this.#replay;
    const { credential } = use;
    if (replay.claimSync) {
      // The store answers in process, with certainty: no attempt to keep. It
      // takes the hash as the words it was verified as, and the clock reading
      // the credential was checked at.
      let claimed: boolean;
      try {
        claimed = replay.claimSync(credential.hashWords, this.#uses, credential.exp, use.at);
      } catch (error) {
        return this.#storeDown(error, use);
      }
      return this.#answer(claimed, request, held, use);
    }
    use.attempt = this.#attempts.next();
    let claim: boolean | Promise<boolean>;
    try {
      claim = replay.claim(credential.hash, this.#uses, credential.exp, use.attempt);
    } catch (error) {
      return this.#storeDown(error, use);
    }
    if (typeof claim === 'boolean') return this.#answer(claim, request, held, use);
    return claim.then(
      (claimed) => this.#answer(claimed, request, held, use),
      (error: unknown) => this.#storeDown(error, use),
    );
  }

  /** The use is claimed (paid) or was already spent (a fresh challenge). */
  #answer(claimed: boolean, request: Request, held: Terms, use: Claimed): Decision | Promise<Decision> {
    if (!claimed) return this.#challenge(request, held, rejection('TOKEN_ALREADY_USED'));
    const keep = use.scheme === 'Payment' && this.#options.keepPaymentOnFailure === true;
    return new PaidUse(use, keep ? undefined : this.#replay, this.#background);
  }

  /** The store failed. A claim may have landed before its answer was lost: given back by its attempt, or the payer's retry would find it spent. */
  #storeDown(error: unknown, use: Claimed): Refusal {
    this.#onError(error, 'replay store unavailable');
    if (use.attempt) void giveBack(this.#replay, use, this.#background);
    return unavailable('STORE_UNAVAILABLE', 'Payment verification store temporarily unavailable; retry with the same token');
  }

  /** A 402 with a fresh invoice, its L402 token and its Payment challenge, or why none can be made now. */
  async #challenge(request: Request, held: Terms, why: Why): Promise<Refusal> {
    const options = this.#options;
    const { route, priceSats } = held;
    const amountMsat = priceSats * 1000;
    if (options.limitInvoices) {
      let limit: InvoiceLimit | undefined | void;
      try {
        limit = await options.limitInvoices(request);
      } catch (error) {
        this.#onError(error, 'checking the invoice limit failed');
        return unavailable('STORE_UNAVAILABLE', 'Rate limit store temporarily unavailable; try again shortly');
      }
      if (limit) return rateLimited(limit);
    }
    const memo = options.memo ? options.memo(request, priceSats) : `L402 ${route}`.slice(0, 120);
    // Read before the invoice is made: the token and the Payment challenge expire no later than the invoice.
    const expiresAt = Math.floor(Date.now() / 1000) + this.#ttl;
    // The charge's invoice (L402 and the charge intent) and the session's deposit invoice, made together.
    const sells = this.#l402 || this.#charge;
    let charged: { invoice: string; paymentHash: string } | undefined;
    let offered: Awaited<ReturnType<SessionSeller['offer']>> | undefined;
    try {
      [charged, offered] = await Promise.all([
        sells ? this.#invoice(amountMsat, memo) : undefined,
        this.#session ? this.#session.offer(this.#sessionContext(request, held), memo, expiresAt) : undefined,
      ]);
    } catch (error) {
      // The dev node under a production NODE_ENV: said as what it is, not as a backend that is briefly down.
      if (isDevNodeInProduction(error)) return unavailable(error.code, error.message, NOT_CONFIGURED_RETRY_AFTER_SECONDS);
      throw error;
    }
    if (sells && !charged) return unavailable('PROVIDER_UNAVAILABLE', 'Lightning provider temporarily unavailable; try again shortly');
    if (!charged && !offered) return unavailable('PROVIDER_UNAVAILABLE', 'Lightning provider temporarily unavailable; try again shortly');
    const invoice = charged ?? { invoice: offered!.body.depositInvoice as string, paymentHash: offered!.body.paymentHash as string };
    const paymentHash = invoice.paymentHash.toLowerCase();
    const authenticate: [string, string][] = [];
    let macaroon: string | undefined;
    if (this.#l402 && charged) {
      macaroon = mintToken(this.#keyring, { paymentHash, expiresAt, caveats: { ...held.exact, route, price_msat: amountMsat } });
      for (const value of challengeHeaders(macaroon, invoice.invoice)) authenticate.push(['WWW-Authenticate', value]);
    }
    const payment = this.#charge && charged ? this.#paymentChallenge(request, held, invoice.invoice, paymentHash, memo, expiresAt) : undefined;
    if (payment) authenticate.push(['WWW-Authenticate', formatChallenge(payment)]);
    if (offered) authenticate.push(['WWW-Authenticate', offered.header]);
    if (authenticate.length === 0)
      return unavailable('PROVIDER_UNAVAILABLE', 'This invoice cannot be offered in any scheme this server speaks; try again shortly');
    const problem = why.problem ?? PROBLEM_OF[why.code];
    // A route sold by the session alone: the generic message would send the client to L402, which it does not take.
    const message = !sells && why.code === 'PAYMENT_REQUIRED' ? SESSION_REQUIRED_MESSAGE : why.message;
    return {
      kind: 'refused',
      status: 402,
      headers: [['Content-Type', refusalContentType(request)], ['Cache-Control', 'no-store'], ...authenticate],
      route,
      body: {
        error: message,
        code: why.code,
        ...(macaroon !== undefined && { macaroon }),
        invoice: invoice.invoice,
        paymentHash,
        priceSats,
        expiresAt: new Date(expiresAt * 1000).toISOString(),
        // RFC 9457, with the drafts' problem types; challengeId names the fresh Payment challenge.
        ...problemMembers(problem, message),
        ...(payment && { challengeId: payment.id }),
        ...(offered && { session: offered.body }),
        ...why.extra,
      },
    };
  }

  /** An invoice from the provider, or undefined (onError told) when it cannot make one now. */
  async #invoice(amountMsat: number, memo: string): Promise<{ invoice: string; paymentHash: string } | undefined> {
    try {
      return await this.#options.provider.createInvoice({ amountMsat, memo, expirySeconds: this.#ttl });
    } catch (error) {
      this.#onError(error, 'creating an invoice failed');
      // Not a passing failure: #challenge answers it for what it is.
      if (isDevNodeInProduction(error)) throw error;
      return undefined;
    }
  }

  /** The Payment challenge for an invoice: none (and onError told) when the invoice or the options cannot make one. */
  #paymentChallenge(request: Request, held: Terms, invoice: string, paymentHash: string, description: string, expiresAt: number): PaymentChallenge | undefined {
    const network = invoiceNetwork(invoice);
    if (!network) return undefined;
    try {
      return chargeChallenge(this.#binding!, {
        realm: this.#realmOf(request),
        invoice,
        paymentHash,
        amountSats: held.priceSats,
        network,
        description,
        expires: new Date(expiresAt * 1000),
        binding: { ...held.exact, route: held.route },
      });
    } catch (error) {
      this.#onError(error, 'making the Payment challenge failed; the 402 offers L402 only');
      return undefined;
    }
  }

  /** What a session seller needs of this request. */
  #sessionContext(request: Request, held: Terms): SessionContext {
    return {
      binding: this.#binding!,
      realm: this.#realmOf(request),
      route: held.route,
      exact: held.exact,
      provider: this.#options.provider,
      replay: this.#replay,
      attempt: () => this.#attempts.next(),
      onError: this.#onError,
      invoice: (amountMsat, memo) => this.#invoice(amountMsat, memo),
    };
  }

  /** A session action (docs/sessions.md): open and bearer serve the request; topUp and close are answered here, without the handler. */
  async #decideSession(request: Request, held: Terms, authorization: string, nowSeconds: number): Promise<Decision> {
    const step = await this.#session!.decide(this.#sessionContext(request, held), authorization, nowSeconds);
    switch (step.kind) {
      case 'paid':
        return step.paid;
      case 'answer':
        return answered(step.body, step.receipt);
      case 'unavailable':
        return unavailable('STORE_UNAVAILABLE', step.message);
      case 'refuse': {
        const why: Why = { code: step.code, message: step.message, problem: step.problem, extra: step.extra };
        return step.badRequest ? badRequest(request, why) : this.#challenge(request, held, why);
      }
    }
  }
}

const PAYMENT_ONLY = 'This server takes Payment credentials only: pay the invoice and retry with Authorization: Payment <credential>';

function terms(route: string, priceSats: number, exact: Record<string, string>): Terms {
  return { route, priceSats, exact, expect: { route, priceMsat: priceSats * 1000, exact } };
}

function rejection(code: RejectionCode): Rejection {
  return { code, message: REJECTIONS[code] };
}

/** 400: a request no credential of it could fix (two Payment credentials, another payment method); no challenge. */
const SESSION_REQUIRED_MESSAGE =
  'Payment required: this route is sold by the prepaid session only; pay the deposit invoice and open a session with Authorization: Payment <credential> (the intent="session" challenge)';

function badRequest(request: Request, why: Why): Refusal {
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

/** A class rather than closures per paid request; the payment (and its hash as hex) is made when first asked for. */
class PaidUse implements Paid {
  readonly kind = 'paid';
  #payment: Payment | undefined;

  /** `replay` undefined: the use is kept even if the handler fails (keepPaymentOnFailure). */
  constructor(
    private readonly use: Claimed,
    private readonly replay: ReplayStore | undefined,
    private readonly background: Background,
  ) {}

  get expiresAt(): number {
    return this.use.credential.exp;
  }

  get payment(): Payment {
    const { credential, route, amountMsat, scheme, challengeId } = this.use;
    return (this.#payment ??= {
      paymentHash: credential.hash,
      route,
      amountMsat,
      scheme,
      ...(challengeId !== undefined && { challengeId }),
    });
  }

  get receipt(): string | undefined {
    const { challengeId, credential, at } = this.use;
    return challengeId === undefined ? undefined : receiptOf(challengeId, credential.hash, at);
  }

  release(): Promise<void> {
    return this.replay ? giveBack(this.replay, this.use, this.background) : Promise.resolve();
  }
}

/**
 * Names the paid requests of one paywall in a shared store: a random prefix
 * and a counter, unique across instances without a random draw per request.
 * The prefix is drawn on first use: some runtimes (Workers) refuse
 * randomness at import, and a paywall may be built at import.
 */
class AttemptNames {
  #prefix = '';
  #count = 0;

  next(): string {
    if (!this.#prefix) {
      const bytes = crypto.getRandomValues(new Uint8Array(12));
      for (const byte of bytes) this.#prefix += byte.toString(16).padStart(2, '0');
    }
    return `${this.#prefix}.${(this.#count++).toString(36)}`;
  }
}

/** Waits between tries of a release the store did not take: about a minute in all. */
export const RELEASE_RETRY_DELAYS_MS: readonly number[] = [1000, 2000, 4000, 8000, 16000, 32000];

/** Where work after the answer reports, and what keeps it alive. */
interface Background {
  onError: (error: unknown, context: string) => void;
  waitUntil?: (promise: Promise<unknown>) => void;
}

/**
 * Gives a use back: tried once now, and while the store fails, again in the
 * background (RELEASE_RETRY_DELAYS_MS) until it is taken or the token is
 * dead. Resolves after the first try; a release never throws.
 */
function giveBack(replay: ReplayStore, { credential: token, attempt }: Claimed, { onError, waitUntil }: Background): Promise<void> {
  const tryOnce = async () => {
    try {
      await replay.release(token.hash, attempt, token.exp);
      return true;
    } catch (error) {
      onError(error, 'releasing a use failed');
      return false;
    }
  };
  const first = tryOnce();
  const retries = first.then(async (taken) => {
    for (const delay of RELEASE_RETRY_DELAYS_MS) {
      if (taken || token.exp * 1000 <= Date.now()) return;
      await pause(delay);
      taken = await tryOnce();
    }
  });
  if (waitUntil) {
    try {
      waitUntil(retries);
    } catch (error) {
      onError(error, 'waitUntil failed');
    }
  }
  return first.then(() => undefined);
}

/** A wait that does not keep a Node process alive by itself. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    (timer as { unref?: () => void }).unref?.();
  });
}

// checkCaveats has made sure exactly one price_msat caveat is there.
function paidMsat(caveats: readonly string[]): number {
  for (const c of caveats) if (c.startsWith('price_msat=')) return Number(c.slice(11));
  return NaN;
}

/** 429 without a challenge: this client may not have another invoice yet. */
function rateLimited(limit: InvoiceLimit): Refusal {
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
function unavailable(code: string, error: string, retryAfter = PROVIDER_RETRY_AFTER_SECONDS, extra: Record<string, unknown> = {}): Refusal {
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

const MISSING_SECRET: MissingSetting = {
  option: 'secret',
  hint: 'use at least 32 random bytes, e.g. `openssl rand -hex 32`',
};
/** A setting is made by a person and a redeploy: no use asking again within seconds. */
const NOT_CONFIGURED_RETRY_AFTER_SECONDS = 60;

/**
 * What the embedded dev node throws under a production NODE_ENV
 * (DevNodeInProduction, l402-paywall/backends), recognised by its code so that
 * the core imports nothing of the backends.
 */
function isDevNodeInProduction(error: unknown): error is Error & { code: 'DEV_NODE_IN_PRODUCTION' } {
  return error instanceof Error && (error as { code?: unknown }).code === 'DEV_NODE_IN_PRODUCTION';
}

/** An unset secret (undefined, null or ''), as an environment variable that is not set gives it. */
export function secretIsMissing(secret: L402Options['secret'] | null): secret is undefined | null | '' {
  return secret === undefined || secret === null || secret === '';
}

/** A setting an environment variable that is not set gives: undefined, null or ''. */
export function settingIsMissing(value: unknown): value is undefined | null | '' {
  return value === undefined || value === null || value === '';
}

/** "option `x` is missing (is its environment variable, e.g. L402_SECRET, set?); <hint>" for each, joined. */
function describeMissing(missing: readonly MissingSetting[]): string {
  return missing
    .map(
      ({ option, hint }) =>
        `option \`${option}\` is missing (is the environment variable${option === 'secret' ? ', e.g. L402_SECRET,' : ' that gives it'} set?); ${hint}`,
    )
    .join('; ');
}

/**
 * The paywall while a setting is not set (its secret, or managed mode's
 * lightningAddress or serviceUrl). A build (`next build` evaluates every route
 * module to collect its page data) has no runtime settings, so a missing one
 * cannot throw when withL402 is called; every request is refused instead, 503
 * NOT_CONFIGURED naming each option (`missing`), and onError hears of it each
 * time. Nothing is sold.
 */
function notConfigured(missing: readonly MissingSetting[], onError: (error: unknown, context: string) => void): PaywallWithNow {
  const described = describeMissing(missing);
  const refusal = unavailable('NOT_CONFIGURED', `The paywall is not configured: ${described}`, NOT_CONFIGURED_RETRY_AFTER_SECONDS, {
    missing: missing.map(({ option }) => option),
  });
  const decideNow = (): Decision => {
    onError(new TypeError(`withL402: ${described}`), 'withL402 is not configured');
    return refusal;
  };
  return { decideNow, decide: async () => decideNow() };
}

/**
 * Refuses options that cannot work, at construction, naming the option: a
 * mistake should stop the deploy, not surface as a 500 on the first paid
 * request. Plain checks, so the edge core stays small. The one exception is a
 * secret that is not set at all: see notConfigured.
 */
function checkOptions(options: L402Options): void {
  if (!options || typeof options !== 'object') throw new TypeError('withL402 needs options: { priceSats, provider, secret }');
  const fail = (name: string, expected: string, value: unknown) => {
    throw new TypeError(
      `withL402: option \`${name}\` must be ${expected}, got ${value === undefined ? 'undefined' : typeof value === 'object' ? JSON.stringify(value) : String(value)}`,
    );
  };
  const isFunction = (v: unknown) => typeof v === 'function';
  const { priceSats, provider, secret } = options;
  if (typeof priceSats === 'number') validPrice(priceSats);
  else if (!isFunction(priceSats)) fail('priceSats', 'a positive whole number of satoshis or a function of the request', priceSats);
  if (!provider || !isFunction((provider as Partial<InvoiceProvider>).createInvoice))
    fail('provider', 'a Lightning backend with createInvoice() (see l402-paywall/backends)', provider);
  // A missing secret is refused per request, not here (notConfigured); one that is present must be usable.
  if (!secretIsMissing(secret) && !(secret instanceof Keyring) && typeof secret !== 'string' && !Array.isArray(secret))
    fail('secret', 'a string, an array of strings (newest first) or a Keyring', secret);
  if (options.replayStore !== undefined && (!isFunction(options.replayStore?.claim) || !isFunction(options.replayStore?.release)))
    fail('replayStore', 'a replay store with claim() and release()', options.replayStore);
  if (options.route !== undefined && typeof options.route !== 'string' && !isFunction(options.route))
    fail('route', 'a string or a function of the request', options.route);
  if (options.realm !== undefined && !isFunction(options.realm) && !(typeof options.realm === 'string' && /^[\x20-\x7b\x7d\x7e]{0,256}$/.test(options.realm)))
    fail('realm', 'at most 256 printable ASCII characters without "|", or a function of the request', options.realm);
  const schemes = options.schemes;
  if (
    schemes !== undefined &&
    (typeof schemes !== 'object' || schemes === null || ![schemes.l402, schemes.payment].every((on) => on === undefined || typeof on === 'boolean'))
  )
    fail('schemes', 'an object { l402?: boolean, payment?: boolean }', schemes);
  if (options.keepPaymentOnFailure !== undefined && typeof options.keepPaymentOnFailure !== 'boolean')
    fail('keepPaymentOnFailure', 'a boolean', options.keepPaymentOnFailure);
  if (options.events !== undefined && (typeof options.events !== 'object' || options.events === null))
    fail('events', 'an object { agentId?, source?, maxPending?, waitUntil? }', options.events);
  if (options.events?.waitUntil !== undefined && !isFunction(options.events.waitUntil)) fail('events.waitUntil', 'a function', options.events.waitUntil);
  for (const name of ['memo', 'caveats', 'onPaid', 'onError', 'onEvent', 'limitInvoices', 'waitUntil'] as const) {
    if (options[name] !== undefined && !isFunction(options[name])) fail(name, 'a function', options[name]);
  }
  if (options.session !== undefined) {
    const session = options.session as Partial<SessionSeller> | null;
    if (!session || typeof session.decide !== 'function' || typeof session.offer !== 'function' || typeof session.check !== 'function')
      fail('session', 'a session seller: lightningSessions({ unitPriceSats, ledger }) from l402-paywall/lightning', options.session);
    options.session.check(provider);
  }
}

/** An answer the paywall gives itself (a session's topUp or close): 200, JSON, its receipt; the handler does not run. */
function answered(body: Record<string, unknown>, receipt: string): Refusal {
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

function validPrice(price: number): number {
  if (!Number.isSafeInteger(price) || price <= 0) throw new Error(`priceSats must be a positive whole number of satoshis, got ${price}`);
  return price;
}

/**
 * Both challenge forms of docs/architecture.md "Interoperability": the bare-token
 * form and the standard key=value form (macaroon before invoice for strict
 * parsers, token and version for the current spec).
 */
export function challengeHeaders(macaroon: string, invoice: string): string[] {
  return [`L402 ${macaroon}, invoice="${invoice}"`, `L402 macaroon="${macaroon}", invoice="${invoice}", token="${macaroon}", version="0"`];
}

export function refusalResponse(challenge: Refusal): Response {
  const headers = new Headers();
  for (const [key, value] of challenge.headers) headers.append(key, value);
  return new Response(JSON.stringify(challenge.body), { status: challenge.status, headers });
}
