// The payment log (docs/architecture.md "The hosted interface's records"): each paid request's
// payment hash, endpoint, amount and owner go to the `payments` table off the
// request path, so the paid answer never waits for the database.
//
// Nothing lost, nothing written twice:
// - Rows are keyed on the payment hash (INSERT … ON CONFLICT DO NOTHING), so a
//   retry, a flush racing a late write, or two flushers can never add a row twice.
// - A write that fails is retried briefly. If the database stays down, the
//   entry waits in the key-value store (the outbox, below) for days and is
//   written by the next successful write of any instance or by the scheduled
//   flush (api/cron/flush-payments.ts).
// - If the key-value store is down as well, the entry goes to stderr as one
//   line (it holds nothing secret), which is the last place it can be kept.
// The preimage never reaches this module: a Payment does not carry it.
//
// The outbox, built from the store port's atomic primitives only:
//   <prefix>tail        counter: the last slot number handed out (incrementBelow)
//   <prefix>head        every slot up to this one is done (a hint flushers move on)
//   <prefix>slot:<n>    one waiting entry (JSON), or DONE once written or abandoned
//   <prefix>claim:<n>   a flusher's claim on slot n while it writes it (set-if-absent)
// A writer takes a number from the counter, then fills the slot with
// set-if-absent. A flusher that finds a slot empty closes it the same way
// (set-if-absent DONE): either the writer got there first and the flusher
// reads its entry, or the slot is closed and the writer, whose set now fails,
// takes the next number. So a slot is never passed over while its entry is on
// the way. Flushers claim slots with set-if-absent before writing them, so
// concurrent flushers split the work instead of repeating it.
import { waitUntil as vercelWaitUntil } from '@vercel/functions';
import { DatabaseUnavailable, type Database } from '../../db/index.js';
import type { Payment } from 'l402-paywall';
import type { KeyValueStore } from '../../store/types.js';
import type { ServiceContext } from '../context.js';
import { sleep, withTimeout } from '../../util/async.js';
import { describeError } from '../../util/describe-error.js';

/** One paid request, as logged. */
export interface PaymentLogEntry {
  paymentHash: string;
  endpoint: string;
  /** Whole satoshis (prices are whole satoshis, so amountMsat / 1000 is exact). */
  amountSats: number;
  /** The Lightning Address the payment was for, when the endpoint has an owner. */
  ownerAddress?: string | null;
  /** When the request was paid; default now. Kept with the entry, so a late write keeps the true time. */
  paidAt?: Date | string;
}

/** What became of one entry. */
export type RecordOutcome =
  /** In the database. */
  | 'written'
  /** In the outbox, to be written when the database is back. */
  | 'kept'
  /** Database and key-value store both failed: only the stderr line holds it. */
  | 'dropped';

export interface FlushResult {
  /** Outbox entries now in the database (rows already present count: they are written). */
  written: number;
  /** Entries still waiting (including ones other flushers hold right now). */
  pending: number;
  /** Why the flush stopped early (the database failed), without secrets. */
  error?: string;
}

