// The payment log (docs/architecture.md "The hosted interface's records"): each paid request's
// payment hash, endpoint, amount and owner go to the `payments` table off the
// request path, so the paid answer never waits for the database.
//
// Nothing lost, nothing written twice:
// - Rows are keyed on the payment hash (INSERT … ON CONFLICT DO NOTHING), so a
//   retry, a flush racing a late write, or two flushers can never add a row twice.
// - A write that fails is retried briefly. If the database stays down, the
//   entry waits in the key-value store (the outbox, payment-outbox.ts) for days and is
//   written by the next successful write of any instance or by the scheduled
//   flush (api/cron/flush-payments.ts).
// - If the key-value store is down as well, the entry goes to stderr as one
//   line (it holds nothing secret), which is the last place it can be kept.
// The preimage never reaches this module: a Payment does not carry it.
//
// Prepaid sessions come through onSession (session-records.ts): their deposits
// and top-ups are payments, what they spend and refund is the session's row.
// A request a session served is not a payment, so onPaid leaves it out.
//
import { waitUntil as vercelWaitUntil } from '@vercel/functions';
import { DatabaseUnavailable, type Database } from '../../db/index.js';
import type { Payment } from 'l402-paywall';
import type { SessionObservation } from 'l402-paywall/lightning';
import type { KeyValueStore } from '../../store/types.js';
import { servicePart, type ServiceContext } from '../context.js';
import { sleep, withTimeout } from '../../util/async.js';
import { describeError } from '../../util/describe-error.js';
import { createOutbox, isPayment, isRefusedTopUp, isSessionRecord, storedEntry, type Outbox, type StoredEntry } from './payment-outbox.js';
import { entriesOf, insertRefusedTopUps, storedRefusedTopUp, storedSessionRecord, upsertSessionRecords } from './session-records.js';
import type { FlushResult, PaymentLogEntry } from './payment-log-types.js';

export type { FlushResult, PaymentLogEntry } from './payment-log-types.js';

/** What became of one entry. */
export type RecordOutcome =
  /** In the database. */
  | 'written'
  /** In the outbox, to be written when the database is back. */
  | 'kept'
  /** Database and key-value store both failed: only the stderr line holds it. */
  | 'dropped';

export interface PaymentLog {
  /** For withL402's `onPaid`: logs in the background (kept alive with waitUntil); never throws. */
  onPaid(payment: Payment, request: Request, response?: Response): void;
  /** For lightningSessions' and the refunds' `onSession`: logs deposits, top-ups, spending, closes and refunds in the background; never throws. */
  onSession(observation: SessionObservation): void;
  /** Writes one entry (retries, then the outbox); resolves with what became of it, never rejects for I/O. */
  record(entry: PaymentLogEntry): Promise<RecordOutcome>;
  /** One pass over the outbox: writes up to `maxSlots` waiting entries. */
  flush(options?: { maxSlots?: number }): Promise<FlushResult>;
  /** Flush passes until the outbox is empty, nothing moves, or `budgetMs` is spent (the scheduled flush). */
  drain(options?: { budgetMs?: number }): Promise<FlushResult>;
}

export interface PaymentLogOptions {
  /** The database, opened on demand (ServiceContext.database). */
  database: () => Promise<Database>;
  /** Where entries wait while the database is down (shared by every instance). */
  store: KeyValueStore;
  /** Keeps background work alive after the answer went out (Vercel's waitUntil). */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** The owner's Lightning Address for a paid request, when endpoints have owners. */
  ownerOf?: (payment: Payment, request: Request) => string | null | undefined;
  /** Pauses between attempts of one write; attempts = length + 1. Default [100, 400]. */
  retryDelaysMs?: readonly number[];
  /** One attempt that has not answered by then counts as failed. Default 3000. */
  attemptTimeoutMs?: number;
  /**
   * No new attempt starts this long after the first one: the entry is kept
   * instead, well before a serverless invocation could be cut short. Default 5000.
   */
  retryBudgetMs?: number;
  /** How long an entry waits in the outbox before it expires. Default 7 days. */
  outboxTtlMs?: number;
  /** How often a successful write looks at the outbox for entries other instances kept. Default 10 s. */
  outboxCheckIntervalMs?: number;
  /** Key namespace in the store. Default "paylog:". */
  keyPrefix?: string;
  /** Where operational messages go; default console.error. Lines never hold secrets. */
  log?: (line: string) => void;
}

