// The payment log's outbox (payment-log.ts): where an entry waits in the
// key-value store while the database is down, shared by every instance, until
// a later write or the scheduled flush puts it in the database.
//
// Built from the store port's atomic primitives only:
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
import type { KeyValueStore } from '../../store/types.js';
import { describeError } from '../../util/describe-error.js';
import type { FlushResult, PaymentLogEntry } from './payment-log-types.js';
import { storedRefusedTopUp, storedSessionRecord, type RefusedTopUpEntry, type SessionRecordEntry } from './session-records.js';

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

// payments.amount_sats is a Postgres integer.
const MAX_AMOUNT_SATS = 2_147_483_647;

/** A payment as it is kept and written: checked, its hash lower-case, its time fixed. */
export interface StoredPayment {
  paymentHash: string;
  endpoint: string;
  amountSats: number;
  ownerAddress: string | null;
  paidAt: string;
  sessionId?: string;
}

/** What the outbox keeps: a payment, a prepaid session's row, or a top-up it refused (session-records.ts). Payments carry no kind, as before sessions. */
export type StoredEntry = StoredPayment | SessionRecordEntry | RefusedTopUpEntry;

export const isSessionRecord = (entry: StoredEntry): entry is SessionRecordEntry => (entry as SessionRecordEntry).kind === 'session';
export const isRefusedTopUp = (entry: StoredEntry): entry is RefusedTopUpEntry => (entry as RefusedTopUpEntry).kind === 'topup-refused';
export const isPayment = (entry: StoredEntry): entry is StoredPayment => !('kind' in entry);

/** Checks an entry and fixes its time (default now); throws TypeError naming what is wrong. */
export function storedEntry(input: PaymentLogEntry): StoredPayment {
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
  const sessionId = input.sessionId === undefined ? undefined : typeof input.sessionId === 'string' ? input.sessionId.toLowerCase() : '';
  if (sessionId !== undefined && !/^[0-9a-f]{64}$/.test(sessionId)) throw new TypeError('sessionId must be 64 hex characters');
  return {
    paymentHash,
    endpoint: input.endpoint,
    amountSats: input.amountSats,
    ownerAddress: owner,
    paidAt: paidAt.toISOString(),
    ...(sessionId && { sessionId }),
  };
}

/** A slot's JSON, checked as a new entry is; undefined when it is not one. */
function parseStoredEntry(value: string): StoredEntry | undefined {
  try {
    const parsed = JSON.parse(value) as PaymentLogEntry | SessionRecordEntry | RefusedTopUpEntry;
    if ((parsed as SessionRecordEntry).kind === 'session') return storedSessionRecord(parsed as SessionRecordEntry);
    if ((parsed as RefusedTopUpEntry).kind === 'topup-refused') return storedRefusedTopUp(parsed as RefusedTopUpEntry);
    return storedEntry(parsed as PaymentLogEntry);
  } catch {
    return undefined;
  }
}

export interface Outbox {
  /** Puts the entry in a slot of its own; throws when the store fails. */
  keep(entry: StoredEntry): Promise<void>;
  /** One pass: writes up to `maxSlots` waiting entries with the outbox's `write`. */
  flush(options?: { maxSlots?: number }): Promise<FlushResult>;
}

export interface OutboxOptions {
  store: KeyValueStore;
  /** Key namespace in the store. */
  prefix: string;
  /** How long an entry waits before it expires. */
  ttlMs: number;
  /** Writes entries to the database: undefined when written, else the error. */
  write(entries: readonly StoredEntry[]): Promise<unknown>;
  log(line: string): void;
}

interface Parts extends OutboxOptions {
  keys: {
    tail: string;
    head: string;
    slot(n: number): string;
    claim(n: number): string;
  };
}

interface SlotState {
  n: number;
  /** Undefined when the slot is done (written, closed, expired or unreadable). */
  entry?: StoredEntry;
}

/** Where a flush pass stands, batch after batch. */
interface FlushProgress {
  written: number;
  pending: number;
  /** Every slot up to this one is done: the new head. */
  doneUpTo: number;
  /** No open slot seen yet (doneUpTo still moves). */
  gapless: boolean;
  scannedTo: number;
  /** Why the pass stopped: the database failed. */
  failure?: unknown;
}

export function createOutbox(options: OutboxOptions): Outbox {
  const { prefix } = options;
  const parts: Parts = {
    ...options,
    keys: {
      tail: `${prefix}tail`,
      head: `${prefix}head`,
      slot: (n) => `${prefix}slot:${n}`,
      claim: (n) => `${prefix}claim:${n}`,
    },
  };
  return {
    keep: (entry) => keep(parts, entry),
    flush: (flushOptions) => flush(parts, flushOptions),
  };
}

