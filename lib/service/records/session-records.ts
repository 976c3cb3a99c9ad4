// Prepaid sessions in the payment log (docs/sessions.md "In the payment log"):
// what lightningSessions and the refunds tell (onSession) becomes entries the
// payment log writes like its payments, with the same retries and outbox.
//
//   opened     the deposit: a payment (by its payment hash, the session's id), and the session's row
//   topped-up  the top-up: a payment of the session
//   topup-refused  the top-up refused (its session's refund had started): a row of session_refused_topups, not a payment
//   spent      the session's row: spent and paid totals (a batch of units, not a payment)
//   closed     the session's row: why, when, and the refund due
//   refunded   the session's row: the refund's state, attempts, error or reason
//
// Nothing written twice: payments are keyed on their payment hash as before,
// and a session's row is merged so that entries applied late, out of order or
// twice leave the same row: totals only grow (GREATEST), the close is kept
// once set, and the refund keeps its furthest state (paid and given up are
// final; otherwise the later attempt wins). A refused top-up is keyed on its
// payment hash, inserted once.
import type { SessionObservation } from 'l402-paywall/lightning';
import type { Queryable } from '../../db/types.js';
import type { PaymentLogEntry } from './payment-log-types.js';

export type RefundRecordState = 'none' | 'due' | 'failed' | 'paid' | 'given-up';

/** A session's row, or the part of it one observation knows. */
export interface SessionRecordEntry {
  kind: 'session';
  sessionId: string;
  endpoint?: string;
  unitPriceMsat?: number;
  paidMsat?: number;
  spentMsat?: number;
  openedAt?: string;
  closedAt?: string;
  closedBecause?: 'client' | 'idle';
  refundMsat?: number;
  refundState?: RefundRecordState;
  refundAttempts?: number;
  refundError?: string;
  refundReason?: string;
  refundRetryAt?: string;
  refundSettledAt?: string;
}

/** A top-up refused because its session's refund had started (migration 008): not taken, so not a payment. */
export interface RefusedTopUpEntry {
  kind: 'topup-refused';
  paymentHash: string;
  sessionId: string;
  endpoint?: string;
  amountMsat: number;
  refundState: RefusedTopUpRefundState;
  refusedAt: string;
}

export type RefusedTopUpRefundState = 'paying' | 'paid' | 'given-up';

/** What the payment log writes for one observation: payments (deposit, top-up), the session's row, or a refused top-up. */
export function entriesOf(observation: SessionObservation): { payments: PaymentLogEntry[]; session?: SessionRecordEntry; refusedTopUp?: RefusedTopUpEntry } {
  const at = new Date(observation.at).toISOString();
  const row = { kind: 'session' as const, sessionId: observation.sessionId };
  switch (observation.type) {
    case 'opened':
      return {
        payments: [
          {
            paymentHash: observation.sessionId,
            endpoint: observation.route,
            amountSats: wholeSats(observation.depositMsat),
            sessionId: observation.sessionId,
            paidAt: at,
          },
        ],
        session: {
          ...row,
          endpoint: observation.route,
          unitPriceMsat: observation.unitPriceMsat,
          paidMsat: observation.depositMsat,
          openedAt: at,
        },
      };
    case 'topped-up':
      return {
        payments: [
          {
            paymentHash: observation.paymentHash,
            endpoint: observation.route,
            amountSats: wholeSats(observation.amountMsat),
            sessionId: observation.sessionId,
            paidAt: at,
          },
        ],
      };
    case 'topup-refused':
      return {
        payments: [],
        refusedTopUp: {
          kind: 'topup-refused',
          paymentHash: observation.paymentHash,
          sessionId: observation.sessionId,
          endpoint: observation.route,
          amountMsat: observation.amountMsat,
          refundState: observation.refundState,
          refusedAt: at,
        },
      };
    case 'spent':
      return { payments: [], session: { ...row, endpoint: observation.route, paidMsat: observation.paidMsat, spentMsat: observation.spentMsat } };
    case 'closed':
      return {
        payments: [],
        session: {
          ...row,
          paidMsat: observation.paidMsat,
          spentMsat: observation.spentMsat,
          closedAt: at,
          closedBecause: observation.because,
          refundMsat: observation.refundMsat,
          refundState: observation.refundMsat > 0 ? 'due' : 'none',
          refundAttempts: 0,
        },
      };
    case 'refunded':
      return {
        payments: [],
        session: {
          ...row,
          refundMsat: observation.amountMsat,
          refundState: observation.state,
          refundAttempts: observation.attempt,
          ...(observation.error !== undefined && { refundError: observation.error }),
          ...(observation.reason !== undefined && { refundReason: observation.reason }),
          ...(observation.retryAt !== undefined && { refundRetryAt: new Date(observation.retryAt).toISOString() }),
          ...(observation.state !== 'failed' && { refundSettledAt: at }),
        },
      };
  }
}

