// fetchWithL402: a fetch that pays L402 challenges and the Payment scheme's
// Lightning charge challenges (MPP, docs/mpp.md), and never trusts the
// server with money. The flow, one named step each:
//   1. send          the request (with a stored credential when one is usable)
//   2. challenge     a 402 (or 401) with L402 or Payment lightning/charge
//                    challenges was received (other methods and intents are
//                    never paid)
//   3. choose        each invoice is decoded here, signature checked, and
//                    refused unless amount, network and expiry are within the
//                    caller's limits and a Payment challenge's own fields
//                    (payment hash, network, amount) agree with it (nothing
//                    is paid for a refused invoice); L402 is preferred when
//                    both schemes are payable, unless `scheme` says Payment
//   4. pay           budget charged, invoice paid at most once per process,
//                    SHA256(preimage) checked against the payment hash
//   5. retry         once, with Authorization: L402 <token>:<preimage>, or
//                    Payment <credential> (single-use: never kept for reuse)
//   6. served        the answer, with a receipt of what was paid (and the
//                    server's Payment-Receipt, checked against the payment)
import { decodeInvoice, InvalidInvoice, type DecodedInvoice, type Network } from '../lightning/bolt11.js';
import { isPreimageOf } from '../crypto/preimage.js';
import { deadline } from '../http/deadline.js';
import { discardBody } from '../http/discard-body.js';
import { readBoundedText } from '../http/read-bounded.js';
import { decodeToken } from '../schemes/l402/token.js';
import { formatCredential } from '../schemes/payment/credential.js';
import { parsePaymentChallenges } from '../schemes/payment/challenge.js';
import { formatSessionCredential, readLightningSession, type LightningSessionOffer } from '../schemes/session/codec.js';
import { sessionKey, type ClientSessions, type ClosedSession, type HeldSession, type SessionPayment } from './sessions.js';
import type { LightningCharge } from '../schemes/payment/challenge.js';
import { PAYMENT_RECEIPT_HEADER, parseReceipt } from '../schemes/payment/receipt.js';
import type { Budget, BudgetReservation } from './budget.js';
import { bodyChallenge, l402Challenges, paymentCharges, type L402Challenge } from './challenge.js';
import { fetchWithinPolicy, type DestinationPolicy } from './destinations.js';
import { isAmountlessInvoiceUnsupported, L402ClientError, outcomeUnknown } from './errors.js';
import { payOnce, type Proof } from './proofs.js';
import { countUse, defaultTokenStore, keptCredential, tokenKey, usableCredential, type TokenStore } from './tokens.js';
import { clientCall, type ClientCall, type ClientEventOptions } from '../events/client.js';
import type { L402Event } from '../events/types.js';
import { setNewest } from '../util/bounded-map.js';

import type { Fetch } from '../http/fetch-type.js';
export type { Fetch };

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
  /** Where reusable credentials are kept; default one store for the process; false: none. */
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

/** The HTTP authentication schemes fetchWithL402 pays: L402 (and its legacy name LSAT), and Payment with the Lightning charge method. */
export type PaymentScheme = 'L402' | 'Payment';

/** A server's Payment-Receipt, read and checked: its reference is the payment hash this call paid. */
export interface ServerReceipt {
  /** The id of the challenge the server says was paid. */
  challengeId: string;
  /** The payment hash (never the preimage). */
  reference: string;
  /** When the server verified the payment (RFC 3339). */
  timestamp: string;
}

/** What a call paid, for the response it returned. */
export interface PaymentReceipt {
  url: string;
  host: string;
  paymentHash: string;
  /** The invoice's amount, integer msat. */
  amountMsat: number;
  /** Routing fee reported by the wallet, integer msat. */
  feeMsat: number;
  /** False when another call had already paid this invoice and this call used its proof. */
  paidByThisCall: boolean;
  /** The scheme the paid request was sent with (L402 also for a server that named it LSAT). */
  scheme: PaymentScheme;
  /** The schemes the server offered a challenge in that this client pays, L402 first. */
  offered: PaymentScheme[];
  /** Payment: the id of the challenge answered. */
  challengeId?: string;
  /** Payment: the server's Payment-Receipt, when it sent one for this payment. */
  serverReceipt?: ServerReceipt;
  /** Payment: why no serverReceipt, on an answer below 400: none sent, unreadable, or for another payment or challenge. */
  serverReceiptProblem?: string;
  /** A session deposit was paid by this call: `open` (the session opened with it) or `topUp`; the session is its payment hash for open. */
  session?: { action: 'open' | 'topUp'; sessionId: string };
  /** With `sessions` set, a session was offered and not used: why (the wallet cannot make a return invoice). The call paid per request. */
  sessionNotUsed?: string;
}

/** The receipt's former name, kept for existing code. */
export type L402Receipt = PaymentReceipt;

const DEFAULT_MAX_FEE_SATS = 10;
const DEFAULT_MAX_RETRY_AFTER_SECONDS = 10;
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_MAX_CHALLENGE_BYTES = 64 * 1024;
/** Paid requests sent again after a 503 with Retry-After, at most. */
const UNAVAILABLE_RETRIES = 2;

const receipts = new WeakMap<Response, PaymentReceipt>();

/** What the call that returned this response paid, in either scheme; undefined when it paid nothing (free, or served with a stored credential). */
export function getPaymentReceipt(response: Response): PaymentReceipt | undefined {
  return receipts.get(response);
}

/** The same as getPaymentReceipt (its former name). */
export function getL402Receipt(response: Response): PaymentReceipt | undefined {
  return receipts.get(response);
}

