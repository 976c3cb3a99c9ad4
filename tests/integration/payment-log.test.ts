// The payment log (lib/service/records/payment-log.ts): paid requests are logged off
// the request path, nothing is lost while the database is down, nothing is
// written twice, and the preimage is stored nowhere. The log itself runs
// against PGlite and, when one is reachable, a real PostgreSQL server, with
// the in-memory store and (when Redis is reachable) the Upstash store; the
// hosted demo is driven over HTTP through the real dev server.
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createDatabase, DatabaseUnavailable, migrate, type Database, type DatabaseConfig, type Row } from '../../lib/db/index.js';
import type { Payment } from 'l402-paywall';
import { createPaymentLog, servicePaymentLog, type PaymentLog, type PaymentLogEntry, type PaymentLogOptions } from '../../lib/service/records/payment-log.js';
import { createMemoryStore, createUpstashStore } from '../../lib/store/index.js';
import type { KeyValueStore, SetOptions } from '../../lib/store/types.js';
import { newPreimage } from '../../packages/l402-paywall/tests/support/l402.js';
import { createTestDatabase, postgresReachable, TEST_DATABASE_URL } from '../support/postgres.js';
import { REDIS_URL, redisReachable } from '../../packages/l402-paywall/tests/support/redis.js';
import { payDemoChallenge, useDevServer } from '../support/server.js';
import type { SessionObservation } from 'l402-paywall/lightning';
import { createBudget, createSessions, devWallet, fetchWithL402 } from 'l402-paywall/client';
import { statsReader } from '../support/stats.js';
import { paymentStats } from '../../lib/service/records/stats-queries.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function waitFor<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(value)}`);
    await sleep(20);
  }
}

// ---------------------------------------------------------------------------
// Databases, with the schema the migrations make: in-memory PGlite, and a
// database of its own on the real server when one is reachable (dropped after).

async function openMigrated(config: DatabaseConfig): Promise<Database> {
  const db = await createDatabase(config);
  await migrate(db);
  return db;
}

const postgresSkip = (await postgresReachable()) ? undefined : `no PostgreSQL at ${TEST_DATABASE_URL.replace(/\/\/[^@/]*@/, '//')}; set TEST_DATABASE_URL`;
if (postgresSkip) console.warn(`payment log on real PostgreSQL skipped: ${postgresSkip}`);
const scratch = postgresSkip ? undefined : await createTestDatabase();
const postgres = scratch ? await openMigrated({ url: scratch.url }) : undefined;

const redisUp = await redisReachable(REDIS_URL);
if (!redisUp) console.warn(`payment log on the Upstash store skipped: no Redis at ${REDIS_URL}; set REDIS_URL`);
let upstash: UpstashRestServer | undefined;
const pglite = await openMigrated({ pgliteDir: null });

beforeAll(async () => {
  if (redisUp) upstash = await startUpstashRestServer({ redisUrl: REDIS_URL, token: `t-${randomUUID()}` });
});

afterAll(async () => {
  await upstash?.close();
  await pglite.close();
  await postgres?.close();
  await scratch?.drop();
});

// ---------------------------------------------------------------------------
// Fault injection

interface FaultyDatabase {
  db: Database;
  /** Every query rejects with DatabaseUnavailable while set. */
  down: boolean;
  /** The next this many queries reject with DatabaseUnavailable. */
  failNext: number;
  /** Each query waits this long first (then runs, whatever the caller gave up on). */
  delayMs: number;
  /** While set, each query waits for it first: a database that has not answered yet, for as long as the test says. */
  held?: Promise<void>;
  /** Thrown by every query while set (instead of DatabaseUnavailable). */
  error?: Error;
  /** Queries attempted. */
  queries: number;
}

function faulty(inner: Database): FaultyDatabase {
  const state: FaultyDatabase = {
    down: false,
    failNext: 0,
    delayMs: 0,
    queries: 0,
    db: {
      kind: inner.kind,
      async query<T extends Row = Row>(text: string, params?: readonly unknown[]) {
        state.queries += 1;
        if (state.delayMs > 0) await sleep(state.delayMs);
        if (state.held) await state.held;
        if (state.error) throw state.error;
        if (state.down) throw new DatabaseUnavailable('database unreachable (test)');
        if (state.failNext > 0) {
          state.failNext -= 1;
          throw new DatabaseUnavailable('connection reset (test)');
        }
        return inner.query<T>(text, params);
      },
      transaction: (work) => (state.down ? Promise.reject(new DatabaseUnavailable('database unreachable (test)')) : inner.transaction(work)),
      exec: (script, tx) => (state.down ? Promise.reject(new DatabaseUnavailable('database unreachable (test)')) : inner.exec(script, tx)),
      close: async () => {},
    },
  };
  return state;
}

interface RecordingStore extends KeyValueStore {
  /** Every value ever set, by key. */
  written: [string, string][];
  /** Operations on keys starting with this reject (a store outage for those keys). */
  failPrefix?: string;
  /** Runs before each set (tests use it to interleave a flusher). */
  beforeSet?: (key: string, value: string, options?: SetOptions) => Promise<void>;
}

