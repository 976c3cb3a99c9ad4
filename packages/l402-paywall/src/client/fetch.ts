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
//                    (offers.ts, invoice-check.ts)
//   4. pay           budget charged, invoice paid at most once per wallet,
//                    SHA256(preimage) checked against the payment hash (paying.ts)
//   5. retry         once, with Authorization: L402 <token>:<preimage>, or
//                    Payment <credential> (single-use: never kept for reuse)
//   6. served        the answer, with a receipt of what was paid (and the
//                    server's Payment-Receipt, checked against the payment) (receipts.ts)
// A prepaid session offered, held or running low is session-flow.ts's.
import { clientCall, type ClientCall } from '../events/client.js';
import { discardBody } from '../http/discard-body.js';
import { formatCredential } from '../schemes/payment/credential.js';
import { L402ClientError } from './errors.js';
import { offeredSchemes, readChallenges } from './offers.js';
import { checkOptions, DEFAULT_MAX_CHALLENGE_BYTES, DEFAULT_MAX_RETRY_AFTER_SECONDS, type FetchWithL402Options } from './options.js';
import { chooseAndPay } from './paying.js';
import { recordReceipt, serverReceipt } from './receipts.js';
import { fetchOf, sendOnce, sleep, unavailableFor, type Send } from './send.js';
import { openSession, sendOnHeld, sessionOfferIn, type SessionCall } from './session-flow.js';
import { sessionKey } from './sessions.js';
import { countUse, keptCredential, tokenKey, usableCredential } from './tokens.js';
import { memoryOf } from './wallet-memory.js';

/** Paid requests sent again after a 503 with Retry-After, at most. */
const UNAVAILABLE_RETRIES = 2;

export async function fetchWithL402(input: string | URL | Request, init: RequestInit | undefined, options: FetchWithL402Options): Promise<Response> {
  checkOptions(options);
  const doFetch = fetchOf(options);
  // The caller's own signal object, not the copy a Request makes of it: a copy follows its source only while its Request lives.
  const callerSignal = init?.signal ?? (input instanceof Request ? input.signal : undefined);
  const send: Send = (request, authorization) => sendOnce(doFetch, options, request, authorization, callerSignal ?? undefined);
  const request = new Request(input, init);
  const url = new URL(request.url);
  const store = options.tokens === false ? undefined : (options.tokens ?? memoryOf(options.wallet).tokens);
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
  const sessionCall: SessionCall | undefined = sessions && {
    request,
    url,
    options,
    sessions,
    send,
    sendDetached: (request, authorization) => sendOnce(doFetch, options, request, authorization),
    events,
    topUps: { left: sessions.maxTopUpsPerCall },
  };
  const held = sessions?.find(key);
  let first: Response;
  if (held && sessionCall) {
    const onHeld = await sendOnHeld(sessionCall, held);
    if ('served' in onHeld) return onHeld.served;
    first = onHeld.offersAnew;
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
  if (sessionOffer && sessions && sessionCall) {
    // A session held for what this offer is for (origin, realm, binding), opened by another call or for another path of
    // the same route, or one being opened: this call goes again on it (on a copy of the request, whose body is unread).
    const { realm, opaque } = sessionOffer.challenge;
    const forOffer = sessionKey(url.origin, realm, opaque ?? '');
    const usable = () => {
      const same = sessions.matching(url.origin, realm, opaque ?? '');
      return same && same !== held ? same : undefined;
    };
    let other = usable();
    const opening = other ? undefined : sessions.opening(forOffer, () => openSession(sessionCall, sessionOffer, first, offers));
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

  // 3. choose an acceptable invoice, or refuse; 4. pay (at most once per invoice)
  const { chosen, facts, proof, paidByThisCall, cause } = await chooseAndPay(offers, options, url, events);
  const { offer } = chosen;

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
  if (cause !== undefined) events?.requestServed({ ...facts, status: response.status, retryStartedAt, paidByThisCall }, cause);

  // 6. served
  recordReceipt(response, {
    url: request.url,
    host: url.host,
    paymentHash: chosen.invoice.paymentHash,
    amountMsat: chosen.invoice.amountMsat,
    feeMsat: paidByThisCall ? proof.feeMsat : 0,
    paidByThisCall,
    scheme: offer.scheme,
    offered: offeredSchemes(offers),
    ...(offer.scheme === 'Payment' && {
      challengeId: offer.charge.challenge.id,
      ...serverReceipt(response, offer.charge.challenge.id, chosen.invoice.paymentHash),
    }),
    ...(sessionNotUsed !== undefined && { sessionNotUsed }),
  });
  return response;
}
