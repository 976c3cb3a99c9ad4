// Wallets for fetchWithL402: `{ payInvoice({ invoice, maxFeeMsat }) -> { preimage }, network }`.
// The Lightning backends' wallets reuse the backends' own payInvoice (the same
// transport, answer checks and error mapping as the service uses): a backend
// that surely did not pay throws PaymentFailed; one whose outcome is unknown
// throws ProviderUnavailable, which the client treats as possibly paid
// (budget kept charged, invoice never paid again). They make invoices with the
// backends' createInvoice too, checked as the service's are (decoded, the hash
// the one reported, the amount as asked or none). NWC lives in
// `l402-paywall/nwc` (it needs @getalby/sdk).
import type { Network } from '../lightning/bolt11.js';
import type { LightningProvider } from '../lightning/provider.js';
import { createBlinkProvider, type BlinkOptions } from '../lightning/providers/blink.js';
import { createClnProvider, type ClnOptions } from '../lightning/providers/cln.js';
import { createLnbitsProvider } from '../lightning/providers/lnbits.js';
import { createLndProvider, type LndOptions } from '../lightning/providers/lnd.js';
import { createPhoenixdProvider, type PhoenixdOptions } from '../lightning/providers/phoenixd.js';
import { neverConnected } from '../http/never-connected.js';
import { AmountlessInvoiceUnsupported } from './errors.js';
import type { Fetch } from '../http/fetch-type.js';
import type { PayInvoiceArgs, Wallet } from './options.js';

type WithDefaultNetwork<T> = Omit<T, 'network'> & { /** Default bitcoin. */ network?: Network };

export interface ProviderWalletOptions {
  /** The backend as people know it, in errors; default the provider's name. */
  backend?: string;
  /** Why the backend cannot make an invoice without an amount, for the error; when it has no createAmountlessInvoice. */
  noAmountlessInvoices?: string;
}

type WalletProvider = Pick<LightningProvider, 'payInvoice'> &
  Partial<Pick<LightningProvider, 'name' | 'createInvoice' | 'createAmountlessInvoice' | 'lookupInvoice'>>;

/**
 * A wallet that pays through a Lightning backend's payInvoice (any
 * LightningProvider), and makes invoices through its createInvoice where it
 * has one: without an amount through createAmountlessInvoice, or, on a backend
 * without it, AmountlessInvoiceUnsupported naming the backend.
 */
export function providerWallet(provider: WalletProvider, network: Network = 'bitcoin', options: ProviderWalletOptions = {}): Wallet {
  const wallet: Wallet = {
    network,
    async payInvoice({ invoice, maxFeeMsat }: PayInvoiceArgs) {
      const paid = await provider.payInvoice({ invoice, maxFeeMsat: maxFeeMsat ?? 10_000 });
      return { preimage: paid.preimage, feeMsat: paid.feeMsat };
    },
  };
  if (typeof provider.lookupInvoice === 'function') {
    // The backend's own record of the incoming payment: for a return invoice (no amount), what its payer paid.
    wallet.lookupInvoice = async (paymentHash) => {
      const status = await provider.lookupInvoice!(paymentHash);
      if (!status) return null;
      return status.settled ? { settled: true, amountReceivedMsat: status.amountMsat } : { settled: false };
    };
  }
  if (typeof provider.createInvoice !== 'function') return wallet;
  const backend = options.backend ?? provider.name ?? 'this backend';
  wallet.createInvoice = async ({ amountMsat, memo, expirySeconds }) => {
    const asked = { ...(memo !== undefined && { memo }), ...(expirySeconds !== undefined && { expirySeconds }) };
    if (amountMsat === undefined && typeof provider.createAmountlessInvoice !== 'function')
      throw new AmountlessInvoiceUnsupported(backend, options.noAmountlessInvoices ?? 'its API has no call for one');
    const made = amountMsat !== undefined ? await provider.createInvoice!({ amountMsat, ...asked }) : await provider.createAmountlessInvoice!(asked);
    return { invoice: made.invoice, paymentHash: made.paymentHash };
  };
  return wallet;
}

export interface LnbitsWalletOptions {
  url: string;
  /** The wallet's admin key (the invoice key cannot pay). */
  adminKey: string;
  network?: Network;
  timeoutMs?: number;
  fetch?: Fetch;
}

/**
 * LNbits: pays with the wallet's admin key. LNbits takes no per-payment fee
 * limit (its fee reserve applies). Its invoices name an amount: LNbits makes
 * none without one, so this wallet cannot open prepaid sessions.
 */
