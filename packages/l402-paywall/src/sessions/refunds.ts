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
import { InvalidInvoice, decodeInvoice } from '../lightning/bolt11.js';
import { PaymentFailed, type LightningProvider } from '../lightning/provider.js';
import type { RefundClaim, RefundOutcome, SessionLedger, SessionRecord } from './ledger.js';
import { tell, type SessionClosed, type SessionObserver, type SessionRefunded } from './observer.js';

/** What paying refunds needs of a backend. */
export type RefundingProvider = LightningProvider & Required<Pick<LightningProvider, 'payAmountlessInvoice'>>;

export interface RefundOptions {
  ledger: SessionLedger;
  provider: LightningProvider;
  /** Routing fee the service may spend on a refund (the client gets the whole refund); default 1% of it, at least 1 sat. */
  maxFeeMsat?: (amountMsat: number) => number;
  /** How long an attempt holds a refund; default 60 s (a payment's own timeout must be shorter). */
  leaseMs?: number;
  /** Wait before attempt `attempt + 1` after a failure; default 30 s doubling, at most an hour. */
  backoffMs?: (attempt: number) => number;
  /** Attempts before a refund is given up (stays visible, with the last error); default 12. */
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
  amountMsat?: number;
  detail?: string;
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
  tell(options.onSession, refundedObservation(claim, outcome, now()), options.onError);
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

function refundedObservation(claim: RefundClaim, outcome: RefundOutcome, at: number): SessionRefunded {
  const base = { type: 'refunded' as const, sessionId: claim.id, amountMsat: claim.amountMsat, attempt: claim.attempt, at };
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
  const giveUp = (reason: string) => ({
    outcome: { paid: false as const, givenUp: reason },
    report: { id, result: 'given-up' as const, amountMsat, detail: reason },
  });
  const retry = (error: string) => {
    if (claim.attempt >= (options.maxAttempts ?? 12)) return giveUp(`not paid after ${claim.attempt} attempts; the last: ${error}`);
    const retryAt = now() + (options.backoffMs ?? defaultBackoff)(claim.attempt);
    return { outcome: { paid: false as const, error, retryAt }, report: { id, result: 'failed' as const, amountMsat, detail: error } };
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
      if (earlier?.state === 'succeeded') return { outcome: { paid: true }, report: { id, result: 'found-paid', amountMsat } };
      if (earlier?.state === 'pending') return retry('an earlier attempt is still in flight');
    } catch (error) {
      return retry(`the backend could not say whether an earlier attempt paid: ${message(error)}`);
    }
  }
  if (invoice.expiresAt * 1000 <= now()) return giveUp('the return invoice expired before the refund could be paid');
  try {
    await provider.payAmountlessInvoice({ invoice: claim.returnInvoice, amountMsat, maxFeeMsat: (options.maxFeeMsat ?? defaultMaxFee)(amountMsat) });
    return { outcome: { paid: true }, report: { id, result: 'paid', amountMsat } };
  } catch (error) {
    // PaymentFailed: definitely not paid. Anything else: the outcome is unknown, and the next attempt looks it up first.
    return retry(error instanceof PaymentFailed ? error.message : `outcome unknown: ${message(error)}`);
  }
}

const defaultMaxFee = (amountMsat: number) => Math.max(1000, Math.floor(amountMsat / 100));
const defaultBackoff = (attempt: number) => Math.min(30_000 * 2 ** (attempt - 1), 3600_000);
const message = (error: unknown) => (error instanceof Error ? error.message : String(error));