export async function fetchWithL402(input: string | URL | Request, init: RequestInit | undefined, options: FetchWithL402Options): Promise<Response> {
  checkOptions(options);
  const doFetch: Fetch = options.fetch ?? ((i, r) => globalThis.fetch(i, r));
  // The caller's own signal object, not the copy a Request makes of it: a copy follows its source only while its Request lives.
  const callerSignal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
  const send = (request: Request, authorization?: string) => sendOnce(doFetch, options, request, authorization, callerSignal ?? undefined);
  const request = new Request(input, init);
  const url = new URL(request.url);
  const store = options.tokens === false ? undefined : (options.tokens ?? defaultTokenStore);
  const key = tokenKey(url);
  const budget = options.budget;
  const events: ClientCall | undefined = options.onEvent
    ? clientCall(
        options.onEvent,
        options.events ?? {},
        request,
        budget && { spentMsat: () => budget.spent().totalMsat, leftMsat: () => budget.remainingMsat(url.host) },
      )
    : undefined;

  // 1. send: on the session held for this path (bearer), else with a stored credential when one is usable
  const maxChallengeBytes = options.maxChallengeBytes ?? DEFAULT_MAX_CHALLENGE_BYTES;
  const sessions = options.sessions && !request.headers.has('authorization') ? options.sessions : undefined;
  const held = sessions?.find(key);
  // The top-ups this call may still pay (a refusal for balance, and a metered stream's demands).
  const topUps: TopUpAllowance = { left: sessions?.maxTopUpsPerCall ?? 0 };
  let first: Response;
  if (held && sessions) {
    first = await send(request, bearerCredential(held));
    if (first.status !== 402) return watchStream(first, held, request, url, options, events, topUps);
    const refusal = await sessionRefusal(first, maxChallengeBytes);
    if (refusal === 'INSUFFICIENT_BALANCE') return topUpAndRetry(held, first, request, url, options, send, events, topUps);
    // Not found, or closed (idle, or by another client): forgotten, its deposits spent until the wallet sees its refund;
    // the 402 offers anew. Refused for any other reason: not replaced (a new deposit for a session the server will not
    // serve is how a hostile one drains a budget), the call fails with the server's reason, and the session stays held
    // (to be closed) but no longer serves this path: the next call here is sent unpaid and its offer decides.
    if (refusal === 'SESSION_NOT_FOUND' || refusal === 'SESSION_CLOSED') sessions.gone(held, `the server answered ${refusal} before it was closed`);
    else {
      sessions.unuse(key);
      discardBody(first.body);
      throw new L402ClientError(
        'SESSION_REFUSED',
        `Not paid: ${url.host} refused the session ${held.sessionId} (${refusal ?? 'no reason given'}); a new deposit is not paid for a session refused for a reason other than its balance`,
        { url: url.href, scheme: 'Payment', sessionId: held.sessionId, ...(refusal !== undefined && { serverCode: refusal }) },
      );
    }
  } else {
    const stored = store && !request.headers.has('authorization') ? usableCredential(store, key) : undefined;
    first = await send(request, stored?.authorization);
    if (stored && store) {
      if (first.status !== 402 && first.status !== 401) {
        if (first.status < 500) countUse(store, key, stored);
        return first;
      }
      store.delete(key); // refused: used up, expired, or not for this route any more
    }
  }
  if (first.status !== 402 && first.status !== 401) return first;

  // 2. challenge received
  const { offers, unsupported } = await readChallenges(first, maxChallengeBytes);
  let sessionNotUsed: string | undefined;
  const sessionOffer = sessions && first.status === 402 ? sessionOfferIn(first) : undefined;
  if (sessionOffer && sessions) {
    // A session held for what this offer is for (origin, realm, binding), opened by another call or for another path of
    // the same route, or one being opened: this call goes again on it (on a copy of the request, whose body is unread).
    const { realm, opaque } = sessionOffer.challenge;
    const forOffer = sessionKey(url.origin, realm, opaque ?? '');
    const usable = () => {
      const same = sessions.matching(url.origin, realm, opaque ?? '');
      return same && same !== held ? same : undefined;
    };
    let other = usable();
    const opening = other
      ? undefined
      : sessions.opening(forOffer, () => openSession(sessionOffer, sessions, first, request, url, options, send, events, offers, topUps));
    if (!opening) {
      if (!other) {
        await sessions.pendingOpen(forOffer);
        other = usable();
      }
      if (other) {
        sessions.use(key, other);
        discardBody(first.body);
        return fetchWithL402(request.clone(), callerSignal ? { signal: callerSignal } : undefined, options);
      }
    } else {
      const opened = await opening;
      if (opened.ok) return opened.response;
      sessionNotUsed = opened.why;
    }
  }
  if (offers.length === 0 && unsupported.length === 0) return first;
  discardBody(first.body);
  if (offers.length === 0) {
    // Only methods or intents this client does not pay (a card, another chain, a session): say so rather than hand back a 402.
    const error = new L402ClientError(
      'UNSUPPORTED_CHALLENGE',
      `Not paid: ${url.host} asks for payment only by ${unsupported.join(', ')}; this client pays L402 and Payment lightning/charge challenges` +
        (sessionNotUsed ? ` (and sessions, but ${sessionNotUsed})` : ''),
      { url: url.href, scheme: 'Payment', unsupported },
    );
    if (events) events.invoiceRefused(error.code, {}, events.challengeReceived({}));
    throw error;
  }

  // 3. choose an acceptable invoice, or refuse
  let chosen: Chosen;
  try {
    chosen = chooseOffer(offers, options, url);
  } catch (error) {
    if (events && error instanceof L402ClientError) {
      const facts = { ...error.details, invoice: offers[0]!.invoice };
      events.invoiceRefused(error.code, facts, events.challengeReceived(facts));
    }
    throw error;
  }
  const { offer } = chosen;
  const facts = { paymentHash: chosen.invoice.paymentHash, amountMsat: chosen.invoice.amountMsat, invoice: offer.invoice };
  let cause = events?.challengeReceived(facts);

  // 4. pay (at most once per invoice)
  const payStartedAt = events ? performance.now() : 0;
  let paid: { proof: Proof; paidByThisCall: boolean };
  try {
    paid = await payInvoice(offer.invoice, chosen.invoice, options, url.host);
  } catch (error) {
    if (events && error instanceof L402ClientError && error.refused) events.invoiceRefused(error.code, facts, cause!);
    throw error;
  }
  const { proof, paidByThisCall } = paid;
  if (events && paidByThisCall) cause = events.paymentSent({ ...facts, feeMsat: proof.feeMsat, payStartedAt }, cause!);

  // 5. retry with the credential
  const authorization =
    offer.scheme === 'L402' ? `${offer.challenge.scheme} ${offer.challenge.token}:${proof.preimage}` : formatCredential(offer.charge.challenge, proof.preimage);
  const retryStartedAt = events ? performance.now() : 0;
  let response: Response | undefined;
  try {
    response = await send(request, authorization);
    // Not served now, but the payment still holds (e.g. the server's replay store timed out): the same credential, after the wait asked.
    for (let again = 0; again < UNAVAILABLE_RETRIES; again++) {
      const waitSeconds = unavailableFor(response, options.maxRetryAfterSeconds ?? DEFAULT_MAX_RETRY_AFTER_SECONDS);
      if (waitSeconds === undefined) break;
      discardBody(response.body);
      await sleep(waitSeconds * 1000, request.signal);
      response = await send(request, authorization);
    }
  } finally {
    // Kept unless the server took or refused it (a 5xx gives the use back; no answer may have): the next call then pays nothing.
    // A Payment charge credential answers one challenge once: it is never kept.
    const keep = store && offer.scheme === 'L402' && keptCredential(authorization, offer.challenge.token, response?.status);
    if (keep) store!.set(key, keep);
  }
  events?.requestServed({ ...facts, status: response.status, retryStartedAt, paidByThisCall }, cause!);

  // 6. served
  receipts.set(response, {
    url: request.url,
    host: url.host,
    paymentHash: chosen.invoice.paymentHash,
    amountMsat: chosen.invoice.amountMsat,
    feeMsat: paidByThisCall ? proof.feeMsat : 0,
    paidByThisCall,
    scheme: offer.scheme,
    offered: (['L402', 'Payment'] as const).filter((scheme) => offers.some((o) => o.scheme === scheme)),
    ...(offer.scheme === 'Payment' && {
      challengeId: offer.charge.challenge.id,
      ...serverReceipt(response, offer.charge.challenge.id, chosen.invoice.paymentHash),
    }),
    ...(sessionNotUsed !== undefined && { sessionNotUsed }),
  });
  return response;
}