export function lnbitsWallet(options: LnbitsWalletOptions): Wallet {
  const network = options.network ?? 'bitcoin';
  return providerWallet(createLnbitsProvider({ ...options, apiKey: options.adminKey, network }), network, {
    backend: 'LNbits',
    noAmountlessInvoices: 'its API refuses an invoice of amount 0 ("Amountless invoices not supported")',
  });
}

/** Phoenixd: HTTP password. Phoenixd takes no per-payment fee limit (its own fee policy applies); its invoices are in whole satoshis. */
export function phoenixdWallet(options: WithDefaultNetwork<Omit<PhoenixdOptions, 'webhookSecret'>>): Wallet {
  const network = options.network ?? 'bitcoin';
  return providerWallet(createPhoenixdProvider({ ...options, network }), network, { backend: 'Phoenixd' });
}

/** LND over REST with a macaroon that may pay (admin.macaroon); the fee limit is sent with each payment. */
export function lndWallet(options: WithDefaultNetwork<LndOptions>): Wallet {
  const network = options.network ?? 'bitcoin';
  return providerWallet(createLndProvider({ ...options, network }), network, { backend: 'LND' });
}

/** Core Lightning over CLNRest with a rune that may `pay`; the fee limit is sent with each payment. */
export function clnWallet(options: WithDefaultNetwork<ClnOptions>): Wallet {
  const network = options.network ?? 'bitcoin';
  return providerWallet(createClnProvider({ ...options, network }), network, { backend: 'Core Lightning' });
}

/** Blink (GraphQL API key with the Write scope, and Receive to make invoices); a payment whose probed fee is above the limit is not sent; invoices in whole satoshis. */
export function blinkWallet(options: WithDefaultNetwork<Omit<BlinkOptions, 'webhookSecret' | 'apiUrl'>> & { apiUrl?: string }): Wallet {
  const network = options.network ?? 'bitcoin';
  return providerWallet(createBlinkProvider({ ...options, apiUrl: options.apiUrl ?? 'https://api.blink.sv/graphql', network }), network, {
    backend: 'Blink',
  });
}

/** The longest-lived invoice the dev node makes (lightning/providers/dev.ts); not imported, to keep the node out of the client. */
const DEV_NODE_MAX_EXPIRY_SECONDS = 7 * 24 * 3600;

export interface DevWalletOptions {
  /** The local service (`npm start`) or an app with a createDevPayHandler route at /api/dev/pay, e.g. http://127.0.0.1:3000. */
  serviceUrl: string;
  fetch?: Fetch;
  /** Default 30000 ms: a dev server (next dev) compiles the pay route on its first request. */
  timeoutMs?: number;
}

/**
 * The local service's dev wallet (POST /api/dev/pay): pays invoices of its
 * embedded dev node (regtest, fake money). For trying things out against
 * `npm start`, or an app of your own that mounts createDevPayHandler(devNode)
 * (l402-paywall/backends) at /api/dev/pay. When nothing there answers like a
 * dev wallet, the error's `code` is NO_DEV_WALLET and its message says so;
 * when no connection could be made at all (nothing listening, a name that does
 * not resolve), DEV_WALLET_UNREACHABLE: either way nothing was paid, so
 * fetchWithL402 answers PAYMENT_FAILED and gives the budget back.
 */