function recording(inner: KeyValueStore): RecordingStore {
  const check = (key: string) => {
    if (store.failPrefix !== undefined && key.startsWith(store.failPrefix)) throw new Error('key-value store unreachable (test)');
  };
  const store: RecordingStore = {
    kind: inner.kind,
    written: [],
    async get(key) {
      check(key);
      return inner.get(key);
    },
    async set(key, value, options) {
      check(key);
      const hook = store.beforeSet;
      if (hook) await hook(key, value, options);
      store.written.push([key, value]);
      return inner.set(key, value, options);
    },
    async del(key) {
      check(key);
      return inner.del(key);
    },
    async incrementBelow(key, max, ttlMs) {
      check(key);
      return inner.incrementBelow(key, max, ttlMs);
    },
    async decrementToZero(key) {
      check(key);
      return inner.decrementToZero(key);
    },
    async incrementBy(key, delta) {
      check(key);
      return inner.incrementBy(key, delta);
    },
    async claimUse(key, maxUses, expiresAt, attempt) {
      check(key);
      return inner.claimUse(key, maxUses, expiresAt, attempt);
    },
    async releaseUse(key, attempt, expiresAt) {
      check(key);
      return inner.releaseUse(key, attempt, expiresAt);
    },
    async usesHeld(key) {
      check(key);
      return inner.usesHeld(key);
    },
  };
  return store;
}

// ---------------------------------------------------------------------------
// Helpers

interface PaymentRow extends Row {
  payment_hash: string;
  endpoint: string | null;
  amount_sats: number | null;
  owner_address: string | null;
  paid_at: Date;
}

