/// <reference types="node" />
// What the command line and the MCP server share: their flags, the wallet
// picked from the environment (or the local dev wallet with --dev), and the
// budget of the session.
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Network } from '../lightning/bolt11.js';
import { createBudget, type Budget } from '../client/budget.js';
import { DestinationRefused, L402ClientError } from '../client/errors.js';
import type { PaymentScheme, Wallet } from '../client/options.js';
import { blinkWallet, clnWallet, devWallet, lnbitsWallet, lndWallet, phoenixdWallet } from '../client/wallets.js';

export const EXIT = {
  /** Served: the final answer's status is below 400. */
  SERVED: 0,
  /** The server answered an error status (its body is still printed). */
  HTTP_ERROR: 1,
  /** Bad flags, or no wallet configured. */
  USAGE: 2,
  /** Not paid on purpose: price above --max-sats, budget, invalid, expired or wrong-network invoice. */
  REFUSED: 3,
  /** The wallet did not pay, could not say whether it paid, or gave a wrong preimage. */
  PAYMENT_FAILED: 4,
  /** The URL could not be reached. */
  NETWORK_ERROR: 5,
  /** Stopped by SIGINT or SIGTERM (128 + SIGINT's number, as shells report it), after closing what had to be closed. */
  INTERRUPTED: 130,
  /** A bug (sysexits' EX_SOFTWARE). */
  UNEXPECTED: 70,
} as const;

export class UsageError extends Error {}

export interface SessionFlags {
  maxSats: number;
  budgetSats: number;
  maxFeeSats: number;
  /** Each request, from sending it to the last byte of its answer (fetchWithL402's timeoutMs). */
  timeoutMs: number;
  dev?: string;
  /** --scheme: what to answer with when a server offers both L402 and Payment (default L402). */
  scheme?: PaymentScheme;
}

export const DEFAULT_MAX_SATS = 10;
export const DEFAULT_BUDGET_SATS = 100;
export const DEFAULT_MAX_FEE_SATS = 10;
export const DEFAULT_TIMEOUT_SECONDS = 60;
const MAX_TIMEOUT_SECONDS = 86_400;

/** The flags both commands take, in node:util parseArgs form. */
export const SESSION_OPTIONS = {
  'max-sats': { type: 'string' },
  'budget-sats': { type: 'string' },
  'max-fee-sats': { type: 'string' },
  'timeout-seconds': { type: 'string' },
  dev: { type: 'string' },
  scheme: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
} as const;

export function wholeNumber(value: string | undefined, flag: string, fallback: number, min = 1, unit = 'satoshis'): number {
  if (value === undefined) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < min || !Number.isSafeInteger(Number(value)))
    throw new UsageError(`${flag} must be a whole number of ${unit}${min > 0 ? ' above 0' : ''}, got "${value}"`);
  return Number(value);
}

export function sessionFlags(
  values: { 'max-sats'?: string; 'budget-sats'?: string; 'max-fee-sats'?: string; 'timeout-seconds'?: string; dev?: string; scheme?: string },
  defaultBudget: number,
): SessionFlags {
  const maxSats = wholeNumber(values['max-sats'], '--max-sats', DEFAULT_MAX_SATS);
  const timeoutSeconds = wholeNumber(values['timeout-seconds'], '--timeout-seconds', DEFAULT_TIMEOUT_SECONDS, 1, 'seconds');
  // The timer takes at most 2^31 - 1 ms.
  if (timeoutSeconds > MAX_TIMEOUT_SECONDS) throw new UsageError(`--timeout-seconds must be at most ${MAX_TIMEOUT_SECONDS} (a day), got "${timeoutSeconds}"`);
  return {
    maxSats,
    budgetSats: wholeNumber(values['budget-sats'], '--budget-sats', Math.max(defaultBudget, maxSats)),
    maxFeeSats: wholeNumber(values['max-fee-sats'], '--max-fee-sats', DEFAULT_MAX_FEE_SATS, 0),
    timeoutMs: timeoutSeconds * 1000,
    ...(values.dev !== undefined && { dev: httpUrlFlag(values.dev, '--dev', DEV_SERVICE) }),
    ...(values.scheme !== undefined && { scheme: schemeFlag(values.scheme) }),
  };
}