/** The answer's Payment-Receipt, taken only when it is for this payment (its reference the hash paid) and this challenge. */
function serverReceipt(response: Response, expectedChallengeId: string, paymentHash: string): Pick<PaymentReceipt, 'serverReceipt' | 'serverReceiptProblem'> {
  const header = response.headers.get(PAYMENT_RECEIPT_HEADER);
  if (header === null) return response.status < 400 ? { serverReceiptProblem: `the answer carries no ${PAYMENT_RECEIPT_HEADER}` } : {};
  const read = parseReceipt(header);
  if (!read.ok) return { serverReceiptProblem: read.detail };
  const { challengeId, reference, timestamp } = read.receipt;
  if (reference !== paymentHash) return { serverReceiptProblem: `the ${PAYMENT_RECEIPT_HEADER} is for another payment (reference ${reference})` };
  if (challengeId !== expectedChallengeId) return { serverReceiptProblem: `the ${PAYMENT_RECEIPT_HEADER} is for another challenge (${challengeId})` };
  return { serverReceipt: { challengeId, reference, timestamp } };
}

function checkOptions(options: FetchWithL402Options): void {
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

function sendOnce(
  doFetch: Fetch,
  options: FetchWithL402Options,
  request: Request,
  authorization: string | undefined,
  callerSignal?: AbortSignal,
): Promise<Response> {
  // A clone each time: the request (and its body) may have to go out twice.
  const attempt = request.clone();
  if (authorization) attempt.headers.set('authorization', authorization);
  const signal = deadline(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, callerSignal);
  return options.destinations ? fetchWithinPolicy(doFetch, attempt, options.destinations, signal) : doFetch(attempt, { signal });
}

/** Seconds to wait before sending a paid request again: its answer was 503 with a Retry-After of at most `maxSeconds`. */
function unavailableFor(response: Response, maxSeconds: number): number | undefined {
  if (response.status !== 503 || !(maxSeconds > 0)) return undefined;
  const header = response.headers.get('retry-after')?.trim();
  if (!header) return undefined;
  const seconds = /^\d+$/.test(header) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  const wait = Math.max(0, seconds);
  return wait <= maxSeconds ? wait : undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', abort, { once: true });
  });
}

/** A challenge this client can pay: an L402 one, or a Payment scheme Lightning charge. */
type Offer = { scheme: 'L402'; challenge: L402Challenge; invoice: string } | { scheme: 'Payment'; charge: LightningCharge; invoice: string };

async function readChallenges(response: Response, maxBytes: number): Promise<{ offers: Offer[]; unsupported: string[] }> {
  const header = response.headers.get('www-authenticate');
  const { charges, unsupported } = paymentCharges(header);
  const offers: Offer[] = [
    ...l402Challenges(header).map((challenge) => ({ scheme: 'L402' as const, challenge, invoice: challenge.invoice })),
    ...charges.map((charge) => ({ scheme: 'Payment' as const, charge, invoice: charge.invoice })),
  ];
  if (offers.length > 0 || response.status !== 402) return { offers, unsupported };
  // No readable header (a browser that was not allowed to see it): the body may carry the same facts.
  if (!/json/i.test(response.headers.get('content-type') ?? '')) return { offers, unsupported };
  // Read from a copy, so that a 402 returned as it is keeps its body; a body past the limit is no challenge.
  const body = await readBoundedText(response.clone().body, maxBytes);
  if (!body.ok) return { offers, unsupported };
  try {
    const fromBody = bodyChallenge(JSON.parse(body.text));
    return { offers: fromBody ? [{ scheme: 'L402', challenge: fromBody, invoice: fromBody.invoice }] : [], unsupported };
  } catch {
    return { offers, unsupported };
  }
}

interface Chosen {
  offer: Offer;
  invoice: DecodedInvoice & { amountMsat: number };
}

/**
 * The cheapest offer in the preferred scheme whose invoice passes every
 * check, else the cheapest in the other; or the first refusal (the preferred
 * scheme's first).
 */
function chooseOffer(offers: Offer[], options: FetchWithL402Options, url: URL): Chosen {
  const preferred: PaymentScheme = options.scheme ?? 'L402';
  const rank = (offer: Offer) => (offer.scheme === preferred ? 0 : 1);
  let refusal: L402ClientError | undefined;
  let best: Chosen | undefined;
  for (const offer of [...offers].sort((a, b) => rank(a) - rank(b))) {
    try {
      const invoice = acceptableInvoice(offer, options, url);
      if (!best || rank(offer) < rank(best.offer) || (rank(offer) === rank(best.offer) && invoice.amountMsat < best.invoice.amountMsat))
        best = { offer, invoice };
    } catch (error) {
      if (!(error instanceof L402ClientError)) throw error;
      refusal ??= error;
    }
  }
  if (best) return best;
  throw refusal!;
}

// The node key each host's invoices were signed with lately: the next invoice from that
// host is checked against it (cheaper than recovering the key; same result either way).
const payeeByHost = new Map<string, string>();
const PAYEE_HOSTS_MAX = 256;

function rememberPayee(host: string, payee: string): void {
  if (payeeByHost.get(host) !== payee) setNewest(payeeByHost, host, payee, PAYEE_HOSTS_MAX);
}

/** The Lightning method's network names (draft-lightning-charge) as BOLT 11 networks. */
const CHARGE_NETWORKS = { mainnet: 'bitcoin', regtest: 'regtest', signet: 'signet' } as const;

function acceptableInvoice(offer: Offer, options: FetchWithL402Options, url: URL): DecodedInvoice & { amountMsat: number } {
  const where = {
    url: url.href,
    scheme: offer.scheme === 'L402' ? offer.challenge.scheme : offer.scheme,
    ...(offer.scheme === 'Payment' && { challengeId: offer.charge.challenge.id }),
  };
  // draft-lightning-charge: the payer decodes the invoice itself and refuses a challenge whose convenience fields disagree with it.
  const disagree =
    offer.scheme === 'Payment'
      ? (invoice: DecodedInvoice) => {
          const { charge } = offer;
          return charge.paymentHash !== undefined && charge.paymentHash !== invoice.paymentHash
            ? `payment hash ${charge.paymentHash}, the invoice's is ${invoice.paymentHash}`
            : CHARGE_NETWORKS[charge.network] !== invoice.network
              ? `network ${charge.network}, the invoice is for ${invoice.network}`
              : invoice.amountMsat !== null && charge.amountSats * 1000 !== invoice.amountMsat
                ? `amount ${charge.amountSats} sats, the invoice asks ${invoice.amountMsat / 1000}`
                : undefined;
        }
      : undefined;
  const invoice = checkedInvoice(offer.invoice, options, url, where, {
    challengeExpiresAt: offer.scheme === 'Payment' ? offer.charge.expiresAt : undefined,
    maxSats: options.maxPriceSats,
    what: 'the invoice',
    disagree,
  });
  // A token that names a payment hash (this project's) must name this invoice's, or paying would buy nothing.
  const token = offer.scheme === 'L402' ? decodeToken(offer.challenge.token) : undefined;
  if (token && token.hash !== invoice.paymentHash) {
    const facts = { ...where, paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, network: invoice.network };
    throw new L402ClientError('TOKEN_INVOICE_MISMATCH', 'Not paid: the token in the challenge is for another payment than its invoice', facts);
  }
  return invoice;
}

