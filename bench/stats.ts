// GET /api/stats over 1,000,000 payment rows on real PostgreSQL: the service
// call behind the endpoint (statsFor: visibility, roll-up and partial-day
// queries, recent, wallet), timed for an admin (full history, every owner), a
// Pro owner (full history of its two addresses, one of them the busiest owner)
// and a free owner (7 days), interleaved in one run. Then every answer is
// checked against a brute-force SQL recomputation over payments ⋈ splits that
// does not use the roll-up. A scratch database (TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test) is created and dropped.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import type { Database } from '../lib/db/index.js';
import type { Login } from '../lib/service/accounts/auth.js';
import { loadConfig } from '../lib/config.js';
import { createServiceContext, type ServiceContext } from '../lib/service/context.js';
import { statsFor, type Stats } from '../lib/service/records/stats.js';
import { RECENT_LIMIT } from '../lib/service/records/stats-queries.js';
import { scratchDatabase } from '../tests/support/postgres.js';

export const STATS_ROWS = 1_000_000;
const WARMUP = 5;
const ROUNDS = 40;
const DAY_MS = 86_400_000;

const ADMIN = { pubkey: '02' + 'a'.repeat(64), admin: true };
const PRO = { pubkey: '02' + 'b'.repeat(64), admin: false };
const FREE = { pubkey: '02' + 'c'.repeat(64), admin: false };

export interface Timing {
  p50Ms: number;
  p95Ms: number;
}

export interface StatsBench {
  rows: number;
  seedSeconds: number;
  /** Roll-up cells (day × owner) the admin's stats read instead of the rows. */
  cells: number;
  admin: Timing;
  proOwner: Timing & { payments: number };
  freeOwner: Timing & { payments: number };
  /** Differences from the brute-force recomputation; empty when every number matched. */
  mismatches: string[];
}

export async function benchStats(): Promise<StatsBench | { skipped: string }> {
  const scratch = await scratchDatabase();
  if (typeof scratch === 'string') return { skipped: scratch };
  const dataDir = mkdtempSync(join(tmpdir(), 'l402-bench-stats-'));
  const config = loadConfig({
    L402_SECRET: 'bench-stats-secret-0123456789abcdef0123456789abcdef',
    BTC_PRICE_SOURCES: 'none',
    DATA_DIR: dataDir,
    DATABASE_URL: scratch.url,
    ADMIN_PUBKEYS: ADMIN.pubkey,
  });
  let db: Database | undefined;
  try {
    const ctx = createServiceContext(config);
    db = await ctx.database(); // migrated on open
    const started = performance.now();
    await seed(db);
    const seedSeconds = (performance.now() - started) / 1000;
    const [cells] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM stats_daily');

    const samples = { admin: [] as number[], pro: [] as number[], free: [] as number[] };
    const timed = async (session: Login, into: number[]) => {
      const t = performance.now();
      const stats = await statsFor(ctx, session);
      into.push(performance.now() - t);
      return stats;
    };
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      const round = { admin: [] as number[], pro: [] as number[], free: [] as number[] };
      await timed(ADMIN, round.admin);
      await timed(PRO, round.pro);
      await timed(FREE, round.free);
      if (i >= WARMUP) for (const k of ['admin', 'pro', 'free'] as const) samples[k].push(...round[k]);
    }

    // The same `now` for both sides of the comparison.
    const now = new Date();
    const mismatches: string[] = [];
    let proPayments = 0;
    let freePayments = 0;
    for (const [name, session] of [
      ['admin', ADMIN],
      ['Pro owner', PRO],
      ['free owner', FREE],
    ] as const) {
      const stats = await statsFor(ctx, session, { now });
      const expected = await bruteForce(db, session, now, ctx);
      const actual = pick(stats);
      for (const key of Object.keys(expected) as Array<keyof typeof expected>) {
        if (!isDeepStrictEqual(actual[key], expected[key]))
          mismatches.push(`${name}: ${key} differs (${JSON.stringify(actual[key]).slice(0, 120)} vs ${JSON.stringify(expected[key]).slice(0, 120)})`);
      }
      if (session === PRO) proPayments = stats.totalPayments;
      if (session === FREE) freePayments = stats.totalPayments;
    }
    return {
      rows: STATS_ROWS,
      seedSeconds,
      cells: Number(cells?.n),
      admin: timing(samples.admin),
      proOwner: { ...timing(samples.pro), payments: proPayments },
      freeOwner: { ...timing(samples.free), payments: freePayments },
      mismatches,
    };
  } finally {
    await db?.close().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
    await scratch.drop();
  }
}

