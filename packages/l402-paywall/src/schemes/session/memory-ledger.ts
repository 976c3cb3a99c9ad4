// The session ledger in this process's memory: the rules of ledger.ts
// (applySession) over records in a Map, for one process (`npm start`, tests,
// a single self-hosted instance). Like the Redis ledger (ledger-scripts.ts) it
// keeps three indexes ordered by time, so the sweeper visits only what is due
// (open sessions by when they turn idle, refunds by when they may be taken),
// and it forgets a settled session (its refund paid, given up, or nothing to
// refund) `retentionMs` after it settled, as Redis expires its key: without
// that, every session ever opened would stay in memory.
import { DueIndex } from '../../util/due-index.js';
import {
  applySession,
  checkedAmount,
  checkedOpen,
  checkedReservationId,
  checkedUsage,
  refundWaiting,
  type LedgerEntry,
  type SessionAction,
  type SessionAnswer,
  type SessionLedger,
  type SessionRecord,
  type SettleAnswer,
  type Transition,
} from './ledger.js';

/**
 * How long the in-process ledger keeps a settled session (readable by get(),
 * its close answered `closed` rather than unknown): one hour. Shorter than
 * Redis's 30 days (SESSION_RETENTION_MS) because it is memory; longer than a
 * deposit invoice lives (an hour by default), so a top-up paid for it still
 * finds the session and is refunded with it rather than released as unknown.
 */
export const MEMORY_SESSION_RETENTION_MS = 3600_000;

export interface MemorySessionLedgerOptions {
  /** How long a settled session is kept; default MEMORY_SESSION_RETENTION_MS (one hour). */
  retentionMs?: number;
}

/** What the in-process ledger holds, and the work its sweeps did: for tests and an operator's look. */
export interface MemoryLedgerFootprint {
  /** Sessions held (open, closed with a refund pending, or settled within the retention). */
  sessions: number;
  /** Index entries looked at by refundsDue, idleSessions and the dropping of settled sessions, since the ledger was made. */
  sweepVisits: number;
}

export interface MemorySessionLedger extends SessionLedger {
  footprint(): MemoryLedgerFootprint;
}

/** Settled: nothing more will happen to it (no refund to pay, none in flight). */
const settled = (record: SessionRecord) =>
  record.status === 'closed' && (record.refund?.state === 'paid' || record.refund?.state === 'given-up' || record.refund?.state === 'none');

/** The ledger in this process's memory: for one process (and tests); records never leave it, and settled ones are forgotten after `retentionMs`. */
export function memorySessionLedger(options: MemorySessionLedgerOptions = {}): MemorySessionLedger {
  const retentionMs = options.retentionMs ?? MEMORY_SESSION_RETENTION_MS;
  if (!Number.isSafeInteger(retentionMs) || retentionMs <= 0)
    throw new RangeError(`memorySessionLedger: retentionMs must be a whole number of milliseconds above 0, not ${retentionMs}`);
  const entries = new Map<string, LedgerEntry>();
  // The Redis ledger's <prefix>idle and <prefix>refunds, and its keys' expiry.
  const idle = new DueIndex();
  const refunds = new DueIndex();
  const forget = new DueIndex();
  // The latest time the ledger was told (get() is told none): what settled sessions expire against.
  let clock = Number.NEGATIVE_INFINITY;

  const tick = (now: number) => {
    if (now > clock) clock = now;
    for (const id of forget.takeDue(clock)) {
      entries.delete(id);
      idle.delete(id);
      refunds.delete(id);
    }
  };
  /** Files the session in the indexes its record now belongs in (as the script's ZADD, ZREM and PEXPIRE do). */
  const reindex = ({ record }: LedgerEntry, now: number) => {
    const { id } = record;
    if (record.status === 'open') idle.set(id, record.lastActiveAt + record.idleTimeoutMs);
    else idle.delete(id);
    const refund = record.refund;
    if (refund && (refund.state === 'due' || refund.state === 'failed' || refund.state === 'paying')) refunds.set(id, refund.nextAttemptAt);
    else refunds.delete(id);
    // Counted from when it settled (a later no-op on it does not extend it); a top-up that makes a refund due again keeps it.
    if (!settled(record)) forget.delete(id);
    else if (!forget.has(id)) forget.set(id, now + retentionMs);
  };
  const copy = (record: SessionRecord): SessionRecord => structuredClone(record);
  const run = (id: string, action: SessionAction, now: number): Transition => {
    tick(now);
    const { entry, transition } = applySession(entries.get(id), action, now);
    if (entry) {
      entries.set(id, entry);
      reindex(entry, now);
    }
    const session = transition.answer.session;
    return { ...transition, answer: { ...transition.answer, ...(session ? { session: copy(session) } : {}) } as SessionAnswer };
  };
  return {
    async open(session, now) {
      return run(session.id, { kind: 'open', session: checkedOpen(session) }, now).answer;
    },
    async spend(id, amountMsat, now) {
      return run(id, { kind: 'spend', amountMsat: checkedAmount(amountMsat) }, now).answer;
    },
    async topUp(id, creditId, amountMsat, now) {
      return run(id, { kind: 'topUp', creditId, amountMsat: checkedAmount(amountMsat) }, now).answer;
    },
    async reserve(id, reservationId, amountMsat, now) {
      return run(id, { kind: 'reserve', reservationId: checkedReservationId(reservationId), amountMsat: checkedUsage(amountMsat) }, now).answer;
    },
    async settle(id, reservationId, usedMsat, now): Promise<SettleAnswer> {
      const { answer, chargedMsat } = run(id, { kind: 'settle', reservationId: checkedReservationId(reservationId), usedMsat: checkedUsage(usedMsat) }, now);
      return answer.ok ? { ...answer, chargedMsat: chargedMsat! } : answer;
    },
    async close(id, because, now) {
      return run(id, { kind: 'close', because }, now).answer;
    },
    async get(id) {
      tick(clock);
      const entry = entries.get(id);
      return entry ? copy(entry.record) : null;
    },
    async claimRefund(id, now, leaseMs) {
      return run(id, { kind: 'claimRefund', leaseMs }, now).claim ?? null;
    },
    async settleRefund(id, attempt, outcome, now) {
      return run(id, { kind: 'settleRefund', attempt, outcome }, now).answer;
    },
    async refundsDue(now, limit) {
      tick(now);
      // The index holds each waiting refund's time; refundWaiting is the rule it mirrors.
      return refunds.due(now, limit).filter((id) => refundWaiting(entries.get(id)!.record, now));
    },
    async idleSessions(now, limit) {
      tick(now);
      return idle.due(now, limit);
    },
    footprint: () => ({ sessions: entries.size, sweepVisits: idle.visits + refunds.visits + forget.visits }),
  };
}
