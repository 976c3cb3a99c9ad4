// The prepaid-session ledger: what a session has been paid (its deposit and
// top-ups), what it has spent, whether it is open, and the refund of what is
// left when it closes. Every change is one atomic step in the store, never a
// read followed by a write, so instances sharing the store can never spend a
// millisatoshi twice, credit a top-up twice or refund twice.
//
// The rules are written once here, as transitions on a plain record
// (`applySession`): the in-process ledger (memory-ledger.ts) applies them to
// records in a Map, and the Redis scripts (ledger-scripts.ts) keep the same rules inside Redis.
// One contract (tests/integration/session-ledger.test.ts) runs the same
// cases against both and holds the scripts to these transitions step by step.
//
// Amounts are integer millisatoshis; times are unix milliseconds, given by the
// caller (one clock reading per request, and testable).

// The records themselves are named by the paid-request record (a request paid
// by a session exposes its balance), so they live in core/metering.ts.
import type { RefundState, SessionAnswer, SessionRecord, SessionRefund, SessionRefusal } from '../../core/metering.js';
export type { RefundState, SessionAnswer, SessionRecord, SessionRefund, SessionRefusal };

export interface OpenSession {
  id: string;
  depositMsat: number;
  returnInvoice: string;
  idleTimeoutMs: number;
}

/** How a refund attempt ended. */
export type RefundOutcome =
  | { paid: true }
  /** `inFlight`: the attempt found an earlier payment still in flight and paid nothing (counted apart: refunds.ts does not give up for it). */
  | { paid: false; error: string; retryAt: number; inFlight?: boolean }
  | { paid: false; givenUp: string };

/** A refund an instance now holds the right to pay. */
export interface RefundClaim {
  id: string;
  returnInvoice: string;
  amountMsat: number;
  attempt: number;
  /**
   * An earlier attempt's lease ran out without an outcome: it may have paid.
   * Look the payment up (by the return invoice's payment hash) before paying.
   */
  uncertain: boolean;
  /** Earlier attempts that found a payment in flight (SessionRefund.inFlightChecks): attempt minus these is what counts toward giving up. */
  inFlightChecks: number;
}

/** A settled reservation: what it came to (`chargedMsat`, the usage, or what of it the balance could cover). */
export type SettleAnswer = (SessionAnswer & { ok: true; chargedMsat: number }) | (SessionAnswer & { ok: false });

export interface SessionLedger {
  open(session: OpenSession, now: number): Promise<SessionAnswer>;
  /** Deducts `amountMsat` if the balance covers it; closes an idle session instead. */
  spend(id: string, amountMsat: number, now: number): Promise<SessionAnswer>;
  /**
   * Credits a paid top-up once per `creditId` (its payment hash). On a closed
   * session it is folded into the refund while that has not started, else
   * refused (`refund-started`) without being taken.
   */
  topUp(id: string, creditId: string, amountMsat: number, now: number): Promise<SessionAnswer>;
  /**
   * Metering by reported usage (usage-meter.ts): spends `amountMsat` (0 or
   * more) as spend does, and remembers it as the open reservation
   * `reservationId` of the session, to be settled once. Refused
   * (`duplicate`) when that reservation was made before.
   */
  reserve?(id: string, reservationId: string, amountMsat: number, now: number): Promise<SessionAnswer>;
  /**
   * Settles the open reservation `reservationId` to `usedMsat`, once: what
   * was reserved and not used goes back to the balance; usage above the
   * reservation is spent as far as the balance covers it. Refused
   * (`not-reserved`) when there is no such open reservation (settled before,
   * or never made), and (`closed`) once the session is closed: then the
   * reservation stays spent, as the close counted it.
   */
  settle?(id: string, reservationId: string, usedMsat: number, now: number): Promise<SettleAnswer>;
  /** Closes the session, making what is left a refund due; `idle` closes only a session idle past its timeout. */
  close(id: string, because: 'client' | 'idle', now: number): Promise<SessionAnswer>;
  get(id: string): Promise<SessionRecord | null>;
  /** Takes a due (or failed and due again, or abandoned) refund for `leaseMs`; null when there is none to take. */
  claimRefund(id: string, now: number, leaseMs: number): Promise<RefundClaim | null>;
  /** Records how attempt `attempt` ended; refused (`stale`) when another attempt has taken the refund since. */
  settleRefund(id: string, attempt: number, outcome: RefundOutcome, now: number): Promise<SessionAnswer>;
  /** Sessions with refunds to pay (due, failed and due again, or with a lease run out) at `now`, at most `limit`. */
  refundsDue(now: number, limit: number): Promise<string[]>;
  /** Open sessions idle past their timeout at `now`, at most `limit`: the sweeper closes them. */
  idleSessions(now: number, limit: number): Promise<string[]>;
}

/** How long a settled session stays readable (its close answer, the operator's view). */
export const SESSION_RETENTION_MS = 30 * 24 * 3600 * 1000;

