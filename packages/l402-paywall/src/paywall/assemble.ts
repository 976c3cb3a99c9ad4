// The paywall assembled from today's options (L402Options): the schemes they
// turn on (L402, the Payment charge, the prepaid session), built with what
// each needs, and the scheme-neutral pipeline (core/pipeline.ts) over them.
import { AttemptNames } from '../core/attempts.js';
import type { Paywall, SyncCapablePaywall } from '../core/decision.js';
import { InvoiceMaker } from '../core/invoices.js';
import { PaywallPipeline, type PipelineSettings } from '../core/pipeline.js';
import { REJECTIONS } from '../core/rejections.js';
import { memoryReplayStore } from '../core/replay.js';
import { termsOf, type PaywallScheme, type Terms } from '../core/scheme.js';
import { ChargeScheme, bindingKeyringOf } from '../schemes/charge/charge-scheme.js';
import { L402Scheme } from '../schemes/l402/scheme.js';
import { Keyring } from '../schemes/l402/token.js';
import {
  MISSING_SECRET,
  checkOptions,
  logError,
  notConfigured,
  realmOfRequest,
  secretIsMissing,
  validPrice,
  type L402Options,
  type MissingSetting,
} from './options.js';
import { sessionEventObserver } from './session-events.js';

type MaybePromise<T> = T | Promise<T>;

/** A Paywall (decide(request): Promise<Decision>) from withL402's options; throws a TypeError naming an option that cannot work. */
export function createPaywall(options: L402Options): Paywall {
  return assemblePaywall(options);
}

/**
 * createPaywall, with the decision as soon as it is known (the adapters' hot
 * path); internal. `missing` names settings besides the secret that are not
 * set (managed mode's): the paywall is then not configured, like without a secret.
 */
export function assemblePaywall(options: L402Options, missing: readonly MissingSetting[] = []): SyncCapablePaywall {
  checkOptions(options);
  const unset = secretIsMissing(options.secret) ? [MISSING_SECRET, ...missing] : missing;
  if (unset.length > 0) return notConfigured(unset, options.onError ?? logError);
  return new PaywallPipeline(pipelineSettings(options));
}

/** @deprecated assemblePaywall's name before it (beside createPaywall, the public one); kept for the adapters until they move. */
export const buildPaywall = assemblePaywall;

const PAYMENT_ONLY = 'This server takes Payment credentials only: pay the invoice and retry with Authorization: Payment <credential>';
const SESSION_REQUIRED_MESSAGE =
  'Payment required: this route is sold by the prepaid session only; pay the deposit invoice and open a session with Authorization: Payment <credential> (the intent="session" challenge)';

function pipelineSettings(options: L402Options): PipelineSettings {
  const secret = options.secret!;
  const keyring = secret instanceof Keyring ? secret : new Keyring(typeof secret === 'string' ? [secret] : secret);
  const replay = options.replayStore ?? memoryReplayStore();
  const ttlSeconds = options.tokenTtlSeconds ?? 3600;
  const uses = options.uses ?? 1;
  const onError = options.onError ?? logError;
  if (!Number.isSafeInteger(ttlSeconds) || ttlSeconds <= 0) throw new Error('tokenTtlSeconds must be a positive integer');
  if (!Number.isSafeInteger(uses) || uses <= 0) throw new Error('uses must be a positive integer');
  const l402 = options.schemes?.l402 ?? true;
  const charge = options.schemes?.payment ?? uses === 1;
  if (charge && uses > 1) throw new TypeError('withL402: a Payment charge opens one request: with `uses` above 1, offer L402 only (schemes: {payment: false})');
  if (!charge && !l402 && !options.session) throw new TypeError('withL402: option `schemes` turns both L402 and Payment off: nothing could be sold');
  const session = options.session;
  const realm = options.realm;
  const realmOf = typeof realm === 'string' ? () => realm : (realm ?? realmOfRequest);
  const invoices = new InvoiceMaker(options.provider, ttlSeconds, onError);
  const attempts = new AttemptNames();

  // In the order their challenges appear in a 402: L402's, the charge's, the session's.
  const schemes: PaywallScheme[] = [];
  if (l402) schemes.push(new L402Scheme({ keyring, leavesPaymentCredentials: charge || session !== undefined }));
  if (charge || session) {
    const binding = bindingKeyringOf(keyring);
    if (charge)
      schemes.push(
        new ChargeScheme({ binding, realmOf, keepUseOnFailure: options.keepPaymentOnFailure === true, leavesSessions: session !== undefined, onError }),
      );
    // With onEvent set, the session's events leave through it too: one pipeline for every event of the paywall.
    const observe = session && sessionEventObserver(options, onError);
    if (session)
      schemes.push(session.scheme({ binding, realmOf, provider: options.provider, replay, attempts, invoices, onError, ...(observe && { observe }) }));
  }

  const withUses = (extra: Record<string, string>) => (uses > 1 ? { ...extra, uses: String(uses) } : extra);
  const fixedPrice = typeof options.priceSats === 'number' ? validPrice(options.priceSats) : undefined;
  const fixedExact = options.caveats ? undefined : withUses({});
  const fixedTerms = typeof options.route === 'string' && fixedPrice !== undefined && fixedExact ? termsOf(options.route, fixedPrice, fixedExact) : undefined;
  const requestTerms = async (request: Request): Promise<Terms> => {
    const route = typeof options.route === 'string' ? options.route : options.route ? options.route(request) : new URL(request.url).pathname;
    const priceSats = fixedPrice ?? validPrice(await (options.priceSats as (request: Request) => MaybePromise<number>)(request));
    const exact = fixedExact ?? withUses(await options.caveats!(request));
    return termsOf(route, priceSats, exact);
  };
  const memo = options.memo;

  return {
    schemes,
    replay,
    uses,
    ttlSeconds,
    invoices,
    attempts,
    background: { onError, waitUntil: options.waitUntil },
    fixedTerms,
    termsOf: requestTerms,
    memo: memo ? (request, terms) => memo(request, terms.priceSats) : (_request, terms) => `L402 ${terms.route}`.slice(0, 120),
    ...(options.limitInvoices && { limitInvoices: options.limitInvoices }),
    ...(!l402 && !charge && { paymentRequiredMessage: SESSION_REQUIRED_MESSAGE }),
    unrecognisedMessage: l402 ? REJECTIONS.MALFORMED_CREDENTIAL : PAYMENT_ONLY,
  };
}