// After a failed write, later writes try once instead of retrying, for this long.
const DOWN_GRACE_MS = 5_000;
const KEPT_LOG_INTERVAL_MS = 10_000;
const MIN_FLUSH_SPACING_MS = 1_000;

class WriteTimeout extends Error {
  override readonly name = 'WriteTimeout';
}

export function createPaymentLog(options: PaymentLogOptions): PaymentLog {
  const log = options.log ?? ((line: string) => console.error(line));
  const writer = createDatabaseWriter(options.database, {
    retryDelays: options.retryDelaysMs ?? [100, 400],
    attemptTimeoutMs: options.attemptTimeoutMs ?? 3_000,
    retryBudgetMs: options.retryBudgetMs ?? 5_000,
  });
  const outbox = createOutbox({
    store: options.store,
    prefix: options.keyPrefix ?? 'paylog:',
    ttlMs: options.outboxTtlMs ?? 7 * 86_400_000,
    write: writer.write,
    log,
  });
  const keepAlive = keepAliveWith(options.waitUntil, log);
  const background = createBackgroundFlush(outbox, { checkIntervalMs: options.outboxCheckIntervalMs ?? 10_000, keepAlive, log });
  const noteKept = keptNotice(log);

  /** Writes the entries together; while the database fails each is kept on its own. */
  async function recordAll(entries: StoredEntry[]): Promise<RecordOutcome> {
    const dbError = await writer.write(entries);
    if (dbError === undefined) {
      background.afterWrite();
      return 'written';
    }
    let entry: StoredEntry | undefined;
    try {
      for (entry of entries) await outbox.keep(entry);
    } catch (storeError) {
      log(
        `[payment-log] payment NOT logged: database (${describeError(dbError)}) and key-value store (${describeError(storeError)}) both failed; entries, to be written by hand: ${JSON.stringify(entries.slice(entries.indexOf(entry!)))}`,
      );
      return 'dropped';
    }
    background.afterKeep();
    noteKept(dbError);
    return 'kept';
  }

  async function record(input: PaymentLogEntry): Promise<RecordOutcome> {
    return recordAll([storedEntry(input)]);
  }

  return {
    onPaid(payment, request) {
      // A request a session served spent from a deposit already logged (onSession): not a payment.
      if (payment.session) return;
      const entry = describePaidRequest(payment, request, options.ownerOf, log);
      if (entry) keepAlive(record(entry).catch((error) => log(`[payment-log] payment ${safeHash(payment.paymentHash)} not logged: ${describeError(error)}`)));
    },
    onSession(observation) {
      let entries: StoredEntry[];
      try {
        const { payments, session, refusedTopUp } = entriesOf(observation);
        entries = [
          ...payments.map(storedEntry),
          ...(session ? [storedSessionRecord(session)] : []),
          ...(refusedTopUp ? [storedRefusedTopUp(refusedTopUp)] : []),
        ];
      } catch (error) {
        log(`[payment-log] session ${safeHash(observation?.sessionId)} not logged: ${describeError(error)}`);
        return;
      }
      keepAlive(recordAll(entries).catch((error) => log(`[payment-log] session ${safeHash(observation.sessionId)} not logged: ${describeError(error)}`)));
    },
    record,
    flush: (flushOptions) => outbox.flush(flushOptions),
    drain: (drainOptions) => drain(outbox, drainOptions),
  };
}

