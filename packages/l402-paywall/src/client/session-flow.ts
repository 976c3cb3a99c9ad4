// Prepaid sessions from the paying side (docs/sessions.md "On the wire: the
// session intent"): a 402's session offer opened (deposit checked and paid,
// a return invoice from the wallet), requests sent on it with `bearer`, a
// refusal for balance or a metered stream's demand answered with `topUp`.
// Where sessions are kept, and closed, is sessions.ts; a held one's close is
// held-session.ts; a stream's reading is stream-watcher.ts.
import type { ClientCall } from '../events/client.js';
import { discardBody } from '../http/discard-body.js';
import { readBoundedText } from '../http/read-bounded.js';
import { parsePaymentChallenges } from '../schemes/payment/challenge.js';
import { formatSessionCredential, readLightningSession, type LightningSessionOffer } from '../schemes/session/codec.js';
import { isAmountlessInvoiceUnsupported, L402ClientError } from './errors.js';
import { heldSession, httpClose } from './held-session.js';
import { checkedInvoice, type CheckedInvoice } from './invoice-check.js';
import type { Offer } from './offers.js';
import { DEFAULT_MAX_CHALLENGE_BYTES, type FetchWithL402Options, type Wallet } from './options.js';
import { payInvoice } from './paying.js';
import type { Proof } from './proofs.js';
import { depositReceipt, recordReceipt, serverReceipt } from './receipts.js';
import type { Send } from './send.js';
import type { ClientSessions, HeldSession, SessionPayment } from './sessions.js';
import { watchStream } from './stream-watcher.js';
import { tokenKey } from './tokens.js';

/** One fetchWithL402 call that may use sessions, as its session steps see it. */
export interface SessionCall {
  request: Request;
  url: URL;
  options: FetchWithL402Options;
  sessions: ClientSessions;
  /** Sends the request, within the caller's signal. */
  send: Send;
  /** Sends the request without the caller's signal: a stream's top-ups, which may outlive the call. */
  sendDetached: Send;
  events: ClientCall | undefined;
  /** The top-ups this call may still pay (a refusal for balance, and a metered stream's demands), counted down. */
  topUps: { left: number };
}

/** What the deposit steps need of a call: the same whether it is an HTTP request (fetchWithL402) or a tool call (mcp-session.ts). */
export type DepositCall = Pick<SessionCall, 'options' | 'url' | 'sessions' | 'events' | 'topUps'>;

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
export function sessionOfferIn(response: Response, realm?: string): LightningSessionOffer | undefined {
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

/**
 * Sends the call on the session held for its path (bearer). Served, or
 * topped up and served: `served`. Not found, or closed (idle, or by another
 * client): forgotten, its deposits spent until the wallet sees its refund,
 * and the 402 offers anew (`offersAnew`). Refused for any other reason: not
 * replaced (a new deposit for a session the server will not serve is how a
 * hostile one drains a budget), the call fails with the server's reason, and
 * the session stays held (to be closed) but no longer serves this path: the
 * next call here is sent unpaid and its offer decides.
 */
export async function sendOnHeld(call: SessionCall, held: HeldSession): Promise<{ served: Response } | { offersAnew: Response }> {
  const { sessions, url } = call;
  const first = await call.send(call.request, bearerCredential(held));
  if (first.status !== 402) return { served: watchHeld(call, held, first) };
  const refusal = await sessionRefusal(first, call.options.maxChallengeBytes ?? DEFAULT_MAX_CHALLENGE_BYTES);
  if (refusal === 'INSUFFICIENT_BALANCE') return { served: await topUpAndRetry(call, held, first) };
  if (refusal === 'SESSION_NOT_FOUND' || refusal === 'SESSION_CLOSED') {
    sessions.gone(held, `the server answered ${refusal} before it was closed`);
    return { offersAnew: first };
  }
  sessions.unuse(tokenKey(url));
  discardBody(first.body);
  throw new L402ClientError(
    'SESSION_REFUSED',
    `Not paid: ${url.host} refused the session ${held.sessionId} (${refusal ?? 'no reason given'}); a new deposit is not paid for a session refused for a reason other than its balance`,
    { url: url.href, scheme: 'Payment', sessionId: held.sessionId, ...(refusal !== undefined && { serverCode: refusal }) },
  );
}

/** The deposit's check: the same as a charge's invoice, against maxDepositSats, and the offer's own fields must agree with the invoice. */
export function checkedDeposit(call: DepositCall, offer: LightningSessionOffer): CheckedInvoice {
  const { options, url } = call;
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
    maxSats: call.sessions.maxDepositSats ?? options.maxPriceSats * DEFAULT_DEPOSIT_UNITS,
    what: 'the session deposit',
    disagree: (invoice) =>
      offer.paymentHash !== invoice.paymentHash
        ? `payment hash ${offer.paymentHash}, the invoice's is ${invoice.paymentHash}`
        : offer.depositSats !== undefined && invoice.amountMsat !== null && offer.depositSats * 1000 !== invoice.amountMsat
          ? `a deposit of ${offer.depositSats} sats, the invoice asks ${invoice.amountMsat / 1000}`
          : undefined,
  });
}

