// The paywall decision shared by withL402 (Web handlers) and the Node adapter:
// a request either carries a valid, unused, paid credential or gets a fresh
// 402 challenge. Verification is local; the only I/O on the paid path is the
// replay-store claim (docs/architecture.md decisions 3-5).
import { verifyAuthorization } from './credential.js';
import { REJECTIONS, type Rejection } from './reasons.js';
import { UseTable, memoryReplayStore, type ReplayStore } from './replay.js';
import { Keyring, checkCaveats, mintToken, type CaveatExpectations, type VerifiedToken } from './token.js';
import type { L402Event, ServerEventOptions } from '../events/types.js';

/** What the paywall needs from a Lightning backend (lib/lightning providers fit it). */
export interface InvoiceProvider {
  createInvoice(request: { amountMsat: number; memo?: string; expirySeconds?: number }): Promise<{ invoice: string; paymentHash: string }>;
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
}

/** What limitInvoices answers when a request may not have an invoice now. */
export interface InvoiceLimit {
  retryAfterSeconds: number;
  message?: string;
}

export interface Payment {
  paymentHash: string;
  route: string;
  /** What the token says was paid, in millisatoshis. */
  amountMsat: number;
}

/** A 402 with a fresh challenge, or a 503 when nothing can be sold or checked. */
export interface Refusal {
  kind: 'refused';
  status: 402 | 429 | 503;
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
}

export type Decision = Refusal | Paid;

export interface Paywall {
  decide(request: Request): Promise<Decision>;
}

export const PROVIDER_RETRY_AFTER_SECONDS = 5;

/** The default onError: the message only (a stack or cause could carry a secret). */
export function logError(error: unknown, context: string): void {
  console.error(`[l402] ${context}:`, error instanceof Error ? error.message : error);
}

export function createPaywall(options: L402Options): Paywall {
  return buildPaywall(options);
}