export function devWallet(options: DevWalletOptions): Wallet {
  const endpoint = new URL('/api/dev/pay', options.serviceUrl).href;
  const receiving = new URL('/api/dev/receive', options.serviceUrl).href;
  const doFetch: Fetch = options.fetch ?? ((i, r) => globalThis.fetch(i, r));
  const timeoutMs = options.timeoutMs ?? 30_000;
  return {
    network: 'regtest',
    async payInvoice({ invoice }) {
      let answer: Response;
      try {
        answer = await doFetch(endpoint, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ invoice }),
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (error) {
        // Never connected (nothing listening, a name that does not resolve): the request was not sent, so nothing was paid.
        const code = neverConnected(error);
        if (code)
          throw Object.assign(
            new Error(`could not connect to the dev wallet at ${endpoint} (${code}), so nothing was paid: is the service running there?`, { cause: error }),
            {
              outcomeUnknown: false,
              code: 'DEV_WALLET_UNREACHABLE',
            },
          );
        throw Object.assign(new Error(`the dev wallet at ${endpoint} did not answer`, { cause: error }), { outcomeUnknown: true });
      }
      const body = (await answer.json().catch(() => undefined)) as { preimage?: unknown; code?: unknown; error?: unknown } | undefined;
      // Not a dev wallet's JSON answer (a framework's 404 page, a 405): nothing is mounted there, and nothing was paid.
      if (answer.status < 500 && (typeof body !== 'object' || body === null || (!answer.ok && typeof body.code !== 'string'))) {
        throw Object.assign(
          new Error(
            `no dev wallet at ${endpoint} (HTTP ${answer.status}): add a route with createDevPayHandler(devNode) from l402-paywall/backends (see its README)`,
          ),
          { outcomeUnknown: false, code: 'NO_DEV_WALLET' },
        );
      }
      if (!answer.ok) {
        const reason = typeof body?.error === 'string' ? body.error : `HTTP ${answer.status}`;
        // 4xx: refused (unknown, expired, already paid); 5xx: it may have settled.
        throw Object.assign(new Error(`the dev wallet refused: ${reason}`), { outcomeUnknown: answer.status >= 500, code: body?.code });
      }
      if (typeof body?.preimage !== 'string') throw Object.assign(new Error('the dev wallet answered without a preimage'), { outcomeUnknown: true });
      return { preimage: body.preimage, feeMsat: 0 };
    },
    /** An invoice of the dev node (POST /api/dev/receive); amounts in whole satoshis. */
    async createInvoice({ amountMsat, memo, expirySeconds }) {
      if (amountMsat !== undefined && (!Number.isSafeInteger(amountMsat) || amountMsat <= 0 || amountMsat % 1000 !== 0))
        throw new RangeError(`the dev wallet receives whole satoshis; ${amountMsat} msat is not`);
      if (expirySeconds !== undefined && (!Number.isSafeInteger(expirySeconds) || expirySeconds <= 0))
        throw new RangeError(`an invoice's expiry is a whole number of seconds above 0, not ${expirySeconds}`);
      const answer = await doFetch(receiving, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          ...(amountMsat === undefined ? {} : { amountSats: amountMsat / 1000 }),
          ...(memo === undefined ? {} : { memo }),
          // As long as asked, up to the dev node's longest (the route refuses longer).
          ...(expirySeconds === undefined ? {} : { expirySeconds: Math.min(expirySeconds, DEV_NODE_MAX_EXPIRY_SECONDS) }),
        }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const body = (await answer.json().catch(() => undefined)) as { invoice?: unknown; paymentHash?: unknown; error?: unknown } | undefined;
      if (!answer.ok || typeof body?.invoice !== 'string' || typeof body.paymentHash !== 'string') {
        const reason = typeof body?.error === 'string' ? body.error : `HTTP ${answer.status}`;
        throw new Error(`the dev wallet at ${receiving} could not make an invoice: ${reason}`);
      }
      return { invoice: body.invoice, paymentHash: body.paymentHash };
    },
    /** The dev node's record of an invoice it made (GET /api/dev/receive/<hash>): paid, and for how much. */
    async lookupInvoice(paymentHash) {
      if (!/^[0-9a-f]{64}$/.test(paymentHash)) throw new RangeError('a payment hash is 64 lower-case hex characters');
      const answer = await doFetch(`${receiving}/${paymentHash}`, { signal: AbortSignal.timeout(timeoutMs) });
      const body = (await answer.json().catch(() => undefined)) as { paid?: unknown; amountMsat?: unknown; code?: unknown; error?: unknown } | undefined;
      if (answer.status === 404 && body?.code === 'UNKNOWN_INVOICE') return null;
      if (!answer.ok || typeof body?.paid !== 'boolean' || !Number.isSafeInteger(body.amountMsat) || (body.amountMsat as number) < 0) {
        const reason = typeof body?.error === 'string' ? body.error : `HTTP ${answer.status}`;
        throw new Error(`the dev wallet at ${receiving} could not say whether it received ${paymentHash}: ${reason}`);
      }
      return body.paid ? { settled: true, amountReceivedMsat: body.amountMsat as number } : { settled: false };
    },
  };
}

/** The WebLN provider a browser extension (Alby, …) puts on `window.webln`. */
export interface WebLNProvider {
  enable(): Promise<void>;
  sendPayment(paymentRequest: string): Promise<{ preimage: string }>;
}

/**
 * WebLN, in a browser: the extension asks its user to approve each payment
 * (or pays within the allowance they set). WebLN takes no fee limit.
 */
export function weblnWallet(options: { webln?: WebLNProvider; network?: Network } = {}): Wallet {
  let enabled: Promise<WebLNProvider> | undefined;
  const provider = () =>
    (enabled ??= (async () => {
      const webln = options.webln ?? (globalThis as { webln?: WebLNProvider }).webln;
      if (!webln) throw new Error('No WebLN provider: install a WebLN wallet extension (e.g. Alby) or pass options.webln');
      await webln.enable();
      return webln;
    })().catch((error: unknown) => {
      enabled = undefined;
      throw error;
    }));
  return {
    network: options.network ?? 'bitcoin',
    async payInvoice({ invoice }) {
      const { preimage } = await (await provider()).sendPayment(invoice);
      return { preimage };
    },
  };
}