interface InvoiceLimits {
  /** A Payment challenge's expiry, which may come before its invoice's: the earlier one counts. */
  challengeExpiresAt: number | undefined;
  /** The most it may ask, whole sats. */
  maxSats: number;
  /** What it is, in refusals: "the invoice", "the session deposit". */
  what: string;
  /** Why the challenge's own fields disagree with the invoice, if they do. */
  disagree?: (invoice: DecodedInvoice) => string | undefined;
}

/** The invoice decoded, its signature checked, and refused unless network, amount and expiry are within the caller's limits. */
function checkedInvoice(
  bolt11: string,
  options: FetchWithL402Options,
  url: URL,
  where: Record<string, unknown>,
  limits: InvoiceLimits,
): DecodedInvoice & { amountMsat: number } {
  let invoice: DecodedInvoice;
  try {
    invoice = decodeInvoice(bolt11.trim().replace(/^lightning:/i, ''), { expectedPayee: payeeByHost.get(url.host) });
  } catch (error) {
    if (error instanceof InvalidInvoice)
      throw new L402ClientError('INVOICE_INVALID', `Not paid: the server's invoice is not a valid BOLT11 invoice (${error.reason})`, where, { cause: error });
    throw error;
  }
  rememberPayee(url.host, invoice.payeeNodeKey);
  const { challengeExpiresAt } = limits;
  const expiresAt = challengeExpiresAt !== undefined && challengeExpiresAt < invoice.expiresAt ? challengeExpiresAt : invoice.expiresAt;
  const facts = { ...where, paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, network: invoice.network, expiresAt };
  const disagree = limits.disagree?.(invoice);
  if (disagree) throw new L402ClientError('CHALLENGE_INVOICE_MISMATCH', `Not paid: the Payment challenge says ${disagree}`, facts);
  const walletNetwork = options.network ?? options.wallet.network ?? 'bitcoin';
  if (invoice.network !== walletNetwork) {
    throw new L402ClientError('WRONG_NETWORK', `Not paid: the invoice is for ${invoice.network}, the wallet pays on ${walletNetwork}`, {
      ...facts,
      walletNetwork,
    });
  }
  if (invoice.amountMsat === null)
    throw new L402ClientError('INVOICE_WITHOUT_AMOUNT', 'Not paid: the invoice does not say how much (the price must be in the invoice)', facts);
  if (expiresAt <= Date.now() / 1000) {
    const what = expiresAt === invoice.expiresAt ? limits.what : 'the Payment challenge';
    throw new L402ClientError('INVOICE_EXPIRED', `Not paid: ${what} expired at ${new Date(expiresAt * 1000).toISOString()}`, facts);
  }
  const maxPriceMsat = limits.maxSats * 1000;
  if (invoice.amountMsat > maxPriceMsat) {
    throw new L402ClientError(
      'PRICE_ABOVE_MAXIMUM',
      `Not paid: ${limits.what} asks ${invoice.amountMsat / 1000} sats, above the maximum of ${limits.maxSats}`,
      { ...facts, maxPriceMsat },
    );
  }
  return invoice as DecodedInvoice & { amountMsat: number };
}

async function payInvoice(
  bolt11: string,
  invoice: DecodedInvoice & { amountMsat: number },
  options: FetchWithL402Options,
  host: string,
): Promise<{ proof: Proof; paidByThisCall: boolean }> {
  const { proof, first } = payOnce(
    invoice.paymentHash,
    invoice.expiresAt,
    async () => {
      // Runs synchronously up to the wallet call: the budget's check and charge are one step (createBudget).
      const reservation: BudgetReservation | undefined = options.budget?.reserve(host, invoice.amountMsat);
      try {
        const paid = await walletPayment(options, bolt11, invoice);
        reservation?.commit();
        return paid;
      } catch (error) {
        // Money that may have left stays counted; money that surely did not is given back.
        if (error instanceof L402ClientError && error.code === 'PAYMENT_FAILED') reservation?.release();
        else reservation?.commit();
        throw error;
      }
    },
    // Only a payment that surely did not happen may be tried again by a later call.
    (error) => error instanceof L402ClientError && (error.code === 'PAYMENT_FAILED' || error.code === 'BUDGET_EXCEEDED'),
  );
  return { proof: await proof, paidByThisCall: first };
}

async function walletPayment(options: FetchWithL402Options, bolt11: string, invoice: DecodedInvoice): Promise<Proof> {
  const facts = { paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat };
  let answer: { preimage: string; feeMsat?: number };
  try {
    answer = await options.wallet.payInvoice({ invoice: bolt11, maxFeeMsat: (options.maxFeeSats ?? DEFAULT_MAX_FEE_SATS) * 1000 });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (outcomeUnknown(error))
      throw new L402ClientError('PAYMENT_OUTCOME_UNKNOWN', `The wallet could not say whether it paid: ${message}`, facts, { cause: error });
    throw new L402ClientError('PAYMENT_FAILED', `The wallet did not pay: ${message}`, facts, { cause: error });
  }
  const preimage = typeof answer?.preimage === 'string' ? answer.preimage.toLowerCase() : '';
  if (!isPreimageOf(preimage, invoice.paymentHash)) {
    throw new L402ClientError('PREIMAGE_MISMATCH', 'The wallet answered a preimage that does not match the invoice; it was not used', facts);
  }
  const feeMsat = Number.isSafeInteger(answer.feeMsat) && answer.feeMsat! >= 0 ? answer.feeMsat! : 0;
  return { preimage, feeMsat };
}

// Prepaid sessions (docs/sessions.md "On the wire: the session intent"): open, bearer, topUp, close.

type Send = (request: Request, authorization?: string) => Promise<Response>;

/** The deposit's check: the same as a charge's invoice, against maxDepositSats, and the offer's own fields must agree with the invoice. */
function checkedDeposit(offer: LightningSessionOffer, sessions: ClientSessions, options: FetchWithL402Options, url: URL) {
  const where = { url: url.href, scheme: 'Payment', challengeId: offer.challenge.id };
  if (offer.unitPriceSats > options.maxPriceSats) {
    throw new L402ClientError(
      'PRICE_ABOVE_MAXIMUM',
      `Not paid: the session's unit costs ${offer.unitPriceSats} sats, above the maximum of ${options.maxPriceSats}`,
      { ...where, maxPriceMsat: options.maxPriceSats * 1000 },
    );
  }
  return checkedInvoice(offer.depositInvoice, options, url, where, {
    challengeExpiresAt: offer.expiresAt,
    maxSats: sessions.maxDepositSats ?? options.maxPriceSats * DEFAULT_DEPOSIT_UNITS,
    what: 'the session deposit',
    disagree: (invoice) =>
      offer.paymentHash !== invoice.paymentHash
        ? `payment hash ${offer.paymentHash}, the invoice's is ${invoice.paymentHash}`
        : offer.depositSats !== undefined && invoice.amountMsat !== null && offer.depositSats * 1000 !== invoice.amountMsat
          ? `a deposit of ${offer.depositSats} sats, the invoice asks ${invoice.amountMsat / 1000}`
          : undefined,
  });
}