/** What --dev names, for its usage error. */
const DEV_SERVICE = 'the local service (npm start) or your app with the dev wallet route';

/**
 * An option that names a service: an absolute http(s) URL, checked before any
 * request goes out. `localhost:3000` parses as a URL of scheme "localhost:",
 * which would fail only once a payment is due, as a payment failure.
 */
export function httpUrlFlag(value: string, flag: string, what: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {}
  if (url?.protocol === 'http:' || url?.protocol === 'https:') return value;
  const withScheme = `http://${value}`;
  const hint = URL.canParse(withScheme) && !/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? ` (did you mean ${withScheme}?)` : '';
  throw new UsageError(`${flag} must be an http(s) URL of ${what}, such as http://127.0.0.1:3000, got "${value}"${hint}`);
}

/** --scheme l402|payment (any case). */
export function schemeFlag(value: string): PaymentScheme {
  const scheme = value.toLowerCase();
  if (scheme === 'l402') return 'L402';
  if (scheme === 'payment') return 'Payment';
  throw new UsageError(`--scheme must be l402 or payment, got "${value}"`);
}

export function sessionBudget(flags: SessionFlags): Budget {
  return createBudget({ totalSats: flags.budgetSats });
}

export interface ChosenWallet {
  wallet: Wallet & { close?(): void };
  /** For stderr: which wallet pays (never a secret). */
  description: string;
}

const NETWORKS = ['bitcoin', 'testnet', 'signet', 'regtest'] as const;

/** The network the wallet will pay on: regtest for the dev wallet, otherwise LIGHTNING_NETWORK (default bitcoin). */
export function walletNetwork(env: Record<string, string | undefined>, dev: string | undefined): Network {
  if (dev !== undefined) return 'regtest';
  const setting = env.LIGHTNING_NETWORK?.trim() || 'bitcoin';
  if (!(NETWORKS as readonly string[]).includes(setting)) throw new UsageError(`LIGHTNING_NETWORK must be one of ${NETWORKS.join(', ')}, got "${setting}"`);
  return setting as Network;
}

/**
 * The wallet from walletFromEnvironment, made only when a payment is due: a
 * free URL needs no wallet. A configuration problem then surfaces as the
 * payment's cause (a UsageError).
 */
export function walletWhenNeeded(
  env: Record<string, string | undefined>,
  dev: string | undefined,
): { wallet: Wallet; chosen(): Promise<ChosenWallet> | undefined } {
  const network = walletNetwork(env, dev);
  let chosen: Promise<ChosenWallet> | undefined;
  const wallet: Wallet = {
    network,
    async payInvoice(args) {
      const { wallet } = await (chosen ??= walletFromEnvironment(env, dev));
      return wallet.payInvoice(args);
    },
  };
  // Every wallet chosen here makes invoices; whether it can leave the amount out (a prepaid session's return invoice) is its
  // own to say: LNbits and NWC throw AmountlessInvoiceUnsupported, and the client then pays per request saying why.
  wallet.createInvoice = async (request) => {
    const { wallet } = await (chosen ??= walletFromEnvironment(env, dev));
    if (!wallet.createInvoice) throw new Error('this wallet cannot make invoices');
    return wallet.createInvoice(request);
  };
  // What the wallet received (a session's refund): asked only once a session was opened, so the wallet is chosen by then.
  wallet.lookupInvoice = async (paymentHash) => {
    const { wallet } = await (chosen ??= walletFromEnvironment(env, dev));
    if (!wallet.lookupInvoice) throw new Error('this wallet cannot say what it received');
    return wallet.lookupInvoice(paymentHash);
  };
  return { wallet, chosen: () => chosen };
}

