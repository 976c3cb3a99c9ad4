// Paying the refunds of closed sessions: what was paid in and not spent goes
// back to the client's return invoice, exactly once, and a refund that fails
// is tried again with backoff until it is paid or given up for a stated
// reason, never forgotten (docs/sessions.md).
//
// Exactly once rests on two things: the ledger lets one attempt at a time take
// a refund (a lease), and an attempt that follows another first asks the
// backend whether the return invoice was paid already (an earlier attempt may
// have paid and then lost its answer, or died before recording it). An
// invoice can be paid only once anyway; the look-up is what keeps the ledger
// true to it.
import { InvalidInvoice, decodeInvoice } from '../../lightning/bolt11.js';
import { PaymentFailed, ProviderConfigError, ProviderUnsupported, type LightningProvider } from '../../lightning/provider.js';
import type { RefundClaim, RefundOutcome, SessionLedger, SessionRecord } from './ledger.js';
import { tell, type SessionClosed, type SessionObserver, type SessionRefunded } from './observer.js';

/** What paying refunds needs of a backend. */
export type RefundingProvider = LightningProvider & Required<Pick<LightningProvider, 'payAmountlessInvoice'>>;

export interface RefundOptions {
  ledger: SessionLedger;
  provider: LightningProvider;
  /**
   * The routing fee a refund may cost at most, given the refund due: charged
   * to the refund, which is paid less this limit, so the service never pays
   * out more than it owes. Default: 1% of the refund rounded up to a whole
   * sat, at least 1 sat. Not asked of a backend whose payments cost no
   * routing fee (`noRoutingFee`, the dev node): its refunds are paid whole.
   */
  maxFeeMsat?: (amountMsat: number) => number;
  /** How long an attempt holds a refund; default 60 s (a payment's own timeout must be shorter). */
  leaseMs?: number;
  /** Wait before attempt `attempt + 1` after a failure; default 30 s doubling, at most an hour. */
  backoffMs?: (attempt: number) => number;
  /**
   * Attempts before a refund is given up (stays visible, with the last
   * error); default 12. An attempt that finds an earlier payment still in
   * flight does not count, and a refund whose payment may be in flight (the
   * backend says so, or its outcome is unknown) is never given up.
   */
  maxAttempts?: number;
  now?: () => number;
  /**
   * Told of each refund attempt's outcome (`refunded`) and of each idle
   * session closeIdleSessions closes (`closed`): the operator's records and
   * audit events (observer.ts). Pass the same observer as lightningSessions'
   * onSession, so refunds paid by the cron are seen as those paid at close.
   */
  onSession?: SessionObserver;
  /** Where a failing onSession is reported; default console.error. */
  onError?: (error: unknown, context: string) => void;
}

export interface RefundReport {
  id: string;
  /** What this call did: paid it, found it paid by an earlier attempt, failed (to be retried), gave it up, or found nothing to do. */
  result: 'paid' | 'found-paid' | 'failed' | 'given-up' | 'not-due';
  /** The refund due: what was paid in and not spent. */
  amountMsat?: number;
  /** What the return invoice is (or was) paid when that is less than the refund: the refund less the routing fee limit charged to it (refundPayment). Absent when the whole refund is sent. */
  sentMsat?: number;
  detail?: string;
}

/** How a refund is paid: what is sent to the return invoice, and the routing fee the backend may spend on top, together never more than the refund. */
export interface RefundPayment {
  sendMsat: number;
  maxFeeMsat: number;
}

/**
 * What a refund of `amountMsat` sends, and the fee limit it is sent with.
 * The fee is charged to the refund: a return invoice routed through the
 * client's own channel would otherwise collect the fee the service paid on
 * top. What is kept back is the fee limit rounded up to a whole sat, so a
 * refund of whole sats stays whole for backends that pay whole sats only
 * (Phoenixd, Blink). A backend whose payments cost no routing fee
 * (`noRoutingFee`) sends the whole refund with a limit of 0. `sendMsat` is 0
 * when the refund does not cover its fee limit.
 */