// Deposits and top-ups are invoices of whole satoshis (the seller makes them).
function wholeSats(msat: number): number {
  if (!Number.isSafeInteger(msat) || msat % 1000 !== 0) throw new TypeError(`a session payment must be whole satoshis, not ${msat} msat`);
  return msat / 1000;
}

const HASH = /^[0-9a-f]{64}$/;
const STATES: readonly RefundRecordState[] = ['none', 'due', 'failed', 'paid', 'given-up'];
// A backend's error text is kept, not trusted: bounded, and only as text.
const MAX_TEXT = 500;

/** Checks a session entry (from an observation, or read back from the outbox); throws TypeError naming what is wrong. */
export function storedSessionRecord(input: SessionRecordEntry): SessionRecordEntry {
  const fail = (what: string): never => {
    throw new TypeError(`session record: ${what}`);
  };
  if (input?.kind !== 'session') fail('not a session record');
  const sessionId = typeof input.sessionId === 'string' ? input.sessionId.toLowerCase() : '';
  if (!HASH.test(sessionId)) fail('sessionId must be 64 hex characters');
  const out: SessionRecordEntry = { kind: 'session', sessionId };
  if (input.endpoint !== undefined) out.endpoint = text(input.endpoint, 2048, 'endpoint', fail, false);
  for (const name of ['unitPriceMsat', 'paidMsat', 'spentMsat', 'refundMsat', 'refundAttempts'] as const) {
    const value = input[name];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 0) fail(`${name} must be a whole number from 0`);
    out[name] = value;
  }
  if (out.refundAttempts !== undefined && out.refundAttempts > 2_147_483_647) fail('refundAttempts is too large');
  for (const name of ['openedAt', 'closedAt', 'refundRetryAt', 'refundSettledAt'] as const) {
    const value = input[name];
    if (value === undefined) continue;
    const date = new Date(value);
    if (typeof value !== 'string' || Number.isNaN(date.getTime())) fail(`${name} must be a date`);
    out[name] = date.toISOString();
  }
  if (input.closedBecause !== undefined) {
    if (input.closedBecause !== 'client' && input.closedBecause !== 'idle') fail('closedBecause must be client or idle');
    out.closedBecause = input.closedBecause;
  }
  if (input.refundState !== undefined) {
    if (!STATES.includes(input.refundState)) fail(`refundState must be one of ${STATES.join(', ')}`);
    out.refundState = input.refundState;
  }
  if (input.refundError !== undefined) out.refundError = text(input.refundError, MAX_TEXT, 'refundError', fail, true);
  if (input.refundReason !== undefined) out.refundReason = text(input.refundReason, MAX_TEXT, 'refundReason', fail, true);
  return out;
}

const REFUSED_STATES: readonly RefusedTopUpRefundState[] = ['paying', 'paid', 'given-up'];

/** Checks a refused top-up (from an observation, or read back from the outbox); throws TypeError naming what is wrong. */
export function storedRefusedTopUp(input: RefusedTopUpEntry): RefusedTopUpEntry {
  const fail = (what: string): never => {
    throw new TypeError(`refused top-up: ${what}`);
  };
  if (input?.kind !== 'topup-refused') fail('not a refused top-up');
  const hash = (value: unknown, name: string) => {
    const lower = typeof value === 'string' ? value.toLowerCase() : '';
    return HASH.test(lower) ? lower : fail(`${name} must be 64 hex characters`);
  };
  const paymentHash = hash(input.paymentHash, 'paymentHash');
  const sessionId = hash(input.sessionId, 'sessionId');
  if (!Number.isSafeInteger(input.amountMsat) || input.amountMsat <= 0) fail('amountMsat must be a whole number above 0');
  if (!REFUSED_STATES.includes(input.refundState)) fail(`refundState must be one of ${REFUSED_STATES.join(', ')}`);
  const refusedAt = new Date(input.refusedAt);
  if (typeof input.refusedAt !== 'string' || Number.isNaN(refusedAt.getTime())) fail('refusedAt must be a date');
  return {
    kind: 'topup-refused',
    paymentHash,
    sessionId,
    ...(input.endpoint !== undefined && { endpoint: text(input.endpoint, 2048, 'endpoint', fail, false) }),
    amountMsat: input.amountMsat,
    refundState: input.refundState,
    refusedAt: refusedAt.toISOString(),
  };
}