/**
 * 1,000,000 payments over two years, more of them recent; 250 owners, the
 * busiest with about a sixth of all rows, one payment in ten without owner;
 * splits for 70% of owned payments, mostly paid out.
 */
async function seed(db: Database): Promise<void> {
  await db.query(
    `INSERT INTO payments (payment_hash, endpoint, amount_sats, paid_at, owner_address)
     SELECT md5('a' || i) || md5('b' || i),
            '/api/endpoint-' || (i % 20),
            1 + (i::int8 * 7919) % 5000,
            now() - power(random(), 2) * interval '730 days',
            CASE WHEN i % 10 = 0 THEN NULL ELSE 'owner' || floor(power(random(), 3) * 250)::int || '@example.com' END
     FROM generate_series(1, $1::int) AS i`,
    [STATS_ROWS],
  );
  await db.query(
    `INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state)
     SELECT payment_hash, owner_address, amount_sats * 1000::int8, amount_sats * 997::int8, amount_sats * 3::int8,
            (ARRAY['paid', 'paid', 'paid', 'paid', 'paid', 'paid', 'paid', 'accrued', 'pending', 'failed'])[1 + floor(random() * 10)::int]
     FROM payments WHERE owner_address IS NOT NULL AND random() < 0.7`,
  );
  await db.query(
    `INSERT INTO address_links (pubkey, address) VALUES ($1, 'owner0@example.com'), ($1, 'owner7@example.com'), ($2, 'owner1@example.com'), ($2, 'owner40@example.com')`,
    [PRO.pubkey, FREE.pubkey],
  );
  await db.query(`INSERT INTO pro_subscriptions (address, expires_at) VALUES ('owner7@example.com', now() + interval '30 days')`);
  await db.query('ANALYZE');
}

type Compared = Pick<Stats, 'totalPayments' | 'totalSats' | 'serviceFee' | 'walletSats' | 'byOwner' | 'byDay' | 'trend' | 'recent'>;

function pick(stats: Stats): Compared {
  const { totalPayments, totalSats, serviceFee, walletSats, byOwner, byDay, trend, recent } = stats;
  return { totalPayments, totalSats, serviceFee, walletSats, byOwner, byDay, trend, recent };
}