export function refundPayment(
  provider: Pick<LightningProvider, 'noRoutingFee'>,
  amountMsat: number,
  maxFeeMsat?: (amountMsat: number) => number,
): RefundPayment {
  if (provider.noRoutingFee === true) return { sendMsat: amountMsat, maxFeeMsat: 0 };
  const limit = (maxFeeMsat ?? defaultMaxFee)(amountMsat);
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new RangeError(`a refund's routing fee limit must be a whole number of millisatoshis, 0 or more, not ${limit}`);
  const keptBack = Math.ceil(limit / 1000) * 1000;
  return { sendMsat: Math.max(0, amountMsat - keptBack), maxFeeMsat: limit };
}

/** Whether sessions can be refunded through `provider`: it pays invoices without an amount. */
export function canRefund(provider: LightningProvider): provider is RefundingProvider {
  return typeof provider.payAmountlessInvoice === 'function';
}

/** Takes the session's refund if it is due and pays it (the close path calls this at once; the sweeper for the rest). */
export async function refundSession(options: RefundOptions, id: string): Promise<RefundReport> {
  const { ledger, provider } = options;
  if (!canRefund(provider)) throw new TypeError(`The ${provider.name} backend cannot pay invoices without an amount, so it cannot refund sessions`);
  const now = options.now ?? Date.now;
  const claim = await ledger.claimRefund(id, now(), options.leaseMs ?? 60_000);
  if (!claim) return { id, result: 'not-due' };
  const { outcome, report } = await attempt(provider, claim, options, now);
  const settled = await ledger.settleRefund(id, claim.attempt, outcome, now());
  // Stale: the lease ran out during the attempt and another took the refund; its look-up will see this payment.
  if (!settled.ok)
    return { id, result: 'failed', amountMsat: claim.amountMsat, detail: 'the attempt outlived its lease; the next one checks the backend first' };
  tell(options.onSession, refundedObservation(claim, outcome, report.sentMsat, now()), options.onError);
  return report;
}

/** Pays every refund due (and retries failed ones whose time has come), at most `limit`; what the cron calls. */
export async function refundDue(options: RefundOptions, limit = 50): Promise<RefundReport[]> {
  const ids = await options.ledger.refundsDue((options.now ?? Date.now)(), limit);
  const reports: RefundReport[] = [];
  for (const id of ids) reports.push(await refundSession(options, id));
  return reports;
}

/** Closes the sessions idle past their timeout, at most `limit`, and pays their refunds. */
export async function closeIdleSessions(options: RefundOptions, limit = 50): Promise<RefundReport[]> {
  const now = options.now ?? Date.now;
  const reports: RefundReport[] = [];
  for (const id of await options.ledger.idleSessions(now(), limit)) {
    const closed = await options.ledger.close(id, 'idle', now());
    if (!closed.ok) continue;
    tell(options.onSession, closedObservation(closed.session), options.onError);
    reports.push(await refundSession(options, id));
  }
  return reports;
}

/** A session the ledger has just closed, as observed. */
export function closedObservation(record: SessionRecord): SessionClosed {
  return {
    type: 'closed',
    sessionId: record.id,
    because: record.closedBecause ?? 'client',
    paidMsat: record.paidMsat,
    spentMsat: record.spentMsat,
    refundMsat: record.refund?.amountMsat ?? 0,
    at: record.closedAt ?? Date.now(),
  };
}

function refundedObservation(claim: RefundClaim, outcome: RefundOutcome, sentMsat: number | undefined, at: number): SessionRefunded {
  const base = {
    type: 'refunded' as const,
    sessionId: claim.id,
    amountMsat: claim.amountMsat,
    ...(sentMsat !== undefined && { sentMsat }),
    attempt: claim.attempt,
    at,
  };
  if (outcome.paid) return { ...base, state: 'paid' };
  if ('givenUp' in outcome) return { ...base, state: 'given-up', reason: outcome.givenUp };
  return { ...base, state: 'failed', error: outcome.error, retryAt: outcome.retryAt };
}