/**
 * The wallet: the local dev wallet with --dev, otherwise the first backend
 * whose settings are in the environment (NWC_URL, LNbits, Phoenixd, LND,
 * Core Lightning, Blink), the same variable names as the hosted service's.
 */
export async function walletFromEnvironment(env: Record<string, string | undefined>, dev: string | undefined): Promise<ChosenWallet> {
  const set = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  if (dev !== undefined) {
    const url = new URL(httpUrlFlag(dev, '--dev', DEV_SERVICE));
    return { wallet: devWallet({ serviceUrl: url.href }), description: `dev wallet of ${url.origin}` };
  }
  const network = walletNetwork(env, dev);
  const nwcUrl = set('NWC_URL');
  if (nwcUrl) {
    let nwc: typeof import('../client/nwc-wallet.js');
    try {
      nwc = await import('../client/nwc-wallet.js');
    } catch {
      throw new UsageError('NWC_URL is set, but paying over Nostr Wallet Connect needs @getalby/sdk: npm install @getalby/sdk (and ws on Node 20)');
    }
    return { wallet: nwc.nwcWallet({ url: nwcUrl, network }), description: `NWC wallet (${network})` };
  }
  const lnbitsUrl = set('LNBITS_URL');
  if (lnbitsUrl) {
    const adminKey = set('LNBITS_ADMIN_KEY');
    if (!adminKey) throw new UsageError('LNBITS_URL is set but LNBITS_ADMIN_KEY is not: LNbits pays only with the wallet admin key');
    return { wallet: lnbitsWallet({ url: lnbitsUrl, adminKey, network }), description: `LNbits at ${new URL(lnbitsUrl).host} (${network})` };
  }
  const phoenixdUrl = set('PHOENIXD_URL');
  if (phoenixdUrl) {
    const password = set('PHOENIXD_PASSWORD');
    if (!password) throw new UsageError('PHOENIXD_URL is set but PHOENIXD_PASSWORD is not (http-password in ~/.phoenix/phoenix.conf)');
    return { wallet: phoenixdWallet({ url: phoenixdUrl, password, network }), description: `Phoenixd at ${new URL(phoenixdUrl).host} (${network})` };
  }
  const lndUrl = set('LND_REST_URL');
  if (lndUrl) {
    const macaroon = set('LND_MACAROON');
    if (!macaroon) throw new UsageError('LND_REST_URL is set but LND_MACAROON is not (hex of a macaroon that may pay: xxd -p -c 10000 admin.macaroon)');
    const tlsCert = set('LND_TLS_CERT');
    const fetch = tlsCert ? (await import('../http/node-trust.js')).fetchTrustingCa(tlsCert) : undefined;
    return { wallet: lndWallet({ url: lndUrl, macaroon, network, ...(fetch && { fetch }) }), description: `LND at ${new URL(lndUrl).host} (${network})` };
  }
  const clnUrl = set('CLN_REST_URL');
  if (clnUrl) {
    const rune = set('CLN_RUNE');
    if (!rune) throw new UsageError('CLN_REST_URL is set but CLN_RUNE is not (a rune that may call pay)');
    return { wallet: clnWallet({ url: clnUrl, rune, network }), description: `Core Lightning at ${new URL(clnUrl).host} (${network})` };
  }
  const blinkKey = set('BLINK_API_KEY');
  if (blinkKey) {
    const apiUrl = set('BLINK_API_URL');
    const walletId = set('BLINK_WALLET_ID');
    return { wallet: blinkWallet({ apiKey: blinkKey, network, ...(apiUrl && { apiUrl }), ...(walletId && { walletId }) }), description: `Blink (${network})` };
  }
  throw new UsageError(NO_WALLET);
}