/** createPaywall, with the decision as soon as it is known (withL402's hot path); internal. */
export function buildPaywall(options: L402Options): PaywallWithNow {
  checkOptions(options);
  if (secretIsMissing(options.secret)) return notConfigured(options.onError ?? logError);
  const keyring = options.secret instanceof Keyring ? options.secret : new Keyring(typeof options.secret === 'string' ? [options.secret] : options.secret);
  const replay = options.replayStore ?? memoryReplayStore();
  const ttl = options.tokenTtlSeconds ?? 3600;
  const uses = options.uses ?? 1;
  const onError = options.onError ?? logError;
  if (!Number.isSafeInteger(ttl) || ttl <= 0) throw new Error('tokenTtlSeconds must be a positive integer');
  if (!Number.isSafeInteger(uses) || uses <= 0) throw new Error('uses must be a positive integer');
  const background: Background = { onError, waitUntil: options.waitUntil };

  const routeOf = (request: Request): string => {
    const route = options.route;
    if (typeof route === 'string') return route;
    if (route) return route(request);
    return new URL(request.url).pathname;
  };

  const fixedPrice = typeof options.priceSats === 'number' ? validPrice(options.priceSats) : undefined;
  const priceOf = async (request: Request): Promise<number> => validPrice(await (options.priceSats as (request: Request) => MaybePromise<number>)(request));

  // Conditions every token of this paywall carries besides route and price.
  const fixedCaveats: Record<string, string> | undefined = options.caveats ? undefined : uses > 1 ? { uses: String(uses) } : {};
  const expectedCaveats = async (request: Request): Promise<Record<string, string>> => {
    if (fixedCaveats) return fixedCaveats;
    const extra = await options.caveats!(request);
    return uses > 1 ? { ...extra, uses: String(uses) } : extra;
  };

  async function challenge(request: Request, route: string, priceSats: number, rejection: Rejection): Promise<Refusal> {
    const amountMsat = priceSats * 1000;
    if (options.limitInvoices) {
      let limit: InvoiceLimit | undefined | void;
      try {
        limit = await options.limitInvoices(request);
      } catch (error) {
        onError(error, 'checking the invoice limit failed');
        return unavailable('STORE_UNAVAILABLE', 'Rate limit store temporarily unavailable; try again shortly');
      }
      if (limit) return rateLimited(limit);
    }
    let invoice: { invoice: string; paymentHash: string };
    try {
      invoice = await options.provider.createInvoice({
        amountMsat,
        memo: options.memo ? options.memo(request, priceSats) : `L402 ${route}`.slice(0, 120),
        expirySeconds: ttl,
      });
    } catch (error) {
      onError(error, 'creating an invoice failed');
      return unavailable('PROVIDER_UNAVAILABLE', 'Lightning provider temporarily unavailable; try again shortly');
    }
    const expiresAt = Math.floor(Date.now() / 1000) + ttl;
    const macaroon = mintToken(keyring, {
      paymentHash: invoice.paymentHash,
      expiresAt,
      caveats: { ...(await expectedCaveats(request)), route, price_msat: amountMsat },
    });
    return {
      kind: 'refused',
      status: 402,
      headers: [
        ['Content-Type', 'application/json'],
        ['Cache-Control', 'no-store'],
        ...challengeHeaders(macaroon, invoice.invoice).map((value): [string, string] => ['WWW-Authenticate', value]),
      ],
      route,
      body: {
        error: rejection.message,
        code: rejection.code,
        macaroon,
        invoice: invoice.invoice,
        paymentHash: invoice.paymentHash.toLowerCase(),
        priceSats,
        expiresAt: new Date(expiresAt * 1000).toISOString(),
      },
    };
  }

  // Built once when nothing depends on the request, rather than per request.
  const fixedExpect: CaveatExpectations | undefined =
    typeof options.route === 'string' && fixedPrice !== undefined && fixedCaveats
      ? { route: options.route, priceMsat: fixedPrice * 1000, exact: fixedCaveats }
      : undefined;

  // A route's tokens share one frozen caveat list (token.ts), so with fixed
  // expectations the list that passed last time passes again, for the same amount.
  let passedCaveats: readonly string[] | undefined;
  let passedAmountMsat = 0;

  /** The use is claimed (or not): the decision. */
  const afterClaim = (
    claimed: boolean,
    request: Request,
    route: string,
    priceSats: number,
    token: VerifiedToken,
    amountMsat: number,
    attempt: string,
  ): Decision | Promise<Decision> =>
    claimed
      ? new PaidUse(token, route, amountMsat, replay, attempt, background)
      : challenge(request, route, priceSats, { code: 'TOKEN_ALREADY_USED', message: REJECTIONS.TOKEN_ALREADY_USED });

  /** The store failed. A claim may have landed before its answer was lost: given back by its attempt, or the payer's retry would find it spent. */
  const storeDown = (error: unknown, token: VerifiedToken, attempt: string): Refusal => {
    onError(error, 'replay store unavailable');
    if (attempt) void giveBack(replay, token, attempt, background);
    return unavailable('STORE_UNAVAILABLE', 'Payment verification store temporarily unavailable; retry with the same token');
  };

  /** Claims one use of a verified token: synchronously when the store answers so (the built-in one does). */
  function claimUse(
    request: Request,
    route: string,
    priceSats: number,
    token: VerifiedToken,
    amountMsat: number,
    nowSeconds: number,
  ): Decision | Promise<Decision> {
    if (replay instanceof UseTable) {
      // The built-in store answers in process, with certainty: no attempt to keep. It takes the hash as
      // the words it was verified as, and the time the token was checked at.
      let claimed: boolean;
      try {
        claimed = replay.claimWords(token.hashWords, uses, token.exp, nowSeconds);
      } catch (error) {
        return storeDown(error, token, '');
      }
      return afterClaim(claimed, request, route, priceSats, token, amountMsat, '');
    }
    const attempt = nextAttempt();
    let claim: boolean | Promise<boolean>;
    try {
      claim = replay.claim(token.hash, uses, token.exp, attempt);
    } catch (error) {
      return storeDown(error, token, attempt);
    }
    if (typeof claim === 'boolean') return afterClaim(claim, request, route, priceSats, token, amountMsat, attempt);
    return claim.then(
      (claimed) => afterClaim(claimed, request, route, priceSats, token, amountMsat, attempt),
      (error: unknown) => storeDown(error, token, attempt),
    );
  }

  async function decideAsync(request: Request): Promise<Decision> {
    const route = routeOf(request);
    const priceSats = fixedPrice ?? (await priceOf(request));
    const verified = verifyAuthorization(keyring, request.headers.get('authorization'));
    if (!verified.ok) return challenge(request, route, priceSats, verified.rejection);
    const tokenCaveats = verified.token.caveats;
    const caveats = checkCaveats(tokenCaveats, { route, priceMsat: priceSats * 1000, exact: fixedCaveats ?? (await expectedCaveats(request)) });
    if (!caveats.ok) return challenge(request, route, priceSats, caveats.rejection);
    // The clock read again: the caveats may have taken a while.
    return claimUse(request, route, priceSats, verified.token, paidMsat(tokenCaveats), Date.now() / 1000);
  }

  // With route, price and caveats fixed, nothing waits until the replay
  // claim, and the built-in store answers that at once: then the decision
  // comes back as it is, and withL402 spends no promise or await on it.
  function decideNow(request: Request): Decision | Promise<Decision> {
    if (!fixedExpect) return decideAsync(request);
    // One clock reading for the token's expiry and the claim.
    const now = Date.now() / 1000;
    const verified = verifyAuthorization(keyring, request.headers.get('authorization'), now);
    if (!verified.ok) return challenge(request, fixedExpect.route!, fixedPrice!, verified.rejection);
    const tokenCaveats = verified.token.caveats;
    let amountMsat = passedAmountMsat;
    if (tokenCaveats !== passedCaveats) {
      const caveats = checkCaveats(tokenCaveats, fixedExpect);
      if (!caveats.ok) return challenge(request, fixedExpect.route!, fixedPrice!, caveats.rejection);
      amountMsat = paidMsat(tokenCaveats);
      if (Object.isFrozen(tokenCaveats)) {
        passedCaveats = tokenCaveats;
        passedAmountMsat = amountMsat;
      }
    }
    return claimUse(request, fixedExpect.route!, fixedPrice!, verified.token, amountMsat, now);
  }

  return {
    decideNow,
    async decide(request) {
      return decideNow(request);
    },
  };
}