const rows = (db: Database) => db.query<PaymentRow>('SELECT payment_hash, endpoint, amount_sats, owner_address, paid_at FROM payments ORDER BY payment_hash');
const rowCount = async (db: Database) => Number((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments'))[0]!.n);
const allRowText = async (db: Database) => (await db.query<{ t: string }>('SELECT row_to_json(p)::text AS t FROM payments p')).map((r) => r.t).join('\n');

function paidEntry(overrides: Partial<PaymentLogEntry> = {}): PaymentLogEntry & { preimage: string } {
  const { preimage, hash } = newPreimage();
  return { paymentHash: hash, endpoint: '/api/paid', amountSats: 21, ownerAddress: 'alice@example.com', ...overrides, preimage };
}

/** What a caller passes: never the preimage (the helper keeps it only to look for it). */
const entryOf = ({ preimage: _preimage, ...entry }: PaymentLogEntry & { preimage: string }): PaymentLogEntry => entry;

/** Every hash appears exactly once, and nothing else is there. */
async function expectExactlyOnce(db: Database, hashes: string[]): Promise<void> {
  const found = (await rows(db)).map((r) => r.payment_hash);
  expect(found).toHaveLength(hashes.length);
  expect(new Set(found)).toEqual(new Set(hashes));
}

// ---------------------------------------------------------------------------
// The log itself, on every database and store at hand

interface Setup {
  name: string;
  skip?: string;
  database: () => Database;
  store: () => KeyValueStore;
}

const setups: Setup[] = [
  { name: 'PGlite, memory store', database: () => pglite, store: createMemoryStore },
  { name: 'PostgreSQL, memory store', skip: postgresSkip, database: () => postgres!, store: createMemoryStore },
  {
    name: 'PGlite, Upstash store on Redis',
    skip: redisUp ? undefined : `no Redis at ${REDIS_URL}`,
    database: () => pglite,
    store: () => createUpstashStore({ url: upstash!.url, token: upstash!.token }),
  },
  {
    name: 'PostgreSQL, Upstash store on Redis',
    skip: postgresSkip ?? (redisUp ? undefined : `no Redis at ${REDIS_URL}`),
    database: () => postgres!,
    store: () => createUpstashStore({ url: upstash!.url, token: upstash!.token }),
  },
];

for (const setup of setups) {
  describe.skipIf(setup.skip !== undefined)(`payment log (${setup.name})${setup.skip ? ` [SKIPPED: ${setup.skip}]` : ''}`, () => {
    let db: FaultyDatabase;
    let store: RecordingStore;
    let lines: string[];
    let keyPrefix: string;

    // Checks read the database itself, past the faults.
    const real = () => setup.database();
    const instance = (options: Partial<PaymentLogOptions> = {}): PaymentLog =>
      createPaymentLog({
        database: async () => db.db,
        store,
        keyPrefix,
        retryDelaysMs: [5, 10],
        attemptTimeoutMs: 2_000,
        log: (line) => lines.push(line),
        ...options,
      });

    beforeEach(async () => {
      await setup.database().query('TRUNCATE payments');
      db = faulty(setup.database());
      store = recording(setup.store());
      lines = [];
      // Runs share one Redis: every key of a test lives under its own prefix.
      keyPrefix = `test:paylog:${randomUUID()}:`;
    });

    it('writes each payment once, whatever the retries and repeats', async () => {
      const log = instance();
      const entry = paidEntry({ paidAt: new Date('2026-01-02T03:04:05.678Z') });
      expect(await log.record(entryOf(entry))).toBe('written');
      const again = await Promise.all(Array.from({ length: 5 }, () => log.record(entryOf(entry))));
      expect(again).toEqual(Array(5).fill('written'));
      expect(await rows(real())).toEqual([
        {
          payment_hash: entry.paymentHash,
          endpoint: '/api/paid',
          amount_sats: 21,
          owner_address: 'alice@example.com',
          paid_at: new Date('2026-01-02T03:04:05.678Z'),
        },
      ]);
    });

    it('retries a failed write; when a retry succeeds nothing is kept', async () => {
      const log = instance();
      db.failNext = 2;
      const entry = paidEntry();
      expect(await log.record(entryOf(entry))).toBe('written');
      expect(db.queries).toBe(3);
      await expectExactlyOnce(real(), [entry.paymentHash]);
      expect(await store.get(`${keyPrefix}tail`)).toBeNull();
    });

    it('keeps payments while the database is down and writes each exactly once when it is back', async () => {
      const log = instance();
      db.down = true;
      const entries = Array.from({ length: 25 }, () => paidEntry());
      expect(await Promise.all(entries.map((e) => log.record(entryOf(e))))).toEqual(Array(25).fill('kept'));
      expect(await rowCount(real())).toBe(0);
      expect(await log.flush()).toMatchObject({ written: 0, pending: 25, error: expect.stringContaining('DatabaseUnavailable') });

      db.down = false;
      expect(await log.flush()).toEqual({ written: 25, pending: 0 });
      await expectExactlyOnce(
        real(),
        entries.map((e) => e.paymentHash),
      );
      expect(await log.flush()).toEqual({ written: 0, pending: 0 });
      // Everything is done up to the last slot: the next flush reads nothing.
      expect(await store.get(`${keyPrefix}head`)).toBe(await store.get(`${keyPrefix}tail`));
      expect(lines.join('\n')).toContain('kept in the key-value store');
    });

    it('concurrent flushers share the work: every payment written exactly once', async () => {
      db.down = true;
      const entries = Array.from({ length: 60 }, () => paidEntry());
      const a = instance();
      await Promise.all(entries.map((e) => a.record(entryOf(e))));
      db.down = false;
      const b = instance();
      const c = instance();
      const results = await Promise.all([a.flush(), b.flush(), b.flush(), c.flush()]);
      // Claims are exclusive: no entry was written by two flushers.
      expect(results.reduce((sum, r) => sum + r.written, 0)).toBe(60);
      await expectExactlyOnce(
        real(),
        entries.map((e) => e.paymentHash),
      );
      expect(await c.flush()).toEqual({ written: 0, pending: 0 });
    });

    it('the next successful write flushes what was kept', async () => {
      const log = instance();
      db.down = true;
      const kept = Array.from({ length: 10 }, () => paidEntry());
      await Promise.all(kept.map((e) => log.record(entryOf(e))));
      db.down = false;
      const next = paidEntry();
      expect(await log.record(entryOf(next))).toBe('written');
      await waitFor(
        'the kept payments',
        () => rowCount(real()),
        (n) => n === 11,
      );
      await expectExactlyOnce(
        real(),
        [...kept, next].map((e) => e.paymentHash),
      );
    });

    it("another instance's next write finds what this one kept", async () => {
      db.down = true;
      const kept = Array.from({ length: 5 }, () => paidEntry());
      const first = instance();
      await Promise.all(kept.map((e) => first.record(entryOf(e))));
      db.down = false;
      const other = instance();
      const next = paidEntry();
      expect(await other.record(entryOf(next))).toBe('written');
      await waitFor(
        'the kept payments',
        () => rowCount(real()),
        (n) => n === 6,
      );
      await expectExactlyOnce(
        real(),
        [...kept, next].map((e) => e.paymentHash),
      );
    });

    it('a write that times out is kept; its late success and the flush still leave one row', async () => {
      const log = instance({ attemptTimeoutMs: 100, retryDelaysMs: [5] });
      db.delayMs = 400;
      const entry = paidEntry();
      expect(await log.record(entryOf(entry))).toBe('kept');
      // Both timed-out attempts still reach the database afterwards.
      await waitFor(
        'the late writes',
        () => rowCount(real()),
        (n) => n === 1,
      );
      await sleep(450);
      db.delayMs = 0;
      expect(await log.flush()).toEqual({ written: 1, pending: 0 });
      await expectExactlyOnce(real(), [entry.paymentHash]);
    });

    it('keeps the time of payment, not the time of the late write', async () => {
      const log = instance();
      db.down = true;
      const paidAt = new Date(Date.now() - 3 * 3_600_000);
      const entry = paidEntry({ paidAt });
      await log.record(entryOf(entry));
      db.down = false;
      await log.flush();
      expect((await rows(real()))[0]?.paid_at).toEqual(paidAt);
    });

    it('a writer whose slot a flusher closed first takes the next slot', async () => {
      const writer = instance();
      const flusher = instance();
      db.down = true;
      let interleaved = false;
      store.beforeSet = async (key, value) => {
        if (interleaved || !key.startsWith(`${keyPrefix}slot:`) || value === 'done') return;
        interleaved = true;
        // The number is taken, the slot still empty: the flusher closes it.
        expect(await flusher.flush()).toEqual({ written: 0, pending: 0 });
      };
      const entry = paidEntry();
      expect(await writer.record(entryOf(entry))).toBe('kept');
      expect(interleaved).toBe(true);
      expect(await store.get(`${keyPrefix}tail`)).toBe('2');
      db.down = false;
      expect(await flusher.flush()).toEqual({ written: 1, pending: 0 });
      await expectExactlyOnce(real(), [entry.paymentHash]);
    });

    it('a store that lost the counter but kept old slots loses no payment', async () => {
      const log = instance();
      db.down = true;
      const before = Array.from({ length: 5 }, () => paidEntry());
      await Promise.all(before.map((e) => log.record(entryOf(e))));
      const waiting = paidEntry();
      await store.del(`${keyPrefix}tail`);
      // Slot 1 onwards hold entries still; the next numbers handed out are taken.
      expect(await log.record(entryOf(waiting))).toBe('kept');
      expect(await store.get(`${keyPrefix}tail`)).toBe('6');
      db.down = false;
      expect(await log.flush()).toEqual({ written: 6, pending: 0 });
      await expectExactlyOnce(
        real(),
        [...before, waiting].map((e) => e.paymentHash),
      );

      // Lost again after a flush: DONE markers are in the way, and the head is past the new tail.
      db.down = true;
      await store.del(`${keyPrefix}tail`);
      const after = Array.from({ length: 3 }, () => paidEntry());
      for (const e of after) expect(await log.record(entryOf(e))).toBe('kept');
      db.down = false;
      expect(await log.flush()).toEqual({ written: 3, pending: 0 });
      await expectExactlyOnce(
        real(),
        [...before, waiting, ...after].map((e) => e.paymentHash),
      );
    });

    it('flushes a big outbox over several passes', async () => {
      const log = instance();
      db.down = true;
      const entries = Array.from({ length: 120 }, () => paidEntry());
      await Promise.all(entries.map((e) => log.record(entryOf(e))));
      db.down = false;
      expect(await log.flush({ maxSlots: 50 })).toEqual({ written: 50, pending: 70 });
      expect(await log.flush({ maxSlots: 50 })).toEqual({ written: 50, pending: 20 });
      expect(await log.drain()).toEqual({ written: 20, pending: 0 });
      await expectExactlyOnce(
        real(),
        entries.map((e) => e.paymentHash),
      );
    });

    it('stores the preimage nowhere: not in rows, stored values or log lines', async () => {
      const log = instance();
      const payments = Array.from({ length: 6 }, () => paidEntry());
      const asPayment = (e: (typeof payments)[number]): Payment => ({ paymentHash: e.paymentHash, route: '/api/paid', amountMsat: 21_000 });
      const request = (e: (typeof payments)[number]) => new Request('https://api.example/api/paid', { headers: { authorization: `L402 token:${e.preimage}` } });
      db.down = true;
      for (const p of payments.slice(0, 3)) log.onPaid(asPayment(p), request(p), new Response('ok'));
      await waitFor(
        'kept entries',
        async () => store.written.filter(([k, v]) => k.includes('slot:') && v !== 'done').length,
        (n) => n === 3,
      );
      db.down = false;
      for (const p of payments.slice(3)) log.onPaid(asPayment(p), request(p), new Response('ok'));
      await waitFor(
        'all rows',
        () => rowCount(real()),
        (n) => n === 6,
      );
      const everything = [await allRowText(real()), ...store.written.map(([k, v]) => `${k}=${v}`), ...lines].join('\n');
      for (const p of payments) {
        expect(everything).toContain(p.paymentHash);
        expect(everything).not.toContain(p.preimage);
      }
      expect((await rows(real())).map((r) => r.amount_sats)).toEqual(Array(6).fill(21));
    });
  });
}

// ---------------------------------------------------------------------------
// Prepaid sessions: deposits and top-ups are payments, spending and refunds the session's row

interface SessionRow extends Row {
  session_id: string;
  endpoint: string | null;
  unit_price_msat: number;
  paid_msat: number;
  spent_msat: number;
  closed_because: string | null;
  refund_msat: number;
  refund_state: string | null;
  refund_attempts: number;
  refund_error: string | null;
  refund_reason: string | null;
  settled: boolean;
}

const sessionRows = (db: Database) =>
  db.query<SessionRow>(
    `SELECT session_id, endpoint, unit_price_msat::int8 AS unit_price_msat, paid_msat::int8 AS paid_msat, spent_msat::int8 AS spent_msat, closed_because,
            refund_msat::int8 AS refund_msat, refund_state, refund_attempts, refund_error, refund_reason, refund_settled_at IS NOT NULL AS settled
     FROM payment_sessions ORDER BY session_id`,
  );
const sessionPayments = (db: Database) =>
  db.query<{ payment_hash: string; amount_sats: number; session_id: string | null }>(
    'SELECT payment_hash, amount_sats, session_id FROM payments ORDER BY paid_at, payment_hash',
  );

/**
 * A session's life as lightningSessions and the refunds tell it: 20 sats in, 20 more, 25 spent, closed, one failed
 * refund attempt, then paid; then a top-up of 20 sats refused (the refund had been paid): not taken, not a payment.
 */
function sessionLife(): { id: string; topUp: string; refusedTopUp: string; observations: SessionObservation[] } {
  const id = newPreimage().hash;
  const topUp = newPreimage().hash;
  const refusedTopUp = newPreimage().hash;
  const at = Date.parse('2026-11-27T10:00:00.000Z');
  const route = '/api/demo/stream';
  return {
    id,
    topUp,
    refusedTopUp,
    observations: [
      { type: 'opened', sessionId: id, route, depositMsat: 20_000, unitPriceMsat: 1000, at },
      { type: 'spent', sessionId: id, route, units: 20, amountMsat: 20_000, spentMsat: 20_000, paidMsat: 20_000, at: at + 1000 },
      { type: 'topped-up', sessionId: id, route, paymentHash: topUp, amountMsat: 20_000, closed: false, at: at + 2000 },
      { type: 'spent', sessionId: id, route, units: 5, amountMsat: 5000, spentMsat: 25_000, paidMsat: 40_000, at: at + 3000 },
      { type: 'closed', sessionId: id, because: 'client', paidMsat: 40_000, spentMsat: 25_000, refundMsat: 15_000, at: at + 4000 },
      { type: 'refunded', sessionId: id, state: 'failed', amountMsat: 15_000, attempt: 1, error: 'no route', retryAt: at + 34_000, at: at + 5000 },
      { type: 'refunded', sessionId: id, state: 'paid', amountMsat: 15_000, attempt: 2, at: at + 35_000 },
      { type: 'topup-refused', sessionId: id, route, paymentHash: refusedTopUp, amountMsat: 20_000, refundState: 'paid', at: at + 40_000 },
    ],
  };
}

const refusedTopUpRows = (db: Database) =>
  db.query<{ payment_hash: string; session_id: string; endpoint: string; amount_msat: number; refund_state: string; refused_at: string }>(
    `SELECT payment_hash, session_id, endpoint, amount_msat::int8 AS amount_msat, refund_state, to_char(refused_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS refused_at
     FROM session_refused_topups ORDER BY payment_hash`,
  );
const refusedTopUpRow = (id: string, hash: string) => ({
  payment_hash: hash,
  session_id: id,
  endpoint: '/api/demo/stream',
  amount_msat: 20_000,
  refund_state: 'paid',
  refused_at: '2026-11-27T10:00:40.000Z',
});

const settledSession = (id: string): SessionRow => ({
  session_id: id,
  endpoint: '/api/demo/stream',
  unit_price_msat: 1000,
  paid_msat: 40_000,
  spent_msat: 25_000,
  closed_because: 'client',
  refund_msat: 15_000,
  refund_state: 'paid',
  refund_attempts: 2,
  // The error of a failed attempt goes once the refund is paid.
  refund_error: null,
  refund_reason: null,
  settled: true,
});

for (const setup of setups) {
  describe.skipIf(setup.skip !== undefined)(`payment log of prepaid sessions (${setup.name})`, () => {
    let db: FaultyDatabase;
    let keyPrefix: string;
    let lines: string[];
    const real = () => setup.database();
    const instance = (): PaymentLog =>
      createPaymentLog({ database: async () => db.db, store: setup.store(), keyPrefix, retryDelaysMs: [5], log: (line) => lines.push(line) });
    const written = (log: PaymentLog, n: number) =>
      waitFor(
        `${n} session rows and payments settled`,
        async () => [(await sessionRows(real())).length, (await sessionPayments(real())).length, (await log.flush()).pending],
        ([, payments, pending]) => payments === n && pending === 0,
      );

    beforeEach(async () => {
      await setup.database().query('TRUNCATE payments, payment_sessions, session_refused_topups');
      db = faulty(setup.database());
      keyPrefix = `test:paylog:${randomUUID()}:`;
      lines = [];
    });

    it('a deposit and a top-up are payments; spending, the close and the refund are one row against the deposit', async () => {
      const log = instance();
      const { id, topUp, refusedTopUp, observations } = sessionLife();
      for (const observation of observations) log.onSession(observation);
      await written(log, 2);
      // Each observation is its own write, and they may land in any order: wait for the row they make together.
      await waitFor(
        'the session settled and the refused top-up',
        async () => [(await sessionRows(real()))[0], (await refusedTopUpRows(real())).length] as const,
        ([row, refused]) => row?.refund_state === 'paid' && row.closed_because !== null && row.unit_price_msat !== null && refused === 1,
      );
      // The refused top-up is a row of its own, not a payment.
      expect(await refusedTopUpRows(real())).toEqual([refusedTopUpRow(id, refusedTopUp)]);
      expect(await sessionPayments(real())).toEqual([
        { payment_hash: id, amount_sats: 20, session_id: id },
        { payment_hash: topUp, amount_sats: 20, session_id: id },
      ]);
      expect(await sessionRows(real())).toEqual([settledSession(id)]);
      // Revenue is what was kept: 40 received, 15 refunded.
      const stats = await paymentStats(real(), { addresses: 'all', since: null, now: new Date('2026-11-28T00:00:00Z') });
      expect(stats).toMatchObject({
        totalPayments: 2,
        totalSats: 25,
        byDay: { '2026-11-27': { count: 2, sats: 25 } },
        sessions: {
          count: 1,
          units: 25,
          spentSats: 25,
          refunded: { count: 1, sats: 15 },
          owed: { count: 0, sats: 0 },
          givenUp: { count: 0, sats: 0 },
          topUpsRefused: { count: 1, sats: 20, unused: { count: 1, sats: 20 } },
        },
      });
    });

    it('nothing twice: every observation told twice, in reverse, and through the outbox while the database is down, leaves the same rows', async () => {
      const log = instance();
      const { id, topUp, refusedTopUp, observations } = sessionLife();
      db.down = true;
      for (const observation of [...observations].reverse()) log.onSession(observation);
      await waitFor(
        'everything kept',
        async () => (await log.flush()).pending,
        // One entry each, and the deposit's payment beside the opened session's row.
        (pending) => pending === observations.length + 1,
      );
      expect(await sessionRows(real())).toEqual([]);
      expect(await refusedTopUpRows(real())).toEqual([]);
      db.down = false;
      for (const observation of observations) log.onSession(observation);
      await written(log, 2);
      expect(await log.drain()).toEqual({ written: 0, pending: 0 });
      expect((await sessionPayments(real())).map((p) => p.payment_hash).sort()).toEqual([id, topUp].sort());
      expect(await sessionRows(real())).toEqual([settledSession(id)]);
      // Told twice and kept through the outbox: one row.
      expect(await refusedTopUpRows(real())).toEqual([refusedTopUpRow(id, refusedTopUp)]);
    });

    it('a refund given up stays owed, and a late failed attempt does not undo it', async () => {
      const log = instance();
      const { id, observations } = sessionLife();
      const [opened, , , , closed] = observations;
      const givenUp: SessionObservation = {
        type: 'refunded',
        sessionId: id,
        state: 'given-up',
        amountMsat: 15_000,
        attempt: 12,
        reason: 'the return invoice expired',
        at: closed!.at + 9000,
      };
      const lateFailure: SessionObservation = {
        type: 'refunded',
        sessionId: id,
        state: 'failed',
        amountMsat: 15_000,
        attempt: 11,
        error: 'timeout',
        retryAt: closed!.at + 99_000,
        at: closed!.at + 8000,
      };
      for (const observation of [opened!, closed!, givenUp, lateFailure]) log.onSession(observation);
      await written(log, 1);
      await waitFor(
        'the row',
        async () => (await sessionRows(real()))[0]?.refund_state,
        (state) => state === 'given-up',
      );
      expect(await sessionRows(real())).toMatchObject([
        { refund_state: 'given-up', refund_attempts: 12, refund_reason: 'the return invoice expired', settled: true },
      ]);
      const stats = await paymentStats(real(), { addresses: 'all', since: null, now: new Date('2026-11-28T00:00:00Z') });
      expect(stats).toMatchObject({ totalSats: 20, sessions: { refunded: { count: 0, sats: 0 }, givenUp: { count: 1, sats: 15 } } });
    });
  });
}

// ---------------------------------------------------------------------------
// Behaviours that do not depend on the backend

describe('payment log: faults and inputs', () => {
  let db: FaultyDatabase;
  let lines: string[];
  beforeEach(async () => {
    await pglite.query('TRUNCATE payments');
    db = faulty(pglite);
    lines = [];
  });
  const instance = (store: KeyValueStore, options: Partial<PaymentLogOptions> = {}) =>
    createPaymentLog({ database: async () => db.db, store, retryDelaysMs: [5, 10], log: (line) => lines.push(line), ...options });

  it('with the key-value store down too, the payment goes to stderr whole, without secrets, and nothing throws', async () => {
    const store = recording(createMemoryStore());
    store.failPrefix = '';
    db.down = true;
    const log = instance(store);
    const entry = paidEntry();
    expect(await log.record(entryOf(entry))).toBe('dropped');
    const payment: Payment = { paymentHash: paidEntry().paymentHash, route: '/api/paid', amountMsat: 5000 };
    expect(() => log.onPaid(payment, new Request('https://api.example/api/paid'), new Response('ok'))).not.toThrow();
    await waitFor(
      'the second line',
      async () => lines.length,
      (n) => n === 2,
    );
    expect(lines[0]).toContain('NOT logged');
    expect(lines[0]).toContain(entry.paymentHash);
    expect(lines[0]).toContain('"amountSats":21');
    expect(lines[1]).toContain(payment.paymentHash);
    expect(lines.join('\n')).not.toContain(entry.preimage);
  });

  it('the default log line goes to console.error and names no URL (it could carry a password)', async () => {
    const spy = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const log = createPaymentLog({
        database: () => Promise.reject(new DatabaseUnavailable('cannot reach postgres://app:hunter2@db.example/prod')),
        store: recording(createMemoryStore()),
        retryDelaysMs: [],
      });
      expect(await log.record(entryOf(paidEntry()))).toBe('kept');
      const printed = spy.mock.calls.map((call) => call.join(' ')).join('\n');
      expect(printed).toContain('[payment-log]');
      expect(printed).not.toContain('hunter2');
    } finally {
      spy.mockRestore();
    }
  });

  it('does not retry what a retry cannot fix (a missing table), but keeps it until the schema is there', async () => {
    const log = instance(createMemoryStore());
    db.error = Object.assign(new Error('relation "payments" does not exist'), { code: '42P01' });
    const entry = paidEntry();
    expect(await log.record(entryOf(entry))).toBe('kept');
    expect(db.queries).toBe(1);
    db.error = undefined;
    expect(await log.flush()).toEqual({ written: 1, pending: 0 });
    await expectExactlyOnce(pglite, [entry.paymentHash]);
  });

  it('keeps the write alive with waitUntil', async () => {
    const kept: Promise<unknown>[] = [];
    const log = instance(createMemoryStore(), { waitUntil: (promise) => kept.push(promise) });
    const entry = paidEntry();
    log.onPaid({ paymentHash: entry.paymentHash, route: '/api/x', amountMsat: 3000 }, new Request('https://api.example/api/x'), new Response('ok'));
    expect(kept).toHaveLength(1);
    await Promise.all(kept);
    expect(await rows(pglite)).toMatchObject([{ payment_hash: entry.paymentHash, endpoint: '/api/x', amount_sats: 3, owner_address: null }]);
  });

  it('a waitUntil that throws does not stop the write', async () => {
    const log = instance(createMemoryStore(), {
      waitUntil: () => {
        throw new Error('no request context');
      },
    });
    const entry = paidEntry();
    log.onPaid({ paymentHash: entry.paymentHash, route: '/api/x', amountMsat: 1000 }, new Request('https://api.example/api/x'), new Response('ok'));
    await waitFor(
      'the row',
      () => rowCount(pglite),
      (n) => n === 1,
    );
    expect(lines.join('\n')).toContain('waitUntil failed');
  });

  it('logs the owner the options name for the request', async () => {
    const log = instance(createMemoryStore(), { ownerOf: (_payment, request) => new URL(request.url).searchParams.get('owner') });
    const entry = paidEntry();
    log.onPaid(
      { paymentHash: entry.paymentHash.toUpperCase(), route: '/api/x', amountMsat: 2000 },
      new Request('https://api.example/api/x?owner=bob%40example.com'),
      new Response('ok'),
    );
    await waitFor(
      'the row',
      () => rowCount(pglite),
      (n) => n === 1,
    );
    expect(await rows(pglite)).toMatchObject([{ payment_hash: entry.paymentHash, owner_address: 'bob@example.com', amount_sats: 2 }]);
  });

  it('refuses entries that are not a payment', async () => {
    const log = instance(createMemoryStore());
    const good = entryOf(paidEntry());
    for (const bad of [
      { ...good, paymentHash: 'xyz' },
      { ...good, paymentHash: `${good.paymentHash}00` },
      { ...good, amountSats: 1.5 },
      { ...good, amountSats: -1 },
      { ...good, amountSats: 2 ** 31 },
      { ...good, endpoint: 'x'.repeat(3000) },
      { ...good, paidAt: 'not a date' },
    ]) {
      await expect(log.record(bad)).rejects.toThrow(TypeError);
    }
    expect(db.queries).toBe(0);
  });

  it('a refused top-up that is not one (a bad hash, amount or state) is logged as not written, and nothing is written', async () => {
    const log = instance(createMemoryStore());
    const hash = newPreimage().hash;
    const good = {
      type: 'topup-refused',
      sessionId: hash,
      route: '/api/demo/stream',
      paymentHash: newPreimage().hash,
      amountMsat: 20_000,
      refundState: 'paid',
      at: Date.now(),
    };
    for (const bad of [
      { ...good, paymentHash: 'xyz' },
      { ...good, sessionId: `${hash}00` },
      { ...good, amountMsat: 0 },
      { ...good, amountMsat: 1.5 },
      { ...good, refundState: 'due' },
      { ...good, at: Number.NaN },
    ]) {
      log.onSession(bad as unknown as SessionObservation);
    }
    expect(lines).toHaveLength(6);
    for (const line of lines) expect(line).toMatch(/^\[payment-log\] session .* not logged: /);
    expect(db.queries).toBe(0);
  });

  it('an entry that cannot be read back is skipped with a line, and does not block the rest', async () => {
    const store = createMemoryStore();
    const log = instance(store, { keyPrefix: 'p:' });
    db.down = true;
    const entries = [paidEntry(), paidEntry()];
    for (const e of entries) await log.record(entryOf(e));
    await store.set('p:slot:1', '{not json');
    db.down = false;
    expect(await log.flush()).toEqual({ written: 1, pending: 0 });
    await expectExactlyOnce(pglite, [entries[1]!.paymentHash]);
    expect(lines.join('\n')).toContain('unreadable');
  });
});

// ---------------------------------------------------------------------------
// The hosted demo, over HTTP through the real dev server

const CRON_SECRET = 'cron-secret-for-tests-0123456789';

describe('the hosted demo logs its payments', () => {
  const server = useDevServer(() => ({ CRON_SECRET, INVOICE_RATE_LIMIT_PER_MINUTE: '100000' }));
  let db: FaultyDatabase;
  let store: RecordingStore;

  beforeEach(async () => {
    await pglite.query('TRUNCATE payments');
    db = faulty(pglite);
    store = recording(createMemoryStore());
    server.redeploy(server.config(), { database: async () => db.db, store });
  });

  afterEach(() => {
    vi.restoreAllMocks();
  });

  const paidCredential = () => payDemoChallenge(server.url);

  async function paidRequest(authorization: string): Promise<{ status: number }> {
    const response = await fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization } });
    await response.arrayBuffer();
    return { status: response.status };
  }

  const keptSlots = () => store.written.filter(([key, value]) => key.startsWith('paylog:slot:') && value !== 'done').length;
  const cron = (authorization?: string) => fetch(`${server.url}/api/cron/flush-payments`, { headers: authorization ? { authorization } : {} });

  it('logs a paid request: hash, endpoint, amount, no owner, and never the preimage', async () => {
    const credential = await paidCredential();
    expect((await paidRequest(credential.authorization)).status).toBe(200);
    const [row] = await waitFor(
      'the row',
      () => rows(pglite),
      (r) => r.length === 1,
    );
    expect(row).toMatchObject({ payment_hash: credential.paymentHash, endpoint: '/api/demo/btc-price', amount_sats: 1, owner_address: null });
    expect(Math.abs(row!.paid_at.getTime() - Date.now())).toBeLessThan(60_000);
    expect(await allRowText(pglite)).not.toContain(credential.preimage);
    expect(store.written.map(([k, v]) => `${k}=${v}`).join('\n')).not.toContain(credential.preimage);
  });

  it('50 concurrent paid requests: 50 rows', async () => {
    const credentials = await Promise.all(Array.from({ length: 50 }, () => paidCredential()));
    const answers = await Promise.all(credentials.map((c) => paidRequest(c.authorization)));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200));
    await waitFor(
      '50 rows',
      () => rowCount(pglite),
      (n) => n === 50,
    );
    await expectExactlyOnce(
      pglite,
      credentials.map((c) => c.paymentHash),
    );
  });

  it('a slow database does not delay the paid answer', async () => {
    const credential = await paidCredential();
    // The database answers nothing until the test lets it: the whole answer arrives before that.
    let answerDatabase!: () => void;
    db.held = new Promise<void>((resolve) => (answerDatabase = resolve));
    const answer = await paidRequest(credential.authorization);
    expect(answer.status).toBe(200);
    await waitFor(
      'the write, waiting on the database',
      async () => db.queries,
      (n) => n > 0,
    );
    expect(await rowCount(pglite)).toBe(0);
    answerDatabase();
    db.held = undefined;
    await waitFor(
      'the slow write',
      () => rowCount(pglite),
      (n) => n === 1,
      8_000,
    );
  });

  it('database down: paid requests are served at once, and each is logged exactly once when it is back', async () => {
    const credentials = await Promise.all(Array.from({ length: 10 }, () => paidCredential()));
    db.down = true;
    const answers = await Promise.all(credentials.map((c) => paidRequest(c.authorization)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    await waitFor(
      'kept payments',
      async () => keptSlots(),
      (n) => n === 10,
    );
    expect(await rowCount(pglite)).toBe(0);

    db.down = false;
    const next = await paidCredential();
    expect((await paidRequest(next.authorization)).status).toBe(200);
    await waitFor(
      '11 rows',
      () => rowCount(pglite),
      (n) => n === 11,
    );
    await expectExactlyOnce(
      pglite,
      [...credentials, next].map((c) => c.paymentHash),
    );
    // The background flush marks its slots done just after its insert: let it finish.
    await waitFor(
      'an empty outbox',
      () => servicePaymentLog(server.ctx)!.flush(),
      (r) => r.pending === 0,
    );
    expect(await (await cron(`Bearer ${CRON_SECRET}`)).json()).toEqual({ written: 0, pending: 0 });
  });

  it('a database that cannot even be opened does not stop paid requests', async () => {
    server.redeploy(server.config(), { database: () => Promise.reject(new DatabaseUnavailable('cannot reach the database (test)')), store });
    const credential = await paidCredential();
    expect((await paidRequest(credential.authorization)).status).toBe(200);
    await waitFor(
      'the kept payment',
      async () => keptSlots(),
      (n) => n === 1,
    );
  });

  it('with the database and the outbox both failing: still 200, one stderr line with the hash, not the preimage', async () => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    store.failPrefix = 'paylog:';
    db.down = true;
    const credential = await paidCredential();
    expect((await paidRequest(credential.authorization)).status).toBe(200);
    const printed = await waitFor(
      'the stderr line',
      async () => errors.mock.calls.map((call) => call.join(' ')).join('\n'),
      (text) => text.includes(credential.paymentHash),
    );
    expect(printed).toContain('NOT logged');
    expect(printed).not.toContain(credential.preimage);
  });

  it('the scheduled flush: only with the cron secret; 503 while the database is down; writes what was kept', async () => {
    expect((await cron()).status).toBe(401);
    expect((await cron(`Bearer ${CRON_SECRET}x`)).status).toBe(401);
    expect((await cron(CRON_SECRET)).status).toBe(401);
    expect((await cron(`Bearer ${CRON_SECRET}`)).status).toBe(200);

    const credentials = await Promise.all(Array.from({ length: 5 }, () => paidCredential()));
    db.down = true;
    for (const c of credentials) expect((await paidRequest(c.authorization)).status).toBe(200);
    await waitFor(
      'kept payments',
      async () => keptSlots(),
      (n) => n === 5,
    );
    const down = await cron(`Bearer ${CRON_SECRET}`);
    expect(down.status).toBe(503);
    expect(down.headers.get('retry-after')).toBe('60');
    expect(await down.json()).toMatchObject({ code: 'DATABASE_UNAVAILABLE', written: 0, pending: 5 });

    db.down = false;
    const up = await cron(`Bearer ${CRON_SECRET}`);
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ written: 5, pending: 0 });
    await expectExactlyOnce(
      pglite,
      credentials.map((c) => c.paymentHash),
    );
  });

  it('the scheduled flush refuses to run without CRON_SECRET configured', async () => {
    server.redeploy(server.config({ CRON_SECRET: undefined }), { database: async () => db.db, store });
    const response = await cron('Bearer ');
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ code: 'NOT_CONFIGURED', missing: ['CRON_SECRET'] });
  });

  it('one payment log per service context, none without a database', () => {
    const ctx = server.ctx;
    expect(servicePaymentLog(ctx)).toBe(servicePaymentLog(ctx));
    expect(servicePaymentLog({ ...ctx, config: { ...ctx.config, database: undefined } })).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------
// The hosted demo's prepaid sessions, through the local server and the real client

describe('the hosted demo logs its sessions', () => {
  const ADMIN = `02${'a'.repeat(64)}`;
  const server = useDevServer(() => ({ DEMO_STREAM_INTERVAL_MS: '0', ADMIN_PUBKEYS: ADMIN, INVOICE_RATE_LIMIT_PER_MINUTE: '100000' }));

  it('a stream opened, topped up and closed: the deposit and the top-up are payments, a bearer request more; the 26 units spent and the 14-sat refund are against the deposit, and revenue is 26', async () => {
    const db = await server.ctx.database();
    await db.query('TRUNCATE payments, payment_sessions');
    const sessions = createSessions({ maxDepositSats: 20 });
    const wallet = devWallet({ serviceUrl: server.url });
    const budget = createBudget({ totalSats: 100 });
    let sessionId: string;
    try {
      const response = await fetchWithL402(`${server.url}/api/demo/stream?chunks=25`, undefined, { wallet, maxPriceSats: 1, budget, sessions });
      expect(response.status).toBe(200);
      expect(await response.text()).toContain('event: payment-need-topup');
      // A bearer request on the same session: served, one unit more, and no new payment.
      const again = await fetchWithL402(`${server.url}/api/demo/stream?chunks=1`, undefined, { wallet, maxPriceSats: 1, budget, sessions });
      expect(again.status).toBe(200);
      expect(await again.text()).toContain('data: [DONE]');
      expect(sessions.list()).toHaveLength(1);
      sessionId = sessions.list()[0]!.sessionId;
    } finally {
      const closed = await sessions.closeAll();
      expect(closed).toMatchObject([{ status: 200, refundSats: 14, refundStatus: 'succeeded' }]);
    }
    await waitFor(
      'the refund in the log',
      async () => (await sessionRows(db))[0]?.refund_state,
      (state) => state === 'paid',
    );
    const payments = await sessionPayments(db);
    expect(payments).toHaveLength(2);
    expect(payments[0]).toEqual({ payment_hash: sessionId, amount_sats: 20, session_id: sessionId });
    expect(payments[1]).toMatchObject({ amount_sats: 20, session_id: sessionId });
    expect(payments[1]!.payment_hash).not.toBe(sessionId);
    expect(await sessionRows(db)).toEqual([
      {
        session_id: sessionId,
        endpoint: '/api/demo/stream',
        unit_price_msat: 1000,
        paid_msat: 40_000,
        spent_msat: 26_000,
        closed_because: 'client',
        refund_msat: 14_000,
        refund_state: 'paid',
        refund_attempts: 1,
        refund_error: null,
        refund_reason: null,
        settled: true,
      },
    ]);
    // GET /api/stats (admin): 40 received, 14 refunded.
    const body = await (await statsReader(server, ADMIN)).read();
    expect(body).toMatchObject({
      totalPayments: 2,
      totalSats: 26,
      trend: { payments7d: 2, sats7d: 26 },
      sessions: { count: 1, units: 26, spentSats: 26, refunded: { count: 1, sats: 14 }, owed: { count: 0, sats: 0 }, givenUp: { count: 0, sats: 0 } },
    });
    expect(JSON.stringify(await db.query('SELECT * FROM payment_sessions'))).not.toMatch(/preimage/i);
  });
});