export interface PaymentLog {
  /** For withL402's `onPaid`: logs in the background (kept alive with waitUntil); never throws. */
  onPaid(payment: Payment, request: Request, response?: Response): void;
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

const DONE = 'done';
const MAX_SLOT = Number.MAX_SAFE_INTEGER;
// The counter and head live as long as the deployment; Redis wants an expiry anyway.
const COUNTER_TTL_MS = 10 * 365 * 86_400_000;
const DONE_TTL_MS = 86_400_000;
// Longer than a flusher can spend on one batch (attempts x timeout + pauses).
const CLAIM_TTL_MS = 60_000;
const FLUSH_BATCH = 100;
const DEFAULT_MAX_SLOTS = 1000;
// A taken slot means a flusher closed it (one or two retries at most) or, after
// the store lost the counter but kept old slots, an old entry or DONE marker:
// then the first writers walk past them, and later ones start beyond.
const SLOT_ATTEMPTS = 1000;
// After a failed write, later writes try once instead of retrying, for this long.
const DOWN_GRACE_MS = 5_000;
const KEPT_LOG_INTERVAL_MS = 10_000;
const MIN_FLUSH_SPACING_MS = 1_000;
// payments.amount_sats is a Postgres integer.
const MAX_AMOUNT_SATS = 2_147_483_647;

interface StoredEntry {
  paymentHash: string;
  endpoint: string;
  amountSats: number;
  ownerAddress: string | null;
  paidAt: string;
}

interface SlotState {
  n: number;
  /** Undefined when the slot is done (written, closed, expired or unreadable). */
  entry?: StoredEntry;
}

class WriteTimeout extends Error {
  override readonly name = 'WriteTimeout';
}

export function createPaymentLog(options: PaymentLogOptions): PaymentLog {
  const { database, store } = options;
  const retryDelays = options.retryDelaysMs ?? [100, 400];
  const attemptTimeoutMs = options.attemptTimeoutMs ?? 3_000;
  const retryBudgetMs = options.retryBudgetMs ?? 5_000;
  const outboxTtlMs = options.outboxTtlMs ?? 7 * 86_400_000;
  const checkIntervalMs = options.outboxCheckIntervalMs ?? 10_000;
  const prefix = options.keyPrefix ?? 'paylog:';
  const log = options.log ?? ((line: string) => console.error(line));
  const keys = {
    tail: `${prefix}tail`,
    head: `${prefix}head`,
    slot: (n: number) => `${prefix}slot:${n}`,
    claim: (n: number) => `${prefix}claim:${n}`,
  };

  let downUntil = 0;
  // True while this instance knows it left entries in the outbox; `kept` counts
  // them, so a flush that started before the latest one cannot clear the flag.
  let keptHere = false;
  let kept = 0;
  let lastOutboxCheck = 0;
  let backgroundFlush: Promise<unknown> | undefined;
  let keptSinceLog = 0;
  let lastKeptLog = 0;

  function keepAlive(promise: Promise<unknown>): void {
    if (!options.waitUntil) return;
    try {
      options.waitUntil(promise);
    } catch (error) {
      log(`[payment-log] waitUntil failed: ${describeError(error)}`);
    }
  }

  async function insert(entries: readonly StoredEntry[]): Promise<void> {
    const unique = [...new Map(entries.map((e) => [e.paymentHash, e])).values()];
    const params: unknown[] = [];
    const rows = unique.map((e) => {
      const i = params.length;
      params.push(e.paymentHash, e.endpoint, e.amountSats, e.ownerAddress, e.paidAt);
      return `($${i + 1}, $${i + 2}, $${i + 3}, $${i + 4}, $${i + 5}::timestamptz)`;
    });
    const db = await database();
    await db.query(
      `INSERT INTO payments (payment_hash, endpoint, amount_sats, owner_address, paid_at) VALUES ${rows.join(', ')} ON CONFLICT (payment_hash) DO NOTHING`,
      params,
    );
  }

  /** Undefined when written; otherwise the last error. */
  async function writeWithRetries(entries: readonly StoredEntry[]): Promise<unknown> {
    // While the database is known to be down, one attempt is enough: the entry is kept anyway.
    const attempts = Date.now() < downUntil ? 1 : retryDelays.length + 1;
    const started = Date.now();
    let failure: unknown;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) {
        const pause = retryDelays[attempt - 1] ?? 0;
        if (Date.now() + pause - started >= retryBudgetMs) break;
        await sleep(pause);
      }
      try {
        await withTimeout(insert(entries), attemptTimeoutMs, () => new WriteTimeout(`no answer from the database within ${attemptTimeoutMs} ms`));
        downUntil = 0;
        return undefined;
      } catch (error) {
        failure = error;
        if (!isTransient(error)) break;
      }
    }
    downUntil = Date.now() + DOWN_GRACE_MS;
    return failure ?? new Error('write failed');
  }

  async function keep(entry: StoredEntry): Promise<void> {
    const value = JSON.stringify(entry);
    for (let attempt = 0; attempt < SLOT_ATTEMPTS; attempt++) {
      const n = await store.incrementBelow(keys.tail, MAX_SLOT, COUNTER_TTL_MS);
      if (n === null) throw new Error('outbox counter is full');
      // A new counter (first use, or the store lost it): flushers must start from slot 1 again.
      if (n === 1) await store.set(keys.head, '0', { ttlMs: COUNTER_TTL_MS });
      // Fails when a flusher closed this slot first: take the next number.
      if (await store.set(keys.slot(n), value, { ifAbsent: true, ttlMs: outboxTtlMs })) return;
    }
    throw new Error(`no free outbox slot after ${SLOT_ATTEMPTS} tries`);
  }

  function noteKept(dbError: unknown): void {
    keptSinceLog += 1;
    const now = Date.now();
    if (now - lastKeptLog < KEPT_LOG_INTERVAL_MS) return;
    log(`[payment-log] database write failed (${describeError(dbError)}); ${keptSinceLog} payment(s) kept in the key-value store until it can be written`);
    lastKeptLog = now;
    keptSinceLog = 0;
  }

  async function record(input: PaymentLogEntry): Promise<RecordOutcome> {
    const entry = normalise(input);
    const dbError = await writeWithRetries([entry]);
    if (dbError === undefined) {
      flushSoon();
      return 'written';
    }
    try {
      await keep(entry);
    } catch (storeError) {
      log(`[payment-log] payment NOT logged: database (${describeError(dbError)}) and key-value store (${describeError(storeError)}) both failed; entry, to be written by hand: ${JSON.stringify(entry)}`);
      return 'dropped';
    }
    keptHere = true;
    kept += 1;
    noteKept(dbError);
    return 'kept';
  }

  // After a successful write: write what this instance kept at once, and now
  // and then look for what other instances kept.
  function flushSoon(): void {
    if (backgroundFlush) return;
    const now = Date.now();
    const since = now - lastOutboxCheck;
    if (since < MIN_FLUSH_SPACING_MS || (!keptHere && since < checkIntervalMs)) return;
    lastOutboxCheck = now;
    const keptBefore = kept;
    backgroundFlush = flush()
      .then((result) => {
        if (kept === keptBefore) keptHere = result.pending > 0;
      })
      .catch((error) => log(`[payment-log] outbox flush failed: ${describeError(error)}`))
      .finally(() => {
        backgroundFlush = undefined;
      });
    keepAlive(backgroundFlush);
  }

  async function readSlot(n: number): Promise<SlotState> {
    let value = await store.get(keys.slot(n));
    if (value === null) {
      // Empty: closed now, unless its writer fills it first (then read what it wrote).
      if (await store.set(keys.slot(n), DONE, { ifAbsent: true, ttlMs: DONE_TTL_MS })) return { n };
      value = await store.get(keys.slot(n));
    }
    if (value === null || value === DONE) return { n };
    const entry = parseStored(value);
    if (!entry) {
      log(`[payment-log] outbox slot ${n} holds an unreadable entry; skipped: ${value.slice(0, 300)}`);
      return { n };
    }
    return { n, entry };
  }

  async function flush({ maxSlots = DEFAULT_MAX_SLOTS }: { maxSlots?: number } = {}): Promise<FlushResult> {
    const [tailValue, headValue] = await Promise.all([store.get(keys.tail), store.get(keys.head)]);
    const tail = counter(tailValue);
    let head = counter(headValue);
    const headLost = head > tail;
    if (headLost) head = 0; // the counter was lost (store flushed): look at every slot again
    const end = Math.min(tail, head + Math.max(1, maxSlots));
    let written = 0;
    let pending = 0;
    let doneUpTo = head;
    let gapless = true;
    let scannedTo = head;
    let failure: unknown;

    for (let from = head + 1; from <= end && failure === undefined; from += FLUSH_BATCH) {
      const to = Math.min(end, from + FLUSH_BATCH - 1);
      const states = await Promise.all(range(from, to).map(readSlot));
      const open = states.filter((s) => s.entry);
      const claimed = await Promise.all(open.map((s) => store.set(keys.claim(s.n), '1', { ifAbsent: true, ttlMs: CLAIM_TTL_MS })));
      const mine = open.filter((_, i) => claimed[i]);
      const writtenNow = new Set<number>();
      if (mine.length > 0) {
        failure = await writeWithRetries(mine.map((s) => s.entry!));
        if (failure === undefined) {
          await Promise.all(mine.map((s) => store.set(keys.slot(s.n), DONE, { ttlMs: DONE_TTL_MS })));
          for (const s of mine) writtenNow.add(s.n);
          written += mine.length;
        } else {
          // Let the next flusher try them at once rather than after the claim expires.
          await Promise.all(mine.map((s) => store.del(keys.claim(s.n)).catch(() => 0)));
        }
      }
      for (const s of states) {
        const done = !s.entry || writtenNow.has(s.n);
        if (done && gapless) doneUpTo = s.n;
        else gapless = false;
        if (!done) pending += 1;
      }
      scannedTo = to;
    }
    pending += tail - scannedTo;

    if (headLost || (doneUpTo > head && counter(await store.get(keys.head)) < doneUpTo)) {
      await store.set(keys.head, String(doneUpTo), { ttlMs: COUNTER_TTL_MS });
    }
    if (failure !== undefined) return { written, pending, error: describeError(failure) };
    return { written, pending };
  }

  async function drain({ budgetMs = 20_000 }: { budgetMs?: number } = {}): Promise<FlushResult> {
    const deadline = Date.now() + budgetMs;
    let written = 0;
    for (;;) {
      const result = await flush();
      written += result.written;
      if (result.error !== undefined || result.pending === 0 || result.written === 0 || Date.now() >= deadline) {
        return { ...result, written };
      }
    }
  }

  return {
    onPaid(payment, request) {
      let entry: PaymentLogEntry;
      try {
        entry = {
          paymentHash: payment.paymentHash,
          endpoint: payment.route,
          amountSats: Math.floor(payment.amountMsat / 1000),
          ownerAddress: options.ownerOf?.(payment, request) ?? null,
          paidAt: new Date(),
        };
      } catch (error) {
        log(`[payment-log] could not describe payment ${safeHash(payment.paymentHash)}: ${describeError(error)}`);
        return;
      }
      keepAlive(record(entry).catch((error) => log(`[payment-log] payment ${safeHash(payment.paymentHash)} not logged: ${describeError(error)}`)));
    },
    record,
    flush,
    drain,
  };
}