async function attempt(
  provider: RefundingProvider,
  claim: RefundClaim,
  options: RefundOptions,
  now: () => number,
): Promise<{ outcome: RefundOutcome; report: RefundReport }> {
  const { id, amountMsat } = claim;
  const payment = refundPayment(provider, amountMsat, options.maxFeeMsat);
  const sent = { amountMsat, ...(payment.sendMsat !== amountMsat && { sentMsat: payment.sendMsat }) };
  const giveUp = (reason: string) => ({
    outcome: { paid: false as const, givenUp: reason },
    report: { id, result: 'given-up' as const, ...sent, detail: reason },
  });
  /**
   * Not paid this time. Given up only when the backend's word is that the
   * refund is not paid (`definite`) and the attempts that could have paid
   * have run out: while its payment may be in flight (the backend says so, or
   * the outcome is unknown), giving it up would invite the operator to pay
   * it by hand a second time. An attempt that only found a payment in flight
   * (`inFlight`) is not counted.
   */
  const retry = (error: string, why: 'definite' | 'unknown' | 'inFlight') => {
    const counted = claim.attempt - claim.inFlightChecks;
    if (why === 'definite' && counted >= (options.maxAttempts ?? 12)) return giveUp(`not paid after ${counted} attempts; the last: ${error}`);
    const retryAt = now() + (options.backoffMs ?? defaultBackoff)(claim.attempt);
    return {
      outcome: { paid: false as const, error, retryAt, ...(why === 'inFlight' && { inFlight: true }) },
      report: { id, result: 'failed' as const, ...sent, detail: error },
    };
  };
  let invoice;
  try {
    invoice = decodeInvoice(claim.returnInvoice);
  } catch (error) {
    if (error instanceof InvalidInvoice) return giveUp(`the return invoice cannot be paid: ${error.message}`);
    throw error;
  }
  // An earlier attempt may have paid: the backend says, before anything is paid again.
  if (claim.attempt > 1 || claim.uncertain) {
    try {
      const earlier = await provider.lookupPayment(invoice.paymentHash);
      if (earlier?.state === 'succeeded') return { outcome: { paid: true }, report: { id, result: 'found-paid', ...sent } };
      if (earlier?.state === 'pending') return retry('an earlier attempt is still in flight', 'inFlight');
    } catch (error) {
      return retry(`the backend could not say whether an earlier attempt paid: ${message(error)}`, 'unknown');
    }
  }
  if (invoice.expiresAt * 1000 <= now()) return giveUp('the return invoice expired before the refund could be paid');
  if (payment.sendMsat === 0)
    return giveUp(`the refund (${amountMsat} msat) does not cover the routing fee limit charged to it (${payment.maxFeeMsat} msat): nothing is left to send`);
  try {
    await provider.payAmountlessInvoice({ invoice: claim.returnInvoice, amountMsat: payment.sendMsat, maxFeeMsat: payment.maxFeeMsat });
    return { outcome: { paid: true }, report: { id, result: 'paid', ...sent } };
  } catch (error) {
    // Refused by the backend: definitely not paid. Anything else: the outcome is unknown, and the next attempt looks it up first.
    if (definitelyNotPaid(error)) return retry(error.message, 'definite');
    return retry(`outcome unknown: ${message(error)}`, 'unknown');
  }
}

/** Errors by which a backend says it did not pay (provider.ts): safe to give up on, once the attempts have run out. */
const definitelyNotPaid = (error: unknown): error is Error =>
  error instanceof PaymentFailed || error instanceof ProviderConfigError || error instanceof ProviderUnsupported;

// 1% rounded up to a whole sat, at least 1 sat: a whole-sat refund less it stays whole.
const defaultMaxFee = (amountMsat: number) => Math.max(1000, Math.ceil(amountMsat / 100_000) * 1000);
const defaultBackoff = (attempt: number) => Math.min(30_000 * 2 ** (attempt - 1), 3600_000);
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