export const NO_WALLET =
  'No wallet: pass --dev <service url> to pay with a local npm start, or set one of NWC_URL, LNBITS_URL + LNBITS_ADMIN_KEY, PHOENIXD_URL + PHOENIXD_PASSWORD, LND_REST_URL + LND_MACAROON, CLN_REST_URL + CLN_RUNE, BLINK_API_KEY';

const WALLET_SETTINGS = ['NWC_URL', 'LNBITS_URL', 'PHOENIXD_URL', 'LND_REST_URL', 'CLN_REST_URL', 'BLINK_API_KEY'];

/** Whether any wallet is configured at all (its settings may still be incomplete). */
export function walletConfigured(env: Record<string, string | undefined>, dev: string | undefined): boolean {
  return dev !== undefined || WALLET_SETTINGS.some((name) => Boolean(env[name]?.trim()));
}

/** parseArgs, with its complaints as usage errors. */
export function parse<const T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    // Node's own text for an unknown option ends in an unbalanced quote and suggests "--" first: say what matters.
    const unknown = (error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && /^Unknown option '(.+?)'/.exec((error as Error).message);
    if (unknown) throw new UsageError(`Unknown option ${unknown[1]} (--help lists the options)`);
    throw new UsageError((error as Error).message);
  }
}

/** Whether a request or its body was aborted by fetchWithL402's timeoutMs (--timeout-seconds). */
export function timedOut(error: unknown): boolean {
  return (error as { name?: unknown } | null)?.name === 'TimeoutError';
}

/** "3 sats" / "1.5 sats" from msat. */
export function sats(msat: number): string {
  const value = msat / 1000;
  return `${value} ${value === 1 ? 'sat' : 'sats'}`;
}

/** A command's URL argument: an absolute http(s) URL. */
export function httpUrlArgument(text: string): URL {
  try {
    const url = new URL(text);
    if (url.protocol === 'http:' || url.protocol === 'https:') return url;
  } catch {}
  throw new UsageError(`Not an http(s) URL: "${text}"`);
}

/**
 * The exit code of a paid request or call that ended without an answer,
 * said with `say`: refused or failed payments (exit 3, 4), a destination
 * refused, no complete answer in time, no connection (exit 5). Throws a
 * UsageError where the cause is the configuration (no wallet, no dev wallet
 * at --dev); undefined for an error that is none of these.
 */
export function failedPaymentExit(
  error: unknown,
  run: { env: Record<string, string | undefined>; dev: string | undefined; origin: string; timeoutMs: number; say(line: string): void },
): number | undefined {
  if (error instanceof L402ClientError && error.cause instanceof UsageError) throw error.cause;
  // --dev names a URL with nothing at /api/dev/pay: a configuration error, said as the wallet said it.
  if (error instanceof L402ClientError && (error.cause as { code?: unknown } | undefined)?.code === 'NO_DEV_WALLET')
    throw new UsageError((error.cause as Error).message);
  // Something was to be paid and there is nothing to pay with: say that, not why this invoice would be refused.
  if (error instanceof L402ClientError && !walletConfigured(run.env, run.dev)) throw new UsageError(NO_WALLET);
  if (error instanceof L402ClientError) {
    run.say(`${error.message} [${error.code}]`);
    return error.refused ? EXIT.REFUSED : EXIT.PAYMENT_FAILED;
  }
  if (error instanceof DestinationRefused) {
    run.say(`${error.message} [${error.code}]`);
    return EXIT.NETWORK_ERROR;
  }
  if (timedOut(error)) {
    run.say(`no complete answer from ${run.origin} within ${run.timeoutMs / 1000} s (--timeout-seconds)`);
    return EXIT.NETWORK_ERROR;
  }
  if (error instanceof TypeError) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    run.say(`could not reach ${run.origin}${cause?.code ? ` (${cause.code})` : cause?.message ? ` (${cause.message})` : ''}`);
    return EXIT.NETWORK_ERROR;
  }
  return undefined;
}