/** What buildPaywall returns: a Paywall, and the decision without a promise when none is needed. */
export interface PaywallWithNow extends Paywall {
  decideNow(request: Request): Decision | Promise<Decision>;
}

/** A class rather than closures per paid request; the payment (and its hash as hex) is made when first asked for. */
class PaidUse implements Paid {
  readonly kind = 'paid';
  #payment: Payment | undefined;

  constructor(
    private readonly token: VerifiedToken,
    private readonly route: string,
    private readonly amountMsat: number,
    private readonly replay: ReplayStore,
    private readonly attempt: string,
    private readonly background: Background,
  ) {}

  get expiresAt(): number {
    return this.token.exp;
  }

  get payment(): Payment {
    return (this.#payment ??= { paymentHash: this.token.hash, route: this.route, amountMsat: this.amountMsat });
  }

  release(): Promise<void> {
    return giveBack(this.replay, this.token, this.attempt, this.background);
  }
}

// Attempts name paid requests in a shared store: a random prefix per process
// and a counter, unique across instances without a random draw per request.
// Drawn on first use: some runtimes (Workers) refuse randomness at import.
let attemptPrefix = '';
let attemptCount = 0;
function nextAttempt(): string {
  if (!attemptPrefix) {
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    for (const byte of bytes) attemptPrefix += byte.toString(16).padStart(2, '0');
  }
  return `${attemptPrefix}.${(attemptCount++).toString(36)}`;
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
function giveBack(replay: ReplayStore, token: VerifiedToken, attempt: string, { onError, waitUntil }: Background): Promise<void> {
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

const MISSING_SECRET =
  'withL402: option `secret` is missing (is the environment variable, e.g. L402_SECRET, set?); use at least 32 random bytes, e.g. `openssl rand -hex 32`';
/** A setting is made by a person and a redeploy: no use asking again within seconds. */
const NOT_CONFIGURED_RETRY_AFTER_SECONDS = 60;

/** An unset secret (undefined, null or ''), as an environment variable that is not set gives it. */
export function secretIsMissing(secret: L402Options['secret'] | null): secret is undefined | null | '' {
  return secret === undefined || secret === null || secret === '';
}

/**
 * The paywall while its secret is not set. A build (`next build` evaluates
 * every route module to collect its page data) has no runtime secrets, so a
 * missing secret cannot throw when withL402 is called; every request is
 * refused instead, 503 NOT_CONFIGURED naming the option, and onError hears of
 * it each time. Nothing is sold: without a secret no token can be signed.
 */
function notConfigured(onError: (error: unknown, context: string) => void): PaywallWithNow {
  const refusal = unavailable('NOT_CONFIGURED', MISSING_SECRET.replace('withL402: ', 'The paywall is not configured: '), NOT_CONFIGURED_RETRY_AFTER_SECONDS, {
    missing: ['secret'],
  });
  const decideNow = (): Decision => {
    onError(new TypeError(MISSING_SECRET), 'withL402 is not configured');
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
  if (options.events !== undefined && (typeof options.events !== 'object' || options.events === null))
    fail('events', 'an object { agentId?, source?, maxPending?, waitUntil? }', options.events);
  if (options.events?.waitUntil !== undefined && !isFunction(options.events.waitUntil)) fail('events.waitUntil', 'a function', options.events.waitUntil);
  for (const name of ['memo', 'caveats', 'onPaid', 'onError', 'onEvent', 'limitInvoices', 'waitUntil'] as const) {
    if (options[name] !== undefined && !isFunction(options[name])) fail(name, 'a function', options[name]);
  }
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
