// What fetchWithL402 is given: the wallet it pays with and the caller's
// limits, checked once at the start of each call, and the defaults of what
// the caller may leave out.
import type { Network } from '../lightning/bolt11.js';
import type { Fetch } from '../http/fetch-type.js';
import type { Scheme } from '../schemes/charge/charge-scheme.js';
import type { ClientEventOptions } from '../events/client.js';
import type { L402Event } from '../events/types.js';
import type { Budget } from './budget.js';
import type { DestinationPolicy } from './destinations.js';
import type { ClientSessions } from './sessions.js';
import type { TokenStore } from './tokens.js';

export interface PayInvoiceArgs {
  /** A BOLT11 invoice with an amount, already decoded and checked by the client. */
  invoice: string;
  /** Routing fee the wallet may spend at most, integer msat (wallets without a fee limit ignore it). */
  maxFeeMsat?: number;
}

export interface Wallet {
  /**
   * Pays the invoice and resolves with its preimage (64 hex). Throw when it was
   * not paid; throw an error with `outcomeUnknown: true` (or the backends'
   * ProviderUnavailable) when the wallet cannot tell whether it was.
   */
  payInvoice(args: PayInvoiceArgs): Promise<{ preimage: string; feeMsat?: number }>;
  /** The network the wallet pays on; invoices for another are refused. Default bitcoin. */
  readonly network?: Network;
  /**
   * Makes an invoice to be paid into this wallet; without `amountMsat`, one
   * whose payer names the amount (a prepaid session's return invoice, for the
   * refund). Absent on wallets that cannot receive; a wallet whose backend
   * makes invoices only with an amount (LNbits, NWC) throws
   * AmountlessInvoiceUnsupported when asked for one without. `expirySeconds`:
   * how long the invoice may be paid; a wallet that cannot make it last that
   * long makes it last as long as it can (a return invoice is asked for a
   * week, so a refund paid by a server's daily sweep still reaches it).
   */
  createInvoice?(request: { amountMsat?: number; memo?: string; expirySeconds?: number }): Promise<{ invoice: string; paymentHash: string }>;
  /**
   * What this wallet received on an invoice it made (createInvoice): whether
   * it is settled and, once it is, the amount received in integer msat (for
   * an invoice without an amount, what its payer paid); null when the wallet
   * does not know the hash. A prepaid session's refund counts back in the
   * budget only once this says its return invoice was paid, and for what it
   * received: never on the server's word. Absent (a wallet that cannot tell):
   * refunds stay counted as spent, and the close says they are unconfirmed.
   */
  lookupInvoice?(paymentHash: string): Promise<ReceivedInvoice | null>;
}

/** An invoice of the wallet's own, as the wallet sees it. */
export interface ReceivedInvoice {
  settled: boolean;
  /** Integer msat received; present once settled. */
  amountReceivedMsat?: number;
}

/**
 * The HTTP authentication schemes fetchWithL402 pays: L402 (and its legacy
 * name LSAT), and Payment with the Lightning charge method. The paywall's own
 * scheme-name type under the client's name: one list of schemes for both sides.
 */
export type PaymentScheme = Scheme;