/** The maximum deposit when createSessions names none: this many times maxPriceSats (the draft's recommended deposit). */
const DEFAULT_DEPOSIT_UNITS = 20;

/**
 * How long a return invoice may be paid: a week. A server closes an idle
 * session and pays its refund on the next touch or on its sweep, which may
 * run only daily (a Vercel Hobby cron), and gives up a refund whose return
 * invoice has expired; an hour (wallets' usual default) would lose it. A week
 * is also the longest the dev node makes; longer would keep the wallet's
 * invoice open for little gain.
 */
const RETURN_INVOICE_EXPIRY_SECONDS = 7 * 24 * 3600;

/** The first readable Lightning session offer in a 402's Payment challenges (of `realm`, when given). */
function sessionOfferIn(response: Response, realm?: string): LightningSessionOffer | undefined {
  const { challenges } = parsePaymentChallenges(response.headers.get('www-authenticate'));
  for (const challenge of challenges) {
    if (realm !== undefined && challenge.realm !== realm) continue;
    const read = readLightningSession(challenge);
    if (read.ok) return read.session;
  }
  return undefined;
}

const bearerCredential = (held: HeldSession) =>
  formatSessionCredential(held.challenge, { action: 'bearer', sessionId: held.sessionId, preimage: held.preimage });

/** Why a 402 refused a session request, as the seller's code (INSUFFICIENT_BALANCE, SESSION_NOT_FOUND, SESSION_CLOSED, WRONG_ROUTE, …). Reads a copy of the body. */
async function sessionRefusal(response: Response, maxBytes: number): Promise<string | undefined> {
  const body = await readBoundedText(response.clone().body, maxBytes);
  if (!body.ok) return undefined;
  try {
    const json = JSON.parse(body.text) as { code?: unknown; type?: unknown };
    if (typeof json.code === 'string') return json.code;
    const type = typeof json.type === 'string' ? json.type : '';
    if (type.endsWith('lightning/insufficient-balance')) return 'INSUFFICIENT_BALANCE';
    if (type.endsWith('lightning/session-not-found')) return 'SESSION_NOT_FOUND';
    if (type.endsWith('lightning/session-closed')) return 'SESSION_CLOSED';
    return undefined;
  } catch {
    return undefined;
  }
}

/** Pays a deposit (budget charged, at most once per invoice), with its events; throws as a charge's payment does. */
async function payDeposit(
  offer: LightningSessionOffer,
  invoice: DecodedInvoice & { amountMsat: number },
  options: FetchWithL402Options,
  url: URL,
  events: ClientCall | undefined,
): Promise<{ proof: Proof; paidByThisCall: boolean; facts: { paymentHash: string; amountMsat: number; invoice: string }; cause?: string }> {
  const facts = { paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, invoice: offer.depositInvoice };
  let cause = events?.challengeReceived(facts);
  const payStartedAt = events ? performance.now() : 0;
  try {
    const { proof, paidByThisCall } = await payInvoice(offer.depositInvoice, invoice, options, url.host);
    if (events && paidByThisCall) cause = events.paymentSent({ ...facts, feeMsat: proof.feeMsat, payStartedAt }, cause!);
    return { proof, paidByThisCall, facts, ...(cause !== undefined && { cause }) };
  } catch (error) {
    if (events && error instanceof L402ClientError && error.refused) events.invoiceRefused(error.code, facts, cause!);
    throw error;
  }
}

/**
 * Opens a session on the offer: a return invoice from the wallet first (a
 * wallet that cannot make one pays nothing here: `ok: false` says why, and
 * the call pays per request), then the deposit checked and paid, then `open`.
 */
async function openSession(
  offer: LightningSessionOffer,
  sessions: ClientSessions,
  challenged: Response,
  request: Request,
  url: URL,
  options: FetchWithL402Options,
  send: Send,
  events: ClientCall | undefined,
  offers: Offer[],
  topUps: TopUpAllowance,
): Promise<{ ok: true; response: Response } | { ok: false; why: string }> {
  const { wallet } = options;
  if (typeof wallet.createInvoice !== 'function')
    return { ok: false, why: 'the wallet cannot make an invoice without an amount (no createInvoice) for the refund' };
  // Checked before anything is asked of the wallet: an offer refused here throws, and nothing is paid.
  let invoice: DecodedInvoice & { amountMsat: number };
  try {
    invoice = checkedDeposit(offer, sessions, options, url);
  } catch (error) {
    if (events && error instanceof L402ClientError) events.invoiceRefused(error.code, { invoice: offer.depositInvoice }, events.challengeReceived({}));
    throw error;
  }
  let returnInvoice: { invoice: string; paymentHash: string };
  try {
    returnInvoice = await newReturnInvoice(wallet, url);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // The backend cannot (LNbits, NWC), as against could not this time: said as plainly as a wallet without createInvoice.
    if (isAmountlessInvoiceUnsupported(error)) {
      const { backend, reason } = error as { backend?: unknown; reason?: unknown };
      const why = typeof backend === 'string' && typeof reason === 'string' ? `${backend}: ${reason}` : message;
      return { ok: false, why: `the wallet cannot make an invoice without an amount for the refund (${why})` };
    }
    return { ok: false, why: `the wallet could not make a return invoice (${message})` };
  }
  discardBody(challenged.body);
  const { proof, paidByThisCall, facts, cause } = await payDeposit(offer, invoice, options, url, events);
  if (paidByThisCall) sessions.paid(sessionPayment('open', offer.paymentHash, url, invoice, proof));
  const retryStartedAt = events ? performance.now() : 0;
  const { response, answer } = await sendOpen(offer, invoice, proof.preimage, returnInvoice, request, url, options, send, events, topUps);
  if (events && cause !== undefined) events.requestServed({ ...facts, status: response.status, retryStartedAt, paidByThisCall }, cause);
  receipts.set(
    answer,
    depositReceipt(request, url, offer, invoice, proof, paidByThisCall, {
      offered: (['L402', 'Payment'] as const).filter((scheme) => scheme === 'Payment' || offers.some((o) => o.scheme === scheme)),
      ...serverReceipt(response, offer.challenge.id, invoice.paymentHash),
      session: { action: 'open', sessionId: offer.paymentHash },
    }),
  );
  return { ok: true, response: answer };
}

