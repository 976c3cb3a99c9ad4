// Payment-log writes per second through the production code path:
// createPaymentLog().record() (validation, INSERT … ON CONFLICT DO NOTHING
// with retries and a timeout) on the `payments` table as the migrations make
// it, and the outbox flush that writes what was kept while the database was
// down. On a real PostgreSQL server through lib/db's node-postgres pool when
// one is reachable (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/test;
// a scratch database is created and dropped), and on in-memory PGlite.
import { scratchDatabase } from '../tests/support/postgres.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { createDatabase, DatabaseUnavailable, migrate, type Database, type Row } from '../lib/db/index.js';
import { createPaymentLog, type PaymentLogEntry } from '../lib/service/records/payment-log.js';
import { createMemoryStore } from '../lib/store/memory.js';

export interface PaymentLogBenchResult {
  /** The database and how it was driven, e.g. "PostgreSQL (pg) — direct, 16 concurrent". */
  backend: string;
  writesPerSecond: number;
  database: 'PostgreSQL (pg)' | 'PGlite (in memory)';
  mode: 'direct' | 'outbox flush';
  /** Writes in flight at once (direct); the flush writes batches of up to 100 rows. */
  concurrency: number;
  writes: number;
}

const DIRECT_WRITES = 3_000;
const FLUSH_WRITES = 3_000;
const WARM_UP = 300;

export async function benchPaymentLog(options: { log?: (line: string) => void } = {}): Promise<PaymentLogBenchResult[]> {
  const note = options.log ?? ((line: string) => console.error(line));
  const results: PaymentLogBenchResult[] = [];

  const scratch = await scratchDatabase();
  if (typeof scratch === 'string') {
    note(`payment-log bench: ${scratch}; PGlite only`);
  } else {
    let db: Database | undefined;
    try {
      db = await createDatabase({ url: scratch.url });
      await migrate(db);
      results.push(...(await benchOn('PostgreSQL (pg)', db)));
    } catch (error) {
      note(`payment-log bench: PostgreSQL through lib/db failed (${(error as Error).message}); PGlite only`);
    } finally {
      await db?.close().catch(() => {});
      await scratch.drop();
    }
  }

  const pglite = await createDatabase({ pgliteDir: null });
  try {
    await migrate(pglite);
    results.push(...(await benchOn('PGlite (in memory)', pglite)));
  } finally {
    await pglite.close();
  }
  return results;
}

async function benchOn(database: PaymentLogBenchResult['database'], db: Database): Promise<PaymentLogBenchResult[]> {
  const results: PaymentLogBenchResult[] = [];
  const result = (mode: PaymentLogBenchResult['mode'], concurrency: number, writes: number, ms: number): PaymentLogBenchResult => ({
    backend: `${database} — ${mode === 'direct' ? `direct, ${concurrency === 1 ? 'one at a time' : `${concurrency} concurrent`}` : 'outbox flush, batches of 100'}`,
    writesPerSecond: (writes * 1000) / ms,
    database,
    mode,
    concurrency,
    writes,
  });

  // Direct: what each paid request costs the database, one instance serving
  // requests one after another (a Vercel function instance) and many at once.
  for (const concurrency of [1, 16]) {
    await db.query('TRUNCATE payments');
    const log = createPaymentLog({ database: async () => db, store: createMemoryStore(), retryDelaysMs: [] });
    await runRecords(log.record, WARM_UP, concurrency);
    const started = performance.now();
    await runRecords(log.record, DIRECT_WRITES, concurrency);
    const ms = performance.now() - started;
    await expectRows(db, WARM_UP + DIRECT_WRITES);
    results.push(result('direct', concurrency, DIRECT_WRITES, ms));
  }

  // Outbox flush: entries kept while the database was "down", then written by drain().
  await db.query('TRUNCATE payments');
  let down = true;
  const gated: Database = {
    ...db,
    kind: db.kind,
    query: <T extends Row = Row>(text: string, params?: readonly unknown[]) =>
      down ? Promise.reject(new DatabaseUnavailable('down for the bench')) : db.query<T>(text, params),
  };
  const log = createPaymentLog({ database: async () => gated, store: createMemoryStore(), retryDelaysMs: [], log: () => {} });
  await runRecords(log.record, FLUSH_WRITES, 16, 'kept');
  down = false;
  const started = performance.now();
  const drained = await log.drain({ budgetMs: 120_000 });
  const ms = performance.now() - started;
  if (drained.written !== FLUSH_WRITES || drained.pending !== 0) throw new Error(`outbox flush wrote ${drained.written}, left ${drained.pending}`);
  await expectRows(db, FLUSH_WRITES);
  results.push(result('outbox flush', 1, FLUSH_WRITES, ms));
  return results;
}

async function runRecords(record: (entry: PaymentLogEntry) => Promise<string>, count: number, concurrency: number, expected = 'written'): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next += 1;
      const outcome = await record({
        paymentHash: bytesToHex(sha256(randomBytes(32))),
        endpoint: '/api/bench',
        amountSats: 21,
        ownerAddress: 'bench@example.com',
      });
      if (outcome !== expected) throw new Error(`a payment was ${outcome}, not ${expected}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

async function expectRows(db: Database, count: number): Promise<void> {
  const [row] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM payments');
  if (Number(row?.n) !== count) throw new Error(`expected ${count} payment rows, found ${row?.n}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const r of await benchPaymentLog()) console.log(`${r.backend.padEnd(52)} ${Math.round(r.writesPerSecond).toLocaleString('en-US')} writes/s`);
}