export interface FetchWithL402Options {
  wallet: Wallet;
  /** The most one request may cost, in whole satoshis; a dearer invoice is refused (PRICE_ABOVE_MAXIMUM) before paying. */
  maxPriceSats: number;
  /** A spending limit shared with other calls (createBudget). */
  budget?: Budget;
  /** Routing fee limit per payment, whole satoshis; default 10. Passed to wallets that take one. */
  maxFeeSats?: number;
  /** Overrides the wallet's network. */
  network?: Network;
  /**
   * The scheme to answer with when the server offers a payable challenge in
   * both: `L402` (default) or `Payment` (the IETF Payment scheme, Lightning
   * charge). A server offering one of them is paid in that one either way.
   */
  scheme?: PaymentScheme;
  /**
   * A paid request answered 503 with a Retry-After of at most this many
   * seconds is sent again with the same credential after that wait, twice at
   * most: the server could not serve it yet but keeps the payment (this
   * project's paywall does so when its replay store fails). Default 10; 0
   * turns this off. Either way a credential whose request failed (5xx, or no
   * answer) is kept in `tokens` for the next call to the same path.
   */
  maxRetryAfterSeconds?: number;
  /**
   * Prepaid sessions (the Payment scheme's intent="session", docs/sessions.md),
   * held in the store given (createSessions). Set, and the wallet has
   * createInvoice: a 402 offering a session is answered by paying its deposit
   * (checked as any invoice, against `maxDepositSats` and the budget) and
   * opening it with an amountless return invoice from the wallet; later calls
   * to the origin send `bearer` and pay nothing; a call refused for balance
   * pays a fresh deposit as `topUp` and is sent again once. closeAll() closes
   * them and credits back to the budget what the wallet itself received
   * (its lookupInvoice), never what the server says. Needs `budget`: every
   * deposit is charged to it. A wallet without
   * createInvoice, or whose createInvoice cannot leave the amount out
   * (AmountlessInvoiceUnsupported: LNbits, NWC), pays per request, and the
   * receipt's `sessionNotUsed` says why.
   */
  sessions?: ClientSessions;
  /** Where reusable credentials are kept; default one store per wallet (the credentials it paid for); false: none. */
  tokens?: TokenStore | false;
  /** The fetch to send requests with; default globalThis.fetch. */
  fetch?: Fetch;
  /**
   * Where requests may go. Unset: wherever the URL says (the caller chose
   * it). Set: only to public addresses, unless the policy allows others, each
   * redirect judged too (docs/security.md "Where clients connect"); a request
   * it refuses throws DestinationRefused. On Node, nodeDestinations() of
   * l402-paywall/node resolves names and connects to the addresses judged.
   */
  destinations?: DestinationPolicy;
  /**
   * The most each request sent (the first one, the paid one, a retry) may
   * take, from sending it to the last byte of its answer's body, the body
   * the caller reads included; then it is aborted with a DOMException named
   * TimeoutError. Default 60,000 ms.
   */
  timeoutMs?: number;
  /** The most of a 402's body read for a challenge when its header has none; a larger body counts as no challenge. Default 65,536 bytes. */
  maxChallengeBytes?: number;
  /**
   * Audit events (CloudEvents 1.0, see l402-paywall/events): challenge.received,
   * invoice.refused, payment.sent, request.served. Unset: none is built and no
   * header is added. Set: requests carry a traceparent (unless they have one)
   * so the server's events join the trace. Never awaited; a throw is reported.
   */
  onEvent?: (event: L402Event) => unknown;
  /** agentId (sent as l402-agent-id), sessionId (sent as l402-session-id), source, maxPending, onError. */
  events?: ClientEventOptions;
}

export const DEFAULT_MAX_FEE_SATS = 10;
export const DEFAULT_MAX_RETRY_AFTER_SECONDS = 10;
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_MAX_CHALLENGE_BYTES = 64 * 1024;

export function checkOptions(options: FetchWithL402Options): void {
  if (!options || typeof options.wallet?.payInvoice !== 'function') throw new TypeError('fetchWithL402 needs options.wallet with payInvoice({ invoice })');
  if (!Number.isSafeInteger(options.maxPriceSats) || options.maxPriceSats <= 0) {
    throw new TypeError(`fetchWithL402: options.maxPriceSats must be a positive whole number of satoshis, got ${options.maxPriceSats}`);
  }
  if (options.maxRetryAfterSeconds !== undefined && !(options.maxRetryAfterSeconds >= 0 && options.maxRetryAfterSeconds <= 3600)) {
    throw new TypeError(`fetchWithL402: options.maxRetryAfterSeconds must be a number of seconds from 0 to 3600, got ${options.maxRetryAfterSeconds}`);
  }
  if (options.maxFeeSats !== undefined && (!Number.isSafeInteger(options.maxFeeSats) || options.maxFeeSats < 0)) {
    throw new TypeError(`fetchWithL402: options.maxFeeSats must be a whole number of satoshis, got ${options.maxFeeSats}`);
  }
  // AbortSignal.timeout takes at most 2^31 - 1 ms (about 24.8 days).
  if (options.timeoutMs !== undefined && !(Number.isSafeInteger(options.timeoutMs) && options.timeoutMs > 0 && options.timeoutMs <= 2 ** 31 - 1)) {
    throw new TypeError(`fetchWithL402: options.timeoutMs must be a whole number of milliseconds above 0, got ${options.timeoutMs}`);
  }
  if (options.scheme !== undefined && options.scheme !== 'L402' && options.scheme !== 'Payment') {
    throw new TypeError(`fetchWithL402: options.scheme must be 'L402' or 'Payment', got ${String(options.scheme)}`);
  }
  // A session's deposits and top-ups are paid on the server's asking: only a budget bounds what a hostile one can take.
  if (options.sessions && !options.budget) {
    throw new TypeError(
      'fetchWithL402: options.sessions needs options.budget (createBudget): every deposit and top-up is charged to it, and a refund counts back only once the wallet has received it',
    );
  }
  if (options.maxChallengeBytes !== undefined && !(Number.isSafeInteger(options.maxChallengeBytes) && options.maxChallengeBytes > 0)) {
    throw new TypeError(`fetchWithL402: options.maxChallengeBytes must be a whole number of bytes above 0, got ${options.maxChallengeBytes}`);
  }
}