interface WriteTiming {
  /** Pauses between attempts; attempts = length + 1. */
  retryDelays: readonly number[];
  attemptTimeoutMs: number;
  retryBudgetMs: number;
}

/**
 * Writes entries to the payments table, retrying briefly. `write` resolves
 * with undefined when they are in, else with the last error (it never
 * rejects). After a failure, writes try once for DOWN_GRACE_MS: the entries
 * are kept anyway, and the paid answer should not wait on retries.
 */
function createDatabaseWriter(database: () => Promise<Database>, timing: WriteTiming): { write(entries: readonly StoredEntry[]): Promise<unknown> } {
  let downUntil = 0;
  return {
    async write(entries) {
      // While the database is known to be down, one attempt is enough: the entry is kept anyway.
      const attempts = Date.now() < downUntil ? 1 : timing.retryDelays.length + 1;
      const started = Date.now();
      let failure: unknown;
      for (let attempt = 0; attempt < attempts; attempt++) {
        if (attempt > 0) {
          const pause = timing.retryDelays[attempt - 1] ?? 0;
          if (Date.now() + pause - started >= timing.retryBudgetMs) break;
          await sleep(pause);
        }
        try {
          await withTimeout(
            insertPayments(database, entries),
            timing.attemptTimeoutMs,
            () => new WriteTimeout(`no answer from the database within ${timing.attemptTimeoutMs} ms`),
          );
          downUntil = 0;
          return undefined;
        } catch (error) {
          failure = error;
          if (!isTransient(error)) break;
        }
      }
      downUntil = Date.now() + DOWN_GRACE_MS;
      return failure ?? new Error('write failed');
    },
  };
}

/** One INSERT for the payments (a payment hash already there is left as it is), then the session rows, merged, and the refused top-ups. */
async function insertPayments(database: () => Promise<Database>, entries: readonly StoredEntry[]): Promise<void> {
  const payments = entries.filter(isPayment);
  const sessions = entries.filter(isSessionRecord);
  const db = await database();
  if (payments.length > 0) {
    const unique = [...new Map(payments.map((e) => [e.paymentHash, e])).values()];
    const params: unknown[] = [];
    const rows = unique.map((e) => {
      const i = params.length;
      params.push(e.paymentHash, e.endpoint, e.amountSats, e.ownerAddress, e.paidAt, e.sessionId ?? null);
      return `($${i + 1}, $${i + 2}, $${i + 3}, $${i + 4}, $${i + 5}::timestamptz, $${i + 6})`;
    });
    await db.query(
      `INSERT INTO payments (payment_hash, endpoint, amount_sats, owner_address, paid_at, session_id) VALUES ${rows.join(', ')} ON CONFLICT (payment_hash) DO NOTHING`,
      params,
    );
  }
  await upsertSessionRecords(db, sessions);
  await insertRefusedTopUps(db, entries.filter(isRefusedTopUp));
}

/**
 * After a successful write: writes what this instance kept at once, and now
 * and then looks for what other instances kept (one flush at a time).
 */
function createBackgroundFlush(
  outbox: Outbox,
  options: { checkIntervalMs: number; keepAlive: (promise: Promise<unknown>) => void; log: (line: string) => void },
) {
  // True while this instance knows it left entries in the outbox; `kept` counts
  // them, so a flush that started before the latest one cannot clear the flag.
  let keptHere = false;
  let kept = 0;
  let lastOutboxCheck = 0;
  let running: Promise<unknown> | undefined;
  return {
    afterKeep(): void {
      keptHere = true;
      kept += 1;
    },
    afterWrite(): void {
      if (running) return;
      const now = Date.now();
      const since = now - lastOutboxCheck;
      if (since < MIN_FLUSH_SPACING_MS || (!keptHere && since < options.checkIntervalMs)) return;
      lastOutboxCheck = now;
      const keptBefore = kept;
      running = outbox
        .flush()
        .then((result) => {
          if (kept === keptBefore) keptHere = result.pending > 0;
        })
        .catch((error) => options.log(`[payment-log] outbox flush failed: ${describeError(error)}`))
        .finally(() => {
          running = undefined;
        });
      options.keepAlive(running);
    },
  };
}