export interface DepositPaid {
  proof: Proof;
  paidByThisCall: boolean;
  facts: { paymentHash: string; amountMsat: number; invoice: string };
  /** The event that caused what follows (payment.sent, else challenge.received), when events are on. */
  cause?: string;
}

/** Pays a deposit (budget charged, at most once per invoice), with its events; throws as a charge's payment does. */
export async function payDeposit(call: DepositCall, offer: LightningSessionOffer, invoice: CheckedInvoice): Promise<DepositPaid> {
  const { events } = call;
  const facts = { paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, invoice: offer.depositInvoice };
  let cause = events?.challengeReceived(facts);
  const payStartedAt = events ? performance.now() : 0;
  try {
    const { proof, paidByThisCall } = await payInvoice(offer.depositInvoice, invoice, call.options, call.url.host);
    if (events && paidByThisCall) cause = events.paymentSent({ ...facts, feeMsat: proof.feeMsat, payStartedAt }, cause!);
    return { proof, paidByThisCall, facts, ...(cause !== undefined && { cause }) };
  } catch (error) {
    if (events && error instanceof L402ClientError && error.refused) events.invoiceRefused(error.code, facts, cause!);
    throw error;
  }
}

export function sessionPayment(action: SessionPayment['action'], sessionId: string, url: URL, invoice: CheckedInvoice, proof: Proof): SessionPayment {
  return { action, origin: url.origin, sessionId, paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, feeMsat: proof.feeMsat };
}

/**
 * Opens a session on the offer: a return invoice from the wallet first (a
 * wallet that cannot make one pays nothing here: `ok: false` says why, and
 * the call pays per request), then the deposit checked and paid, then `open`.
 */