async function keep({ store, keys, ttlMs }: Parts, entry: StoredEntry): Promise<void> {
  const value = JSON.stringify(entry);
  for (let attempt = 0; attempt < SLOT_ATTEMPTS; attempt++) {
    const n = await store.incrementBelow(keys.tail, MAX_SLOT, COUNTER_TTL_MS);
    if (n === null) throw new Error('outbox counter is full');
    // A new counter (first use, or the store lost it): flushers must start from slot 1 again.
    if (n === 1) await store.set(keys.head, '0', { ttlMs: COUNTER_TTL_MS });
    // Fails when a flusher closed this slot first: take the next number.
    if (await store.set(keys.slot(n), value, { ifAbsent: true, ttlMs })) return;
  }
  throw new Error(`no free outbox slot after ${SLOT_ATTEMPTS} tries`);
}

async function flush(parts: Parts, { maxSlots = DEFAULT_MAX_SLOTS }: { maxSlots?: number } = {}): Promise<FlushResult> {
  const { store, keys } = parts;
  const [tailValue, headValue] = await Promise.all([store.get(keys.tail), store.get(keys.head)]);
  const tail = counter(tailValue);
  let head = counter(headValue);
  const headLost = head > tail;
  if (headLost) head = 0; // the counter was lost (store flushed): look at every slot again
  const end = Math.min(tail, head + Math.max(1, maxSlots));
  const progress: FlushProgress = { written: 0, pending: 0, doneUpTo: head, gapless: true, scannedTo: head };
  for (let from = head + 1; from <= end && progress.failure === undefined; from += FLUSH_BATCH) {
    await flushBatch(parts, range(from, Math.min(end, from + FLUSH_BATCH - 1)), progress);
  }
  progress.pending += tail - progress.scannedTo;

  if (headLost || (progress.doneUpTo > head && counter(await store.get(keys.head)) < progress.doneUpTo)) {
    await store.set(keys.head, String(progress.doneUpTo), { ttlMs: COUNTER_TTL_MS });
  }
  const { written, pending, failure } = progress;
  if (failure !== undefined) return { written, pending, error: describeError(failure) };
  return { written, pending };
}

/** Reads the slots, writes the entries this flusher claims, and counts what is done and what still waits. */
async function flushBatch(parts: Parts, slots: number[], progress: FlushProgress): Promise<void> {
  const { store, keys, write } = parts;
  const states = await Promise.all(slots.map((n) => readSlot(parts, n)));
  const open = states.filter((s) => s.entry);
  const claimed = await Promise.all(open.map((s) => store.set(keys.claim(s.n), '1', { ifAbsent: true, ttlMs: CLAIM_TTL_MS })));
  const mine = open.filter((_, i) => claimed[i]);
  const writtenNow = new Set<number>();
  if (mine.length > 0) {
    progress.failure = await write(mine.map((s) => s.entry!));
    if (progress.failure === undefined) {
      await Promise.all(mine.map((s) => store.set(keys.slot(s.n), DONE, { ttlMs: DONE_TTL_MS })));
      for (const s of mine) writtenNow.add(s.n);
      progress.written += mine.length;
    } else {
      // Let the next flusher try them at once rather than after the claim expires.
      await Promise.all(mine.map((s) => store.del(keys.claim(s.n)).catch(() => 0)));
    }
  }
  for (const s of states) {
    const done = !s.entry || writtenNow.has(s.n);
    if (done && progress.gapless) progress.doneUpTo = s.n;
    else progress.gapless = false;
    if (!done) progress.pending += 1;
  }
  progress.scannedTo = slots.at(-1) ?? progress.scannedTo;
}

async function readSlot({ store, keys, log }: Parts, n: number): Promise<SlotState> {
  let value = await store.get(keys.slot(n));
  if (value === null) {
    // Empty: closed now, unless its writer fills it first (then read what it wrote).
    if (await store.set(keys.slot(n), DONE, { ifAbsent: true, ttlMs: DONE_TTL_MS })) return { n };
    value = await store.get(keys.slot(n));
  }
  if (value === null || value === DONE) return { n };
  const entry = parseStoredEntry(value);
  if (!entry) {
    log(`[payment-log] outbox slot ${n} holds an unreadable entry; skipped: ${value.slice(0, 300)}`);
    return { n };
  }
  return { n, entry };
}

function counter(value: string | null): number {
  const n = value === null ? 0 : Number(value);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