// ---------------------------------------------------------------------------
// The rules, once, as transitions on a record.

export type SessionAction =
  | { kind: 'open'; session: OpenSession }
  | { kind: 'spend'; amountMsat: number }
  | { kind: 'topUp'; creditId: string; amountMsat: number }
  | { kind: 'reserve'; reservationId: string; amountMsat: number }
  | { kind: 'settle'; reservationId: string; usedMsat: number }
  | { kind: 'close'; because: 'client' | 'idle' }
  | { kind: 'claimRefund'; leaseMs: number }
  | { kind: 'settleRefund'; attempt: number; outcome: RefundOutcome };

/** A record and the credits it has taken (top-up ids), as the in-process ledger keeps them. */
export interface LedgerEntry {
  record: SessionRecord;
  credits: Set<string>;
  /** Open reservations (reserve, not yet settled): their amounts by id. Made on the first. */
  reservations?: Map<string, number>;
}

export type Transition = { answer: SessionAnswer; claim?: RefundClaim; uncertain?: boolean; chargedMsat?: number };

const balance = (record: SessionRecord) => record.paidMsat - record.spentMsat;
const answer = (record: SessionRecord): SessionAnswer => ({ ok: true, balanceMsat: balance(record), session: record });
const refuse = (reason: SessionRefusal, record?: SessionRecord): SessionAnswer => ({
  ok: false,
  reason,
  balanceMsat: record ? balance(record) : 0,
  session: record,
});
// Idle from the moment the timeout has run (the indexes hold that moment as a score, compared with <=).
const idlePast = (record: SessionRecord, now: number) => now >= record.lastActiveAt + record.idleTimeoutMs;

function closeRecord(record: SessionRecord, because: 'client' | 'idle', now: number): void {
  record.status = 'closed';
  record.closedAt = now;
  record.closedBecause = because;
  const left = balance(record);
  record.refund =
    left > 0 ? { state: 'due', amountMsat: left, attempts: 0, nextAttemptAt: now } : { state: 'none', amountMsat: 0, attempts: 0, nextAttemptAt: now };
}

/**
 * Applies `action` to the session `entry` (undefined when there is none) at
 * `now`; answers the new entry (or the same, or undefined) and the answer.
 * Mutates `entry` in place. The Redis scripts keep these rules step by step.
 */
/** Takes `amountMsat` from an open, active session's balance, or refuses (closed, idle: closed now, insufficient) and takes nothing. */
function spendFrom(record: SessionRecord, amountMsat: number, now: number): SessionAnswer {
  if (record.status === 'closed') return refuse('closed', record);
  if (idlePast(record, now)) {
    closeRecord(record, 'idle', now);
    return refuse('idle', record);
  }
  if (balance(record) < amountMsat) return refuse('insufficient', record);
  record.spentMsat += amountMsat;
  record.lastActiveAt = now;
  return answer(record);
}