export async function openSession(
  call: SessionCall,
  offer: LightningSessionOffer,
  challenged: Response,
  offers: Offer[],
): Promise<{ ok: true; response: Response } | { ok: false; why: string }> {
  const { options, events, request, url } = call;
  const { wallet } = options;
  if (typeof wallet.createInvoice !== 'function')
    return { ok: false, why: 'the wallet cannot make an invoice without an amount (no createInvoice) for the refund' };
  // Checked before anything is asked of the wallet: an offer refused here throws, and nothing is paid.
  let invoice: CheckedInvoice;
  try {
    invoice = checkedDeposit(call, offer);
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
  const { proof, paidByThisCall, facts, cause } = await payDeposit(call, offer, invoice);
  if (paidByThisCall) call.sessions.paid(sessionPayment('open', offer.paymentHash, url, invoice, proof));
  const retryStartedAt = events ? performance.now() : 0;
  const { response, answer } = await sendOpen(call, offer, invoice, proof.preimage, returnInvoice);
  if (events && cause !== undefined) events.requestServed({ ...facts, status: response.status, retryStartedAt, paidByThisCall }, cause);
  recordReceipt(
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
export function newReturnInvoice(wallet: Wallet, url: URL): Promise<{ invoice: string; paymentHash: string }> {
  return wallet.createInvoice!({ memo: `refund of a prepaid session at ${url.host}`, expirySeconds: RETURN_INVOICE_EXPIRY_SECONDS });
}

/**
 * Sends `open` with a paid deposit (the challenge it was offered in echoed)
 * and a return invoice; a server that took it (an answer other than 400,
 * 401, 402) opened the session before its handler ran: held from then on.
 * `answer` is the response to hand on (a stream watched for top-ups).
 */
async function sendOpen(
  call: SessionCall,
  offer: LightningSessionOffer,
  invoice: CheckedInvoice,
  preimage: string,
  returnInvoice: { invoice: string; paymentHash: string },
): Promise<{ response: Response; answer: Response; held?: HeldSession }> {
  const { request, url } = call;
  const response = await call.send(request, formatSessionCredential(offer.challenge, { action: 'open', preimage, returnInvoice: returnInvoice.invoice }));
  // 400, 401, 402: not opened (the deposit is then the server's to account for, and stays spent here).
  if (response.status === 400 || response.status === 401 || response.status === 402) return { response, answer: response };
  const held = heldSession(
    offer,
    preimage,
    invoice.amountMsat,
    returnInvoice.paymentHash,
    httpClose(offer.challenge, request, call.options),
    url,
    call.options,
  );
  call.sessions.hold(held, tokenKey(url));
  return { response, answer: watchHeld(call, held, response), held };
}

/** A response served from a held session, its stream (if it is one) watched for top-up demands, each paid as this call's. */
function watchHeld(call: SessionCall, held: HeldSession, response: Response): Response {
  return watchStream(response, held, call.url, () => {
    takeTopUp(call, held);
    return topUpForStream(call, held);
  });
}

/** Takes one top-up from the call's allowance, or throws TOP_UP_REFUSED (nothing paid) when none is left. */
export function takeTopUp(call: DepositCall, held: HeldSession): void {
  const { topUps, url } = call;
  if (topUps.left <= 0) {
    throw new L402ClientError(
      'TOP_UP_REFUSED',
      `Not paid: one call may pay at most ${call.sessions.maxTopUpsPerCall} top-ups (createSessions' maxTopUpsPerCall), and ${url.host} asked for another`,
      { url: url.href, scheme: 'Payment', sessionId: held.sessionId },
    );
  }
  topUps.left--;
}

/** Pays a checked top-up deposit and presents it as `topUp` of the held session; a credited one counts in its deposits. */
async function payTopUp(
  call: SessionCall,
  held: HeldSession,
  offer: LightningSessionOffer,
  invoice: CheckedInvoice,
  send: Send,
): Promise<DepositPaid & { credited: Response }> {
  const paid = await payDeposit(call, offer, invoice);
  if (paid.paidByThisCall) call.sessions.paid(sessionPayment('topUp', held.sessionId, call.url, invoice, paid.proof));
  const credited = await send(
    call.request,
    formatSessionCredential(offer.challenge, { action: 'topUp', sessionId: held.sessionId, topUpPreimage: paid.proof.preimage }),
  );
  if (credited.ok) {
    discardBody(credited.body);
    held.depositedMsat += invoice.amountMsat;
  }
  return { ...paid, credited };
}

/**
 * A paid top-up's refusal read: a session the server closed or forgot
 * meanwhile is forgotten here too (its refund looked for at closeAll) and
 * its code answered; any other refusal throws TOP_UP_NOT_CREDITED (the
 * payment stays spent).
 */
async function refusedTopUp(
  call: SessionCall,
  held: HeldSession,
  invoice: CheckedInvoice,
  credited: Response,
): Promise<'SESSION_CLOSED' | 'SESSION_NOT_FOUND'> {
  const code = credited.status === 402 ? await sessionRefusal(credited, DEFAULT_MAX_CHALLENGE_BYTES) : undefined;
  discardBody(credited.body);
  if (code !== 'SESSION_CLOSED' && code !== 'SESSION_NOT_FOUND') throw notCredited(call, held, invoice, code ?? `HTTP ${credited.status}`, code);
  call.sessions.gone(held, `the server answered ${code} to a top-up before it was closed`);
  return code;
}

/** TOP_UP_NOT_CREDITED: `why` in its message (after the reason given), `serverCode` the server's code when it gave one. */
export function notCredited(
  call: DepositCall,
  held: HeldSession,
  invoice: CheckedInvoice,
  reason: string,
  serverCode: string | undefined,
  why = '',
): L402ClientError {
  return new L402ClientError(
    'TOP_UP_NOT_CREDITED',
    `${invoice.amountMsat / 1000} sats paid as a top-up of session ${held.sessionId} were not credited (${reason})${why}: the payment stays counted as spent`,
    {
      url: call.url.href,
      scheme: 'Payment',
      paymentHash: invoice.paymentHash,
      amountMsat: invoice.amountMsat,
      sessionId: held.sessionId,
      ...(serverCode !== undefined && { serverCode }),
    },
  );
}

/**
 * A fresh 402's deposit for the held session's realm, checked and paid,
 * presented as topUp (without the caller's signal: the stream may outlive
 * it). Not credited: TOP_UP_NOT_CREDITED (a stream held on a closed session
 * cannot be moved to a new one: opening one would run the request again).
 */
async function topUpForStream(call: SessionCall, held: HeldSession): Promise<void> {
  const fresh = await call.sendDetached(call.request);
  const offer = fresh.status === 402 ? sessionOfferIn(fresh, held.realm) : undefined;
  discardBody(fresh.body);
  if (!offer) throw new Error(`no session deposit offered to top up with (HTTP ${fresh.status})`);
  const invoice = checkedDeposit(call, offer);
  const { credited } = await payTopUp(call, held, offer, invoice, call.sendDetached);
  if (credited.ok) return;
  const code = await refusedTopUp(call, held, invoice, credited);
  throw notCredited(call, held, invoice, code, code);
}

/** A 402 for balance on a held session: a fresh deposit of the same realm paid as topUp, then the request sent again once with bearer. */
async function topUpAndRetry(call: SessionCall, held: HeldSession, refusal: Response): Promise<Response> {
  const { events, request, url } = call;
  const offer = sessionOfferIn(refusal, held.realm);
  if (!offer) return refusal; // no deposit offered to top up with: the refusal as it is
  const invoice = checkedDeposit(call, offer);
  takeTopUp(call, held);
  discardBody(refusal.body);
  const { proof, paidByThisCall, facts, cause, credited } = await payTopUp(call, held, offer, invoice, call.send);
  const served = (response: Response, retryStartedAt: number) => {
    if (events && cause !== undefined) events.requestServed({ ...facts, status: response.status, retryStartedAt, paidByThisCall }, cause);
  };
  if (!credited.ok) {
    const opened = await openWithTopUp(call, held, offer, invoice, proof.preimage, credited);
    served(opened.response, 0);
    recordReceipt(
      opened.answer,
      depositReceipt(request, url, offer, invoice, proof, paidByThisCall, { offered: ['Payment'], session: { action: 'open', sessionId: offer.paymentHash } }),
    );
    return opened.answer;
  }
  const retryStartedAt = events ? performance.now() : 0;
  const response = watchHeld(call, held, await call.send(request, bearerCredential(held)));
  served(response, retryStartedAt);
  recordReceipt(
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
async function openWithTopUp(
  call: SessionCall,
  held: HeldSession,
  offer: LightningSessionOffer,
  invoice: CheckedInvoice,
  preimage: string,
  credited: Response,
): Promise<{ response: Response; answer: Response }> {
  const code = await refusedTopUp(call, held, invoice, credited);
  let returnInvoice: { invoice: string; paymentHash: string };
  try {
    returnInvoice = await newReturnInvoice(call.options.wallet, call.url);
  } catch (error) {
    throw notCredited(
      call,
      held,
      invoice,
      code,
      code,
      `, and the wallet could not make a return invoice to open a session with them (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const opened = await sendOpen(call, offer, invoice, preimage, returnInvoice);
  if (!opened.held) {
    const refusedBecause = opened.response.status === 402 ? await sessionRefusal(opened.response, DEFAULT_MAX_CHALLENGE_BYTES) : undefined;
    discardBody(opened.response.body);
    throw notCredited(
      call,
      held,
      invoice,
      code,
      refusedBecause ?? code,
      `, and ${call.url.host} refused to open a session with them (${refusedBecause ?? `HTTP ${opened.response.status}`})`,
    );
  }
  return opened;
}