/** Flush passes until the outbox is empty, nothing moves, the database fails or `budgetMs` is spent. */
async function drain(outbox: Outbox, { budgetMs = 20_000 }: { budgetMs?: number } = {}): Promise<FlushResult> {
  const deadline = Date.now() + budgetMs;
  let written = 0;
  for (;;) {
    const result = await outbox.flush();
    written += result.written;
    if (result.error !== undefined || result.pending === 0 || result.written === 0 || Date.now() >= deadline) {
      return { ...result, written };
    }
  }
}

/** One stderr line per KEPT_LOG_INTERVAL_MS at most, counting the entries kept since the last one. */
function keptNotice(log: (line: string) => void): (dbError: unknown) => void {
  let keptSinceLog = 0;
  let lastKeptLog = 0;
  return (dbError) => {
    keptSinceLog += 1;
    const now = Date.now();
    if (now - lastKeptLog < KEPT_LOG_INTERVAL_MS) return;
    log(`[payment-log] database write failed (${describeError(dbError)}); ${keptSinceLog} payment(s) kept in the key-value store until it can be written`);
    lastKeptLog = now;
    keptSinceLog = 0;
  };
}

/** Keeps background work alive after the answer went out, when there is a way to (Vercel's waitUntil). */
function keepAliveWith(waitUntil: PaymentLogOptions['waitUntil'], log: (line: string) => void): (promise: Promise<unknown>) => void {
  return (promise) => {
    if (!waitUntil) return;
    try {
      waitUntil(promise);
    } catch (error) {
      log(`[payment-log] waitUntil failed: ${describeError(error)}`);
    }
  };
}

/** The log entry of a paid request (withL402's onPaid); undefined, with a line logged, when it cannot be described. */
function describePaidRequest(
  payment: Payment,
  request: Request,
  ownerOf: PaymentLogOptions['ownerOf'],
  log: (line: string) => void,
): PaymentLogEntry | undefined {
  try {
    return {
      paymentHash: payment.paymentHash,
      endpoint: payment.route,
      amountSats: Math.floor(payment.amountMsat / 1000),
      ownerAddress: ownerOf?.(payment, request) ?? null,
      paidAt: new Date(),
    };
  } catch (error) {
    log(`[payment-log] could not describe payment ${safeHash(payment.paymentHash)}: ${describeError(error)}`);
    return undefined;
  }
}

const paymentLog = servicePart('payment log', (ctx): PaymentLog | undefined =>
  ctx.config.database ? createPaymentLog({ database: () => ctx.database(), store: ctx.store, waitUntil: vercelWaitUntil }) : undefined,
);

/**
 * The service's payment log, one per service context: undefined when no
 * database is configured (then nothing is logged). On Vercel the background
 * write is kept alive with waitUntil; elsewhere waitUntil does nothing and
 * the process simply runs the write to its end.
 */
export function servicePaymentLog(ctx: ServiceContext): PaymentLog | undefined {
  return ctx.part(paymentLog);
}

// Connection trouble, timeouts and "try again" answers; anything else (a
// missing table, say) will not pass on a retry a moment later.
const TRANSIENT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '53300',
  '40001',
  '40P01',
]);

export function isTransient(error: unknown): boolean {
  if (error instanceof DatabaseUnavailable || error instanceof WriteTimeout) return true;
  if (!(error instanceof Error)) return false;
  if (error.name === 'DatabaseUnavailable') return true;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (TRANSIENT_CODES.has(code) || code.startsWith('08'))) return true;
  return /connect|connection|terminat|timeout|socket/i.test(error.message);
}

function safeHash(value: unknown): string {
  return typeof value === 'string' && /^[0-9a-fA-F]{64}$/.test(value) ? value.toLowerCase() : '(invalid hash)';
}