export function applySession(entry: LedgerEntry | undefined, action: SessionAction, now: number): { entry: LedgerEntry | undefined; transition: Transition } {
  if (action.kind === 'open') {
    if (entry) return { entry, transition: { answer: refuse('exists', entry.record) } };
    const { id, depositMsat, returnInvoice, idleTimeoutMs } = action.session;
    const record: SessionRecord = { id, status: 'open', paidMsat: depositMsat, spentMsat: 0, returnInvoice, idleTimeoutMs, lastActiveAt: now };
    // The deposit is a credit like a top-up, so its payment hash can never be credited again.
    const created = { record, credits: new Set([id]) };
    return { entry: created, transition: { answer: answer(record) } };
  }
  if (!entry) return { entry, transition: { answer: refuse('unknown') } };
  const { record } = entry;
  switch (action.kind) {
    case 'spend':
      return { entry, transition: { answer: spendFrom(record, action.amountMsat, now) } };
    case 'reserve': {
      if (entry.reservations?.has(action.reservationId)) return { entry, transition: { answer: refuse('duplicate', record) } };
      // A reservation is spent now, as a spend is; its settle gives back what was not used.
      const spent = spendFrom(record, action.amountMsat, now);
      if (spent.ok) (entry.reservations ??= new Map()).set(action.reservationId, action.amountMsat);
      return { entry, transition: { answer: spent } };
    }
    case 'settle': {
      // Closed: the close counted the reservation as spent, and its refund was reckoned without it; it stays so.
      if (record.status === 'closed') return { entry, transition: { answer: refuse('closed', record) } };
      const reserved = entry.reservations?.get(action.reservationId);
      if (reserved === undefined) return { entry, transition: { answer: refuse('not-reserved', record) } };
      entry.reservations!.delete(action.reservationId);
      // Unused units go back; usage beyond the reservation is taken as far as the balance covers it.
      const beyond = Math.min(Math.max(0, action.usedMsat - reserved), balance(record));
      const chargedMsat = Math.min(action.usedMsat, reserved) + beyond;
      record.spentMsat += chargedMsat - reserved;
      record.lastActiveAt = now;
      return { entry, transition: { answer: answer(record), chargedMsat } };
    }
    case 'topUp': {
      if (entry.credits.has(action.creditId)) return { entry, transition: { answer: refuse('duplicate', record) } };
      if (record.status === 'open' && idlePast(record, now)) closeRecord(record, 'idle', now);
      if (record.status === 'open') {
        entry.credits.add(action.creditId);
        record.paidMsat += action.amountMsat;
        record.lastActiveAt = now;
        return { entry, transition: { answer: answer(record) } };
      }
      // Paid after the close: never kept. Folded into the refund while it has not started; once the refund is
      // being paid, paid or given up, not taken at all (no credit recorded), so the payment stays the client's.
      const refund = record.refund!;
      if (refund.state !== 'due' && refund.state !== 'failed' && refund.state !== 'none')
        return { entry, transition: { answer: refuse('refund-started', record) } };
      entry.credits.add(action.creditId);
      record.paidMsat += action.amountMsat;
      refund.amountMsat += action.amountMsat;
      if (refund.state === 'none') {
        refund.state = 'due';
        refund.nextAttemptAt = now;
      }
      return { entry, transition: { answer: refuse('closed', record) } };
    }
    case 'close': {
      if (record.status === 'closed') return { entry, transition: { answer: refuse('closed', record) } };
      if (action.because === 'idle' && !idlePast(record, now)) return { entry, transition: { answer: refuse('not-due', record) } };
      closeRecord(record, action.because, now);
      return { entry, transition: { answer: answer(record) } };
    }
    case 'claimRefund': {
      const refund = record.refund;
      if (!refund) return { entry, transition: { answer: refuse('not-due', record) } };
      if (!refundWaiting(record, now)) return { entry, transition: { answer: refuse('not-due', record) } };
      const uncertain = refund.state === 'paying';
      refund.state = 'paying';
      refund.attempts += 1;
      refund.nextAttemptAt = now + action.leaseMs;
      const claim: RefundClaim = {
        id: record.id,
        returnInvoice: record.returnInvoice,
        amountMsat: refund.amountMsat,
        attempt: refund.attempts,
        uncertain,
        inFlightChecks: refund.inFlightChecks ?? 0,
      };
      return { entry, transition: { answer: answer(record), claim } };
    }
    case 'settleRefund': {
      const refund = record.refund;
      if (refund?.state !== 'paying' || refund.attempts !== action.attempt) return { entry, transition: { answer: refuse('stale', record) } };
      const { outcome } = action;
      if (outcome.paid) {
        refund.state = 'paid';
        refund.paidAt = now;
      } else if ('givenUp' in outcome) {
        refund.state = 'given-up';
        refund.reason = outcome.givenUp;
      } else {
        refund.state = 'failed';
        refund.lastError = outcome.error;
        refund.nextAttemptAt = outcome.retryAt;
        if (outcome.inFlight) refund.inFlightChecks = (refund.inFlightChecks ?? 0) + 1;
      }
      return { entry, transition: { answer: answer(record) } };
    }
  }
}

/** Whether a session's refund waits to be taken at `now`: due, failed and due again, or abandoned by an attempt whose lease ran out. */
export function refundWaiting(record: SessionRecord, now: number): boolean {
  const refund = record.refund;
  return refund !== undefined && (refund.state === 'due' || refund.state === 'failed' || refund.state === 'paying') && refund.nextAttemptAt <= now;
}

/** A reservation's amount, or a settled usage: whole millisatoshis, 0 or more. */
export function checkedUsage(amountMsat: number): number {
  if (!Number.isSafeInteger(amountMsat) || amountMsat < 0)
    throw new RangeError(`a reserved or used amount must be a whole number of millisatoshis, 0 or more, not ${amountMsat}`);
  return amountMsat;
}

/** A reservation's id: 1 to 64 letters, digits, `-` or `_` (a hash field name in Redis). */
export function checkedReservationId(reservationId: string): string {
  if (typeof reservationId !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(reservationId))
    throw new RangeError('a reservation id is 1 to 64 letters, digits, "-" or "_"');
  return reservationId;
}

/** Amounts are whole millisatoshis above zero. */
export function checkedAmount(amountMsat: number): number {
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0)
    throw new RangeError(`a session amount must be a whole number of millisatoshis above 0, not ${amountMsat}`);
  return amountMsat;
}

export function checkedOpen(session: OpenSession): OpenSession {
  checkedAmount(session.depositMsat);
  if (!Number.isSafeInteger(session.idleTimeoutMs) || session.idleTimeoutMs <= 0)
    throw new RangeError('idleTimeoutMs must be a whole number of milliseconds above 0');
  if (!session.returnInvoice) throw new RangeError('a session needs a return invoice');
  return session;
}