/** A return invoice from the wallet: without an amount (the server names the refund), payable for a week. */
function newReturnInvoice(wallet: Wallet, url: URL): Promise<{ invoice: string; paymentHash: string }> {
  return wallet.createInvoice!({ memo: `refund of a prepaid session at ${url.host}`, expirySeconds: RETURN_INVOICE_EXPIRY_SECONDS });
}

/**
 * Sends `open` with a paid deposit (the challenge it was offered in echoed)
 * and a return invoice; a server that took it (an answer other than 400,
 * 401, 402) opened the session before its handler ran: held from then on.
 * `answer` is the response to hand on (a stream watched for top-ups).
 */
async function sendOpen(
  offer: LightningSessionOffer,
  invoice: DecodedInvoice & { amountMsat: number },
  preimage: string,
  returnInvoice: { invoice: string; paymentHash: string },
  request: Request,
  url: URL,
  options: FetchWithL402Options,
  send: Send,
  events: ClientCall | undefined,
  topUps: TopUpAllowance,
): Promise<{ response: Response; answer: Response; held?: HeldSession }> {
  const response = await send(request, formatSessionCredential(offer.challenge, { action: 'open', preimage, returnInvoice: returnInvoice.invoice }));
  // 400, 401, 402: not opened (the deposit is then the server's to account for, and stays spent here).
  if (response.status === 400 || response.status === 401 || response.status === 402) return { response, answer: response };
  const held = heldSession(offer, preimage, invoice.amountMsat, returnInvoice.paymentHash, request, url, options);
  options.sessions!.hold(held, tokenKey(url));
  return { response, answer: watchStream(response, held, request, url, options, events, topUps), held };
}

/** What a call may still pay in top-ups (createSessions' maxTopUpsPerCall, counted down). */
interface TopUpAllowance {
  left: number;
}

/** Takes one top-up from the call's allowance, or throws TOP_UP_REFUSED (nothing paid) when none is left. */
function takeTopUp(topUps: TopUpAllowance, sessions: ClientSessions, held: HeldSession, url: URL): void {
  if (topUps.left <= 0) {
    throw new L402ClientError(
      'TOP_UP_REFUSED',
      `Not paid: one call may pay at most ${sessions.maxTopUpsPerCall} top-ups (createSessions' maxTopUpsPerCall), and ${url.host} asked for another`,
      { url: url.href, scheme: 'Payment', sessionId: held.sessionId },
    );
  }
  topUps.left--;
}

function sessionPayment(
  action: SessionPayment['action'],
  sessionId: string,
  url: URL,
  invoice: DecodedInvoice & { amountMsat: number },
  proof: Proof,
): SessionPayment {
  return { action, origin: url.origin, sessionId, paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, feeMsat: proof.feeMsat };
}

/** A 402 for balance on a held session: a fresh deposit of the same realm paid as topUp, then the request sent again once with bearer. */
async function topUpAndRetry(
  held: HeldSession,
  refusal: Response,
  request: Request,
  url: URL,
  options: FetchWithL402Options,
  send: Send,
  events: ClientCall | undefined,
  topUps: TopUpAllowance,
): Promise<Response> {
  const sessions = options.sessions!;
  const offer = sessionOfferIn(refusal, held.realm);
  if (!offer) return refusal; // no deposit offered to top up with: the refusal as it is
  const invoice = checkedDeposit(offer, sessions, options, url);
  takeTopUp(topUps, sessions, held, url);
  discardBody(refusal.body);
  const { proof, paidByThisCall, facts, cause } = await payDeposit(offer, invoice, options, url, events);
  if (paidByThisCall) sessions.paid(sessionPayment('topUp', held.sessionId, url, invoice, proof));
  const credited = await send(request, formatSessionCredential(offer.challenge, { action: 'topUp', sessionId: held.sessionId, topUpPreimage: proof.preimage }));
  if (!credited.ok) {
    const opened = await notCredited(credited, held, offer, invoice, proof.preimage, request, url, options, send, events, topUps);
    if (events && cause !== undefined) events.requestServed({ ...facts, status: opened.response.status, retryStartedAt: 0, paidByThisCall }, cause);
    receipts.set(
      opened.answer,
      depositReceipt(request, url, offer, invoice, proof, paidByThisCall, { offered: ['Payment'], session: { action: 'open', sessionId: offer.paymentHash } }),
    );
    return opened.answer;
  }
  discardBody(credited.body);
  held.depositedMsat += invoice.amountMsat;
  const retryStartedAt = events ? performance.now() : 0;
  const response = watchStream(await send(request, bearerCredential(held)), held, request, url, options, events, topUps);
  if (events && cause !== undefined) events.requestServed({ ...facts, status: response.status, retryStartedAt, paidByThisCall }, cause);
  receipts.set(
    response,
    depositReceipt(request, url, offer, invoice, proof, paidByThisCall, { offered: ['Payment'], session: { action: 'topUp', sessionId: held.sessionId } }),
  );
  return response;
}

/**
 * A top-up paid and not credited. The session closed meanwhile (or the
 * server no longer knows it): it is forgotten (its refund looked for at
 * closeAll), and the paid top-up opens a new session for the request, its
 * own challenge echoed, with a fresh return invoice, so it is not paid for
 * nothing (`answer`). A server that will not take it that way, or a refusal
 * for another reason, throws TOP_UP_NOT_CREDITED: the payment stays spent.
 */
async function notCredited(
  credited: Response,
  held: HeldSession,
  offer: LightningSessionOffer,
  invoice: DecodedInvoice & { amountMsat: number },
  preimage: string,
  request: Request,
  url: URL,
  options: FetchWithL402Options,
  send: Send,
  events: ClientCall | undefined,
  topUps: TopUpAllowance,
): Promise<{ response: Response; answer: Response }> {
  const sessions = options.sessions!;
  const code = credited.status === 402 ? await sessionRefusal(credited, DEFAULT_MAX_CHALLENGE_BYTES) : undefined;
  discardBody(credited.body);
  const paid = `${invoice.amountMsat / 1000} sats paid as a top-up of session ${held.sessionId}`;
  const details = { url: url.href, scheme: 'Payment', paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, sessionId: held.sessionId };
  if (code !== 'SESSION_CLOSED' && code !== 'SESSION_NOT_FOUND') {
    throw new L402ClientError('TOP_UP_NOT_CREDITED', `${paid} were not credited (${code ?? `HTTP ${credited.status}`}): the payment stays counted as spent`, {
      ...details,
      ...(code !== undefined && { serverCode: code }),
    });
  }
  sessions.gone(held, `the server answered ${code} to a top-up before it was closed`);
  let returnInvoice: { invoice: string; paymentHash: string };
  try {
    returnInvoice = await newReturnInvoice(options.wallet, url);
  } catch (error) {
    throw new L402ClientError(
      'TOP_UP_NOT_CREDITED',
      `${paid} were not credited (${code}), and the wallet could not make a return invoice to open a session with them (${error instanceof Error ? error.message : String(error)}): the payment stays counted as spent`,
      { ...details, serverCode: code },
    );
  }
  const opened = await sendOpen(offer, invoice, preimage, returnInvoice, request, url, options, send, events, topUps);
  if (!opened.held) {
    const refusedBecause = opened.response.status === 402 ? await sessionRefusal(opened.response, DEFAULT_MAX_CHALLENGE_BYTES) : undefined;
    discardBody(opened.response.body);
    throw new L402ClientError(
      'TOP_UP_NOT_CREDITED',
      `${paid} were not credited (${code}), and ${url.host} refused to open a session with them (${refusedBecause ?? `HTTP ${opened.response.status}`}): the payment stays counted as spent`,
      { ...details, serverCode: refusedBecause ?? code },
    );
  }
  return opened;
}

