// The paywall's options as withL402, l402Middleware and createPaywall take
// them, and their checks at construction: a mistake stops the deploy instead
// of surfacing as a 500 on the first paid request.
import type { Decision, PaidRequest, SyncCapablePaywall } from '../core/decision.js';
import type { InvoiceProvider } from '../core/invoices.js';
import { NOT_CONFIGURED_RETRY_AFTER_SECONDS, unavailable, type InvoiceLimit } from '../core/refusals.js';
import type { ReplayStore } from '../core/replay.js';
import type { L402Event, ServerEventOptions } from '../events/types.js';
import { Keyring } from '../schemes/l402/token.js';
import type { SessionSeller } from '../schemes/session/seller.js';

export type { InvoiceLimit };

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
  onPaid?: (payment: PaidRequest, request: Request, response: Response) => MaybePromise<void>;
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
   * name, e.g. "api.example.com", from configuration. Default: the host name
   * of the request's URL without its port (`realmOfRequest`), as MPP clients
   * and mppx's validator expect; an adapter builds that URL from the Host
   * header, which the client chooses, so behind a proxy that rewrites Host, or
   * to answer every host with one name, set it. A realm is bound into each
   * challenge and checked against the request its credential comes with, so a
   * forged Host gets a challenge good only for requests that forge it again.
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
   * `lightningSessions({ unitPriceSats, ledger })` from l402-paywall/sessions.
   */
  session?: SessionSeller;
}

/**
 * The fixed realm the Payment challenges had by default before the request's
 * host name (realmOfRequest) became the default.
 * @deprecated no longer the default; pass `realm: DEFAULT_REALM` to keep it.
 */
export const DEFAULT_REALM = 'l402-paywall';

/**
 * The default realm: the host name of the request's URL, without its port
 * (`127.0.0.1` for `http://127.0.0.1:3000/x`, `[::1]` for IPv6). Read from the
 * URL as Request serialises it (scheme, `://`, host, optional port, path), so
 * no URL is parsed on the credential's path; a URL without a host gives ''.
 */
export function realmOfRequest(request: Request): string {
  const url = request.url;
  const start = url.indexOf('://');
  if (start < 0) return '';
  const from = start + 3;
  let end = from;
  if (url.charCodeAt(from) === 91 /* [ */) {
    const close = url.indexOf(']', from);
    return close < 0 ? '' : url.slice(from, close + 1);
  }
  for (; end < url.length; end++) {
    const c = url.charCodeAt(end);
    if (c === 58 /* : */ || c === 47 /* / */ || c === 63 /* ? */ || c === 35 /* # */) break;
  }
  return url.slice(from, end);
}

/** The default onError: the message only (a stack or cause could carry a secret). */
export function logError(error: unknown, context: string): void {
  console.error(`[l402] ${context}:`, error instanceof Error ? error.message : error);
}

/** A setting that is not set (an environment variable a build does not have): named in the 503 NOT_CONFIGURED, with what to set. */
export interface MissingSetting {
  /** The option, as the caller writes it: `secret`, `managed.serviceUrl`. */
  option: string;
  /** What to set it to, e.g. "use at least 32 random bytes". */
  hint: string;
}

export const MISSING_SECRET: MissingSetting = {
  option: 'secret',
  hint: 'use at least 32 random bytes, e.g. `openssl rand -hex 32`',
};
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
export function notConfigured(missing: readonly MissingSetting[], onError: (error: unknown, context: string) => void): SyncCapablePaywall {
  const described = describeMissing(missing);
  const refusal = unavailable('NOT_CONFIGURED', `The paywall is not configured: ${described}`, NOT_CONFIGURED_RETRY_AFTER_SECONDS, {
    missing: missing.map(({ option }) => option),
  });
  const decideNow = (): Decision => {
    onError(new TypeError(`withL402: ${described}`), 'withL402 is not configured');
    return refusal;
  };
  return { decideSyncWhenPossible: decideNow, decideNow, decide: async () => decideNow() };
}

/**
 * Refuses options that cannot work, at construction, naming the option: a
 * mistake should stop the deploy, not surface as a 500 on the first paid
 * request. Plain checks, so the edge core stays small. The one exception is a
 * secret that is not set at all: see notConfigured.
 */
export function checkOptions(options: L402Options): void {
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
    if (!session || typeof session.scheme !== 'function' || typeof session.check !== 'function')
      fail('session', 'a session seller: lightningSessions({ unitPriceSats, ledger }) from l402-paywall/lightning', options.session);
    options.session.check(provider);
  }
}

export function validPrice(price: number): number {
  if (!Number.isSafeInteger(price) || price <= 0) throw new Error(`priceSats must be a positive whole number of satoshis, got ${price}`);
  return price;
}