/** Writes refused top-ups, keyed on their payment hash: one written twice (a retry, the outbox) is left as it is. */
export async function insertRefusedTopUps(db: Queryable, entries: readonly RefusedTopUpEntry[]): Promise<void> {
  for (const e of entries) {
    await db.query(
      `INSERT INTO session_refused_topups (payment_hash, session_id, endpoint, amount_msat, refund_state, refused_at)
       VALUES ($1, $2, $3, $4, $5, $6::timestamptz) ON CONFLICT (payment_hash) DO NOTHING`,
      [e.paymentHash, e.sessionId, e.endpoint ?? null, e.amountMsat, e.refundState, e.refusedAt],
    );
  }
}

function text(value: unknown, max: number, name: string, fail: (what: string) => never, cut: boolean): string {
  if (typeof value !== 'string') return fail(`${name} must be text`);
  if (value.length > max) return cut ? value.slice(0, max) : fail(`${name} must be at most ${max} characters`);
  return value;
}

// Whether the incoming refund state replaces the row's: a final state (paid, given up) is never replaced; otherwise a
// final one, or one from the same or a later attempt, wins. Written once, used for every refund column.
const REFUND_WINS = `(s.refund_state IS NULL OR (s.refund_state NOT IN ('paid', 'given-up') AND excluded.refund_state IS NOT NULL
  AND (excluded.refund_state IN ('paid', 'given-up') OR excluded.refund_attempts >= s.refund_attempts)))`;
// The winner's columns all come with it (a paid refund keeps no error), so the row does not depend on the order of arrival.
const refundColumn = (column: string) => `${column} = CASE WHEN ${REFUND_WINS} THEN excluded.${column} ELSE s.${column} END`;

const UPSERT = `INSERT INTO payment_sessions AS s (session_id, endpoint, unit_price_msat, paid_msat, spent_msat, opened_at, closed_at, closed_because,
    refund_msat, refund_state, refund_attempts, refund_error, refund_reason, refund_retry_at, refund_settled_at)
  VALUES ($1, $2, $3, coalesce($4, 0), coalesce($5, 0), $6, $7, $8, coalesce($9, 0), $10, coalesce($11, 0), $12, $13, $14, $15)
  ON CONFLICT (session_id) DO UPDATE SET
    endpoint = coalesce(s.endpoint, excluded.endpoint),
    unit_price_msat = coalesce(s.unit_price_msat, excluded.unit_price_msat),
    paid_msat = greatest(s.paid_msat, excluded.paid_msat),
    spent_msat = greatest(s.spent_msat, excluded.spent_msat),
    opened_at = coalesce(s.opened_at, excluded.opened_at),
    closed_at = coalesce(s.closed_at, excluded.closed_at),
    closed_because = coalesce(s.closed_because, excluded.closed_because),
    refund_msat = greatest(s.refund_msat, excluded.refund_msat),
    ${refundColumn('refund_state')},
    ${refundColumn('refund_attempts')},
    ${refundColumn('refund_error')},
    ${refundColumn('refund_reason')},
    ${refundColumn('refund_retry_at')},
    ${refundColumn('refund_settled_at')},
    updated_at = now()`;

/** Writes session rows, one statement each (one statement cannot touch a row twice), in the order given. */
export async function upsertSessionRecords(db: Queryable, entries: readonly SessionRecordEntry[]): Promise<void> {
  for (const e of entries) {
    await db.query(UPSERT, [
      e.sessionId,
      e.endpoint ?? null,
      e.unitPriceMsat ?? null,
      e.paidMsat ?? null,
      e.spentMsat ?? null,
      e.openedAt ?? null,
      e.closedAt ?? null,
      e.closedBecause ?? null,
      e.refundMsat ?? null,
      e.refundState ?? null,
      e.refundAttempts ?? null,
      e.refundError ?? null,
      e.refundReason ?? null,
      e.refundRetryAt ?? null,
      e.refundSettledAt ?? null,
    ]);
  }
}