/** The receipt of a call that paid a session's deposit (open) or a top-up: the payment, and what `rest` says of the session. */
function depositReceipt(
  request: Request,
  url: URL,
  offer: LightningSessionOffer,
  invoice: DecodedInvoice & { amountMsat: number },
  proof: Proof,
  paidByThisCall: boolean,
  rest: Pick<PaymentReceipt, 'offered' | 'session'> & Partial<PaymentReceipt>,
): PaymentReceipt {
  return {
    url: request.url,
    host: url.host,
    paymentHash: invoice.paymentHash,
    amountMsat: invoice.amountMsat,
    feeMsat: paidByThisCall ? proof.feeMsat : 0,
    paidByThisCall,
    scheme: 'Payment',
    challengeId: offer.challenge.id,
    ...rest,
  };
}

/**
 * The session as the store holds it. Its close sends `close` on the request
 * that opened it, then looks in the wallet for the refund: only what the
 * wallet received on the return invoice is credited back to the budget (at
 * most what was paid in), whatever the close answer says.
 */
function heldSession(
  offer: LightningSessionOffer,
  preimage: string,
  depositMsat: number,
  returnPaymentHash: string,
  request: Request,
  url: URL,
  options: FetchWithL402Options,
): HeldSession {
  const doFetch: Fetch = options.fetch ?? ((i, r) => globalThis.fetch(i, r));
  let closing: Promise<ClosedSession> | undefined;
  let credited: Promise<RefundSeen> | undefined;
  /** Looks for the refund (once per session: a refund is credited once) and credits what the wallet received. */
  const refund = (waitMs: number) =>
    (credited ??= (async () => {
      const seen = await seeRefund(options.wallet, returnPaymentHash, waitMs);
      const creditMsat = Math.min(seen.receivedMsat, session.depositedMsat);
      return { ...seen, creditedMsat: creditMsat > 0 ? (options.budget?.credit?.(url.host, creditMsat) ?? 0) : 0 };
    })());
  const session: HeldSession = {
    origin: url.origin,
    realm: offer.challenge.realm,
    sessionId: offer.paymentHash,
    preimage,
    binding: offer.challenge.opaque ?? '',
    challenge: offer.challenge,
    unitPriceSats: offer.unitPriceSats,
    depositedMsat: depositMsat,
    returnPaymentHash,
    close() {
      closing ??= (async (): Promise<ClosedSession> => {
        options.sessions?.forget(session);
        const base = { origin: session.origin, realm: session.realm, sessionId: session.sessionId };
        const authorization = formatSessionCredential(session.challenge, { action: 'close', sessionId: session.sessionId, preimage });
        let answer: Response;
        try {
          answer = await sendOnce(doFetch, options, request, authorization);
        } catch (error) {
          return { ...base, status: 0, ...(await refund(0)), error: `no answer to close: ${error instanceof Error ? error.message : String(error)}` };
        }
        const body = await readBoundedText(answer.body, DEFAULT_MAX_CHALLENGE_BYTES);
        let json: { refundSats?: unknown; refundStatus?: unknown; detail?: unknown } = {};
        try {
          json = body.ok ? JSON.parse(body.text) : {};
        } catch {}
        if (!answer.ok)
          return { ...base, status: answer.status, ...(await refund(0)), error: typeof json.detail === 'string' ? json.detail : `HTTP ${answer.status}` };
        const refundSats = typeof json.refundSats === 'number' && json.refundSats >= 0 ? json.refundSats : undefined;
        const refundStatus =
          json.refundStatus === 'succeeded' || json.refundStatus === 'failed' || json.refundStatus === 'skipped' ? json.refundStatus : undefined;
        // Waited for only when the server says it paid something (then it has settled at the wallet already, bookkeeping aside);
        // a refund due or failed is looked for once, not waited for.
        const said = refundStatus === 'succeeded' && (refundSats ?? 0) > 0;
        const seen = await refund(said ? (options.sessions?.refundWaitMs ?? 0) : 0);
        return {
          ...base,
          status: answer.status,
          ...(refundSats !== undefined && { refundSats }),
          ...(refundStatus !== undefined && { refundStatus }),
          ...seen,
        };
      })();
      return closing;
    },
    async settle(why) {
      return { origin: session.origin, realm: session.realm, sessionId: session.sessionId, status: 0, ...(await refund(0)), error: why };
    },
  };
  return session;
}

/** What the wallet saw of a session's refund, and what of it was credited. */
interface RefundSeen {
  refundSeen: boolean;
  receivedMsat: number;
  creditedMsat: number;
  refundUnconfirmed?: string;
}

/**
 * Whether the wallet received a refund on its return invoice, and how much:
 * looked up until it is settled or `waitMs` has passed (at least once). A
 * wallet without lookupInvoice, a look-up that fails, or an invoice not paid
 * in time: not seen, and `refundUnconfirmed` says which.
 */
async function seeRefund(wallet: Wallet, paymentHash: string, waitMs: number): Promise<Omit<RefundSeen, 'creditedMsat'>> {
  const unseen = (why: string) => ({ refundSeen: false, receivedMsat: 0, refundUnconfirmed: `${why}: the refund stays counted as spent` });
  if (typeof wallet.lookupInvoice !== 'function') return unseen('the wallet cannot say what it received (no lookupInvoice)');
  const until = Date.now() + waitMs;
  let pauseMs = 100;
  for (;;) {
    let failure: string | undefined;
    try {
      const status = await wallet.lookupInvoice(paymentHash);
      const received = status?.amountReceivedMsat;
      if (status?.settled && Number.isSafeInteger(received) && received! >= 0) return { refundSeen: true, receivedMsat: received! };
      if (status === null) failure = 'the wallet does not know the return invoice';
    } catch (error) {
      failure = `the wallet could not look up the return invoice (${error instanceof Error ? error.message : String(error)})`;
    }
    if (Date.now() + pauseMs > until)
      return unseen(failure ?? (waitMs > 0 ? `the wallet had not received it ${waitMs / 1000} s after the close` : 'the wallet had not received it'));
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    pauseMs = Math.min(pauseMs * 2, 1000);
  }
}

/** The longest line of a watched stream kept whole to be read; past it, the rest of that line passes unread. */
const MAX_WATCHED_LINE = 4096;