const logs = new WeakMap<ServiceContext, PaymentLog | null>();

/**
 * The service's payment log, one per service context: undefined when no
 * database is configured (then nothing is logged). On Vercel the background
 * write is kept alive with waitUntil; elsewhere waitUntil does nothing and
 * the process simply runs the write to its end.
 */
export function servicePaymentLog(ctx: ServiceContext): PaymentLog | undefined {
  let paymentLog = logs.get(ctx);
  if (paymentLog === undefined) {
    paymentLog = ctx.config.database ? createPaymentLog({ database: () => ctx.database(), store: ctx.store, waitUntil: vercelWaitUntil }) : null;
    logs.set(ctx, paymentLog);
  }
  return paymentLog ?? undefined;
}

function normalise(input: PaymentLogEntry): StoredEntry {
  const paymentHash = typeof input.paymentHash === 'string' ? input.paymentHash.toLowerCase() : '';
  if (!/^[0-9a-f]{64}$/.test(paymentHash)) throw new TypeError('paymentHash must be 64 hex characters');
  if (typeof input.endpoint !== 'string' || input.endpoint.length > 2048) throw new TypeError('endpoint must be a string of at most 2048 characters');
  if (!Number.isSafeInteger(input.amountSats) || input.amountSats < 0 || input.amountSats > MAX_AMOUNT_SATS) {
    throw new TypeError(`amountSats must be a whole number from 0 to ${MAX_AMOUNT_SATS}`);
  }
  const owner = input.ownerAddress ?? null;
  if (owner !== null && (typeof owner !== 'string' || owner.length > 320)) throw new TypeError('ownerAddress must be a string of at most 320 characters');
  const paidAt = input.paidAt === undefined ? new Date() : new Date(input.paidAt);
  if (Number.isNaN(paidAt.getTime())) throw new TypeError('paidAt must be a valid date');
  return { paymentHash, endpoint: input.endpoint, amountSats: input.amountSats, ownerAddress: owner, paidAt: paidAt.toISOString() };
}

function parseStored(value: string): StoredEntry | undefined {
  try {
    return normalise(JSON.parse(value) as PaymentLogEntry);
  } catch {
    return undefined;
  }
}

// Connection trouble, timeouts and "try again" answers; anything else (a
// missing table, say) will not pass on a retry a moment later.
const TRANSIENT_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', '57P01', '57P02', '57P03', '53300', '40001', '40P01']);

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

function counter(value: string | null): number {
  const n = value === null ? 0 : Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