/** The stats object from payments ⋈ splits directly: no roll-up, no partial-day split. */
async function bruteForce(db: Database, session: Login, now: Date, ctx: ServiceContext): Promise<Compared> {
  const addresses = session.admin
    ? null
    : (await db.query<{ address: string }>('SELECT address FROM address_links WHERE pubkey = $1', [session.pubkey])).map((r) => r.address);
  const pro =
    addresses !== null && (await db.query('SELECT 1 FROM pro_subscriptions WHERE address = ANY($1) AND expires_at > $2', [addresses, now])).length > 0;
  const since = session.admin || pro ? null : new Date(now.getTime() - 7 * DAY_MS);
  const where = `WHERE ($1::text[] IS NULL OR p.owner_address = ANY($1)) AND ($2::timestamptz IS NULL OR p.paid_at >= $2)`;
  const params = [addresses, since];
  const [totals] = await db.query(
    `SELECT count(*)::int8 AS n, coalesce(sum(p.amount_sats), 0)::int8 AS sats, coalesce(sum(s.fee_msat), 0)::int8 AS fee
     FROM payments p LEFT JOIN splits s ON s.payment_hash = p.payment_hash ${where}`,
    params,
  );
  const groups = async (key: string, extra = '') =>
    Object.fromEntries(
      (
        await db.query(
          `SELECT ${key} AS k, count(*)::int8 AS n, coalesce(sum(p.amount_sats), 0)::int8 AS sats FROM payments p ${where} ${extra} GROUP BY 1 ORDER BY 1`,
          params,
        )
      ).map((r) => [String(r.k), { count: Number(r.n), sats: Number(r.sats) }]),
    );
  const [week] = await db.query(`SELECT count(*)::int8 AS n, coalesce(sum(p.amount_sats), 0)::int8 AS sats FROM payments p ${where} AND p.paid_at >= $3`, [
    ...params,
    new Date(now.getTime() - 7 * DAY_MS),
  ]);
  const recent = await db.query(
    `SELECT id, endpoint, payment_hash, amount_sats, owner_address, paid_at FROM payments p ${where} ORDER BY paid_at DESC, id DESC LIMIT ${RECENT_LIMIT}`,
    params,
  );
  const walletMsat =
    addresses === null
      ? (await ctx.provider.balance()).balanceMsat
      : Number(
          (await db.query(`SELECT coalesce(sum(owner_msat), 0)::int8 AS m FROM splits WHERE owner_address = ANY($1) AND state <> 'paid'`, [addresses]))[0]?.m,
        );
  return {
    totalPayments: Number(totals?.n),
    totalSats: Number(totals?.sats),
    serviceFee: Math.floor(Number(totals?.fee) / 1000),
    walletSats: Math.floor(walletMsat / 1000),
    byOwner: await groups('p.owner_address', 'AND p.owner_address IS NOT NULL'),
    byDay: await groups(`to_char((p.paid_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD')`),
    trend: { payments7d: Number(week?.n), sats7d: Number(week?.sats) },
    recent: recent.map((r) => ({
      id: String(r.id),
      endpoint: r.endpoint as string | null,
      payment_hash: String(r.payment_hash),
      amount_sats: r.amount_sats === null ? null : Number(r.amount_sats),
      owner_address: r.owner_address as string | null,
      paid_at: (r.paid_at as Date).toISOString(),
    })),
  };
}

function timing(values: number[]): Timing {
  return { p50Ms: percentile(values, 0.5), p95Ms: percentile(values, 0.95) };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

export function printStatsBench(result: StatsBench | { skipped: string }, log: (line: string) => void = console.log): void {
  const ms = (n: number) => n.toFixed(1);
  log(`\nGET /api/stats (statsFor) over ${STATS_ROWS.toLocaleString('en-US')} payment rows in PostgreSQL, p50 / p95:`);
  if ('skipped' in result) {
    log(`  not measured: ${result.skipped}`);
    return;
  }
  log(
    `  admin          ${ms(result.admin.p50Ms)} / ${ms(result.admin.p95Ms)} ms   (target < 300 ms; all owners, full history, ${result.cells.toLocaleString('en-US')} roll-up cells)`,
  );
  log(
    `  Pro owner      ${ms(result.proOwner.p50Ms)} / ${ms(result.proOwner.p95Ms)} ms   (target < 50 ms; full history, ${result.proOwner.payments.toLocaleString('en-US')} payments incl. the busiest owner)`,
  );
  log(
    `  free owner     ${ms(result.freeOwner.p50Ms)} / ${ms(result.freeOwner.p95Ms)} ms   (target < 50 ms; 7 days, ${result.freeOwner.payments.toLocaleString('en-US')} payments)`,
  );
  log(`  seeded in ${result.seedSeconds.toFixed(1)} s (INSERT ... SELECT generate_series, through the roll-up triggers)`);
  if (result.mismatches.length === 0) log('  every number equals a brute-force SQL recomputation over payments ⋈ splits (admin, Pro owner, free owner)');
  else {
    for (const m of result.mismatches) log(`  MISMATCH ${m}`);
    process.exitCode = 1;
  }
}

// `npx tsx bench/stats.ts` runs it alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  printStatsBench(await benchStats());
}