/**
 * A Server-Sent Events answer served from a session, passed on byte for byte
 * as it arrives, read on the way for `event: payment-need-topup` (the server
 * holds the stream until the balance is topped up, sessions.md "The metering
 * seam, and streams"): one top-up at a time is paid, as for a call refused for
 * balance, and the server's held stream resumes by itself. A demand is
 * refused unpaid (TOP_UP_REFUSED) when no chunk (a message event with data)
 * has arrived since this stream's last top-up (a server asking again without
 * delivering), or when the call has paid its maxTopUpsPerCall. A top-up not
 * made (refused, too dear, over budget, the wallet failed) ends the stream at
 * once, once what came before it has been read: the reader gets the error
 * (an L402ClientError for a refusal or a failed payment), the server's
 * stream is cancelled (it would only be held until its timeout), and
 * `held.topUpError` says why. Any other answer is returned as it is.
 */
function watchStream(
  response: Response,
  held: HeldSession,
  request: Request,
  url: URL,
  options: FetchWithL402Options,
  events: ClientCall | undefined,
  topUps: TopUpAllowance,
): Response {
  if (!response.body || !/^text\/event-stream/i.test(response.headers.get('content-type') ?? '')) return response;
  const upstream = response.body.getReader();
  let toppingUp: Promise<void> | undefined;
  let failed: { error: unknown } | undefined;
  let topUpFailed: (failure: { error: unknown }) => void = () => {};
  const stopped = new Promise<{ error: unknown }>((resolve) => {
    topUpFailed = resolve;
  });
  const fail = (error: unknown) => {
    held.topUpError = error instanceof Error ? error.message : String(error);
    failed = { error };
    topUpFailed(failed);
  };
  let toppedUp = 0; // top-ups this stream paid
  let chunksSinceTopUp = 0;
  const demanded = () => {
    if (toppingUp || failed) return;
    if (toppedUp > 0 && chunksSinceTopUp === 0) {
      return fail(
        new L402ClientError(
          'TOP_UP_REFUSED',
          `Not paid: ${url.host} asked for another top-up of session ${held.sessionId} before sending a chunk for the last one`,
          { url: url.href, scheme: 'Payment', sessionId: held.sessionId },
        ),
      );
    }
    try {
      takeTopUp(topUps, options.sessions!, held, url);
    } catch (error) {
      return fail(error);
    }
    toppedUp++;
    chunksSinceTopUp = 0;
    toppingUp = topUpForStream(held, request, url, options, events)
      .then(() => {
        held.topUpError = undefined;
      }, fail)
      .finally(() => {
        toppingUp = undefined;
      });
  };
  const scan = sseEvents((name, hasData) => {
    if (name === 'payment-need-topup') demanded();
    else if ((name === '' || name === 'message') && hasData) chunksSinceTopUp++;
  });
  const stop = async (controller: ReadableStreamDefaultController<Uint8Array>, error: unknown) => {
    controller.error(error);
    await upstream.cancel(error).catch(() => {});
  };
  // Pulled only as the caller reads (no queue of its own), so a failed top-up is raised after every byte before it was read.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (failed) return stop(controller, failed.error);
        const read = upstream.read();
        // Raced only while a top-up is under way (each race leaves a reaction on `stopped` until it settles).
        const next = toppingUp ? await Promise.race([read, stopped]) : await read;
        if (!('done' in next)) return stop(controller, next.error);
        if (next.done) return controller.close();
        controller.enqueue(next.value);
        scan(next.value);
      },
      cancel: (reason) => upstream.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Feeds `onEvent` each Server-Sent Event of a byte stream given in chunks, as
 * it is dispatched (at its blank line): its name ('' when unnamed) and
 * whether it carried data. Lines are read up to MAX_WATCHED_LINE characters;
 * the rest of a longer one passes unread (a field name is at its start).
 */
function sseEvents(onEvent: (name: string, hasData: boolean) => void): (chunk: Uint8Array) => void {
  let name = '';
  let hasData = false;
  return sseLines((raw) => {
    const line = raw.replace(/\r$/, '');
    if (line === '') {
      if (name !== '' || hasData) onEvent(name, hasData);
      name = '';
      hasData = false;
      return;
    }
    if (line.startsWith(':')) return; // a comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field === 'event') name = line.slice(colon + 1).replace(/^ /, '');
    else if (field === 'data') hasData = true;
  });
}

/** Feeds `onLine` each whole line of a byte stream given in chunks, cut at MAX_WATCHED_LINE characters. */
function sseLines(onLine: (line: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  let line = '';
  return (chunk) => {
    const parts = decoder.decode(chunk, { stream: true }).split('\n');
    for (let i = 0; i < parts.length; i++) {
      if (line.length < MAX_WATCHED_LINE) line += parts[i]!.slice(0, MAX_WATCHED_LINE - line.length);
      if (i < parts.length - 1) {
        onLine(line);
        line = '';
      }
    }
  };
}

/**
 * A fresh 402's deposit for the held session's realm, checked and paid,
 * presented as topUp (without the caller's signal: the stream may outlive
 * it). Not credited: TOP_UP_NOT_CREDITED (a stream held on a closed session
 * cannot be moved to a new one: opening one would run the request again).
 */
async function topUpForStream(held: HeldSession, request: Request, url: URL, options: FetchWithL402Options, events: ClientCall | undefined): Promise<void> {
  const doFetch: Fetch = options.fetch ?? ((i, r) => globalThis.fetch(i, r));
  const sessions = options.sessions!;
  const fresh = await sendOnce(doFetch, options, request, undefined);
  const offer = fresh.status === 402 ? sessionOfferIn(fresh, held.realm) : undefined;
  discardBody(fresh.body);
  if (!offer) throw new Error(`no session deposit offered to top up with (HTTP ${fresh.status})`);
  const invoice = checkedDeposit(offer, sessions, options, url);
  const { proof, paidByThisCall } = await payDeposit(offer, invoice, options, url, events);
  if (paidByThisCall) sessions.paid(sessionPayment('topUp', held.sessionId, url, invoice, proof));
  const credited = await sendOnce(
    doFetch,
    options,
    request,
    formatSessionCredential(offer.challenge, { action: 'topUp', sessionId: held.sessionId, topUpPreimage: proof.preimage }),
  );
  if (credited.ok) {
    discardBody(credited.body);
    held.depositedMsat += invoice.amountMsat;
    return;
  }
  const code = credited.status === 402 ? await sessionRefusal(credited, DEFAULT_MAX_CHALLENGE_BYTES) : undefined;
  discardBody(credited.body);
  if (code === 'SESSION_CLOSED' || code === 'SESSION_NOT_FOUND') sessions.gone(held, `the server answered ${code} to a top-up before it was closed`);
  throw new L402ClientError(
    'TOP_UP_NOT_CREDITED',
    `${invoice.amountMsat / 1000} sats paid as a top-up of session ${held.sessionId} were not credited (${code ?? `HTTP ${credited.status}`}): the payment stays counted as spent`,
    {
      url: url.href,
      scheme: 'Payment',
      paymentHash: invoice.paymentHash,
      amountMsat: invoice.amountMsat,
      sessionId: held.sessionId,
      ...(code !== undefined && { serverCode: code }),
    },
  );
}
