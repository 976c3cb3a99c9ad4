// What happens to a session's money, told to the operator as it happens
// (`onSession` of lightningSessions and of RefundOptions): a deposit and each
// top-up received, a top-up refused (its session's refund had started), units
// spent (in batches), the close, and each refund attempt's outcome. The payment log and the audit events are built from these
// (docs/sessions.md "Watching sessions"). No preimage and no secret is ever in
// an observation: the session's id is the deposit's payment hash, public.
//
// Amounts are integer millisatoshis; `at` is unix milliseconds.
import type { RefundState } from './ledger.js';

/** A deposit paid and a session opened with it. */
export interface SessionOpened {
  type: 'opened';
  sessionId: string;
  route: string;
  /** The deposit: the session's first payment, by its payment hash (the session's id). */
  depositMsat: number;
  unitPriceMsat: number;
  at: number;
}

/** A top-up paid. Credited to the session, or (`closed`) folded into the refund of a session closed meanwhile. */
export interface SessionToppedUp {
  type: 'topped-up';
  sessionId: string;
  route: string;
  /** The top-up invoice's payment hash: a payment of its own. */
  paymentHash: string;
  amountMsat: number;
  /** The session was closed when it was paid: the amount goes back with the refund. */
  closed: boolean;
  at: number;
}

/**
 * A top-up paid for a session whose refund had already started (being paid,
 * paid, or given up): refused and not taken. The ledger recorded nothing and
 * the payment's replay claim was given back, so the payment is still the
 * client's: it can open a session (or top up another) with it while its
 * challenge lasts. Not revenue; told so the operator sees the client was
 * turned away, and can settle by hand a payment that is never used.
 */
export interface SessionTopUpRefused {
  type: 'topup-refused';
  sessionId: string;
  route: string;
  /** The top-up invoice's payment hash. */
  paymentHash: string;
  amountMsat: number;
  /** Where the session's refund stood: `paying`, `paid` or `given-up`. */
  refundState: Extract<RefundState, 'paying' | 'paid' | 'given-up'>;
  at: number;
}

/**
 * Units spent, in a batch: all a served request spent (its own unit, and what
 * its handler metered) once the answer has gone out, or once a metered stream
 * ends; a long stream also reports every `SPENT_BATCH_UNITS` units, and when
 * it pauses for a top-up. `spentMsat` and `paidMsat` are the session's totals
 * after the batch, so a reader can apply batches in any order, or twice.
 */
export interface SessionSpent {
  type: 'spent';
  sessionId: string;
  route: string;
  units: number;
  amountMsat: number;
  spentMsat: number;
  paidMsat: number;
  /**
   * The batch ends with work metered by reported usage (meterByUsage): what
   * was reserved and used, what was charged, and whether it was settled to
   * the usage reported or `reservation` (charged whole: no usage reported,
   * the upstream failed, the client hung up, or the session closed meanwhile).
   */
  metered?: {
    reservedUnits: number;
    usedUnits?: number;
    chargedUnits: number;
    settledAt: 'usage' | 'reservation';
    reason?: string;
  };
  at: number;
}

/** The session closed: by the client, or by the server after it was idle too long. */
export interface SessionClosed {
  type: 'closed';
  sessionId: string;
  /** The route, when the close came through it (not when closeIdleSessions closed it: the ledger keeps no route). */
  route?: string;
  because: 'client' | 'idle';
  paidMsat: number;
  spentMsat: number;
  /** What goes back to the client (paid in and not spent); 0 when nothing is left. */
  refundMsat: number;
  at: number;
}

/** One refund attempt's outcome: paid, failed (tried again at `retryAt`), or given up for `reason`. */
export interface SessionRefunded {
  type: 'refunded';
  sessionId: string;
  /** As for SessionClosed: absent when the cron paid it. */
  route?: string;
  state: 'paid' | 'failed' | 'given-up';
  /** The refund due. */
  amountMsat: number;
  /** What the return invoice is paid, when less than amountMsat: the refund less the routing fee limit charged to it (refunds.ts). Absent when the whole refund is sent (a backend with no routing fee). */
  sentMsat?: number;
  /** Which attempt this was (1 for the first). */
  attempt: number;
  /** failed: when the next attempt may start. */
  retryAt?: number;
  /** failed: why this attempt did not pay. */
  error?: string;
  /** given-up: why no attempt is left. */
  reason?: string;
  at: number;
}

export type SessionObservation = SessionOpened | SessionToppedUp | SessionTopUpRefused | SessionSpent | SessionClosed | SessionRefunded;

/** Told of each observation; never awaited (a promise it returns is only watched for failure). */
export type SessionObserver = (observation: SessionObservation) => unknown;

/** A long stream reports its spending at least this often, in units. */
export const SPENT_BATCH_UNITS = 50;

/** Tells `observer`, if any, without ever letting it throw into a payment or a refund. */
export function tell(
  observer: SessionObserver | undefined,
  observation: SessionObservation,
  onError: (error: unknown, context: string) => void = reportToConsole,
): void {
  if (!observer) return;
  try {
    const result = observer(observation);
    if (result !== null && typeof result === 'object' && typeof (result as PromiseLike<unknown>).then === 'function')
      Promise.resolve(result).catch((error: unknown) => onError(error, 'onSession failed'));
  } catch (error) {
    onError(error, 'onSession failed');
  }
}

function reportToConsole(error: unknown, context: string): void {
  console.error(`[l402] ${context}:`, error instanceof Error ? error.message : error);
}
