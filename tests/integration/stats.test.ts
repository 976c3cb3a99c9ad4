// GET /api/stats as its users meet it: an admin, a free owner (7 days), a Pro
// owner (full history, CSV). Every stats object is compared with a brute-force
// recomputation in TypeScript over the same rows read back from the database,
// on random data (seeded: the seed is in the test name), after the roll-up's
// back-fill, after erasure and deletes, after back-dated inserts and updates;
// on PGlite and on real PostgreSQL (where concurrent payment/split writers are
// raced too).
import { cpSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDatabase, migrate, type Database, type Queryable } from '../../lib/db/index.js';
import { MIGRATIONS_DIR } from '../../lib/db/migrate.js';
import { createLogin } from '../../lib/service/accounts/auth.js';
import { eraseKey } from '../../lib/service/accounts/erasure.js';
import { csvField, csvLine, CSV_COLUMNS, paymentsCsv } from '../../lib/service/records/csv.js';
import { usdCents } from '../../lib/service/records/price.js';
import { statsView } from '../../lib/service/records/stats.js';
import { owedMsat, paymentStats, RECENT_LIMIT, type PaymentRecord, type PaymentStats } from '../../lib/service/records/stats-queries.js';
import { databaseBackends } from '../support/postgres.js';
import { useDevServerOn } from '../support/server.js';

const backends = await databaseBackends();
const DAY_MS = 86_400_000;
const SEED = Number(process.env.STATS_TEST_SEED ?? Date.now() % 1_000_000);

// ---------------------------------------------------------------------------
// Random data, reproducible from SEED

function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const OWNERS = ['alice@example.com', 'bob@example.com', 'carol@example.com', 'dave@example.com', 'erin@example.com', 'frank@example.com'];
const KEYS = {
  admin: '02' + 'a'.repeat(64),
  free: '02' + 'b'.repeat(64), // alice, bob; no Pro
  pro: '02' + 'c'.repeat(64), // carol (Pro), dave (no Pro)
  lapsed: '02' + 'd'.repeat(64), // erin, whose Pro expired
  unlinked: '02' + 'e'.repeat(64),
};
const LINKS: Array<[string, string]> = [
  [KEYS.free, 'alice@example.com'],
  [KEYS.free, 'bob@example.com'],
  [KEYS.pro, 'carol@example.com'],
  [KEYS.pro, 'dave@example.com'],
  [KEYS.lapsed, 'erin@example.com'],
];
// Endpoints a CSV must escape (and one a spreadsheet would run).
const ENDPOINTS = ['/api/weather', '/api/a,b', '/api/"quoted"', '/api/line\nbreak', '=HYPERLINK("http://x")', '\t=1+1', ' \u0001=SUM(1)', '/api/ünïcode', null];

interface PaymentRow {
  id: string;
  payment_hash: string;
  endpoint: string | null;
  amount_sats: number | null;
  paid_at: Date;
  owner_address: string | null;
}
interface SplitRow {
  payment_hash: string;
  owner_address: string;
  amount_msat: number;
  owner_msat: number;
  fee_msat: number;
  state: 'accrued' | 'pending' | 'paid' | 'failed';
}

class Generator {
  private readonly random: () => number;
  constructor(seed: number) {
    this.random = prng(seed);
  }
  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
  int(max: number): number {
    return Math.floor(this.random() * max);
  }
  /** A payment at `paidAt` (default: within 40 days of now, sometimes two years back or a minute ahead). */
  payment(now: Date, paidAt?: Date, owner?: string | null): PaymentRow {
    const when =
      paidAt ??
      new Date(now.getTime() - (this.chance(0.1) ? 365 * DAY_MS + this.int(365 * DAY_MS) : this.chance(0.03) ? -this.int(60_000) : this.int(40 * DAY_MS)));
    return {
      id: randomUUID(),
      payment_hash: bytesToHex(randomBytes(32)),
      endpoint: this.pick(ENDPOINTS),
      amount_sats: this.chance(0.05) ? null : 1 + this.int(this.chance(0.3) ? 3 : 5000),
      paid_at: when,
      owner_address: owner !== undefined ? owner : this.chance(0.1) ? null : this.pick(OWNERS),
    };
  }
  split(payment: { payment_hash: string; amount_sats: number | null; owner_address: string | null }): SplitRow {
    const amountMsat = Math.max(1, payment.amount_sats ?? 1) * 1000;
    const ownerMsat = Math.floor((amountMsat * 997) / 1000);
    return {
      payment_hash: payment.payment_hash,
      owner_address: payment.owner_address ?? this.pick(OWNERS),
      amount_msat: amountMsat,
      owner_msat: ownerMsat,
      fee_msat: amountMsat - ownerMsat,
      state: this.pick(['accrued', 'pending', 'paid', 'failed'] as const),
    };
  }
}

async function insertPayments(db: Queryable, rows: PaymentRow[]): Promise<void> {
  if (rows.length === 0) return;
  // One multi-row statement: the roll-up triggers see a batch, as in the outbox flush.
  const params: unknown[] = [];
  const values = rows.map((r) => {
    params.push(r.id, r.payment_hash, r.endpoint, r.amount_sats, r.paid_at, r.owner_address);
    const n = params.length;
    return `($${n - 5}::uuid, $${n - 4}, $${n - 3}, $${n - 2}::int, $${n - 1}::timestamptz, $${n})`;
  });
  await db.query(`INSERT INTO payments (id, payment_hash, endpoint, amount_sats, paid_at, owner_address) VALUES ${values.join(', ')}`, params);
}

async function insertSplits(db: Queryable, rows: SplitRow[]): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = [];
  const values = rows.map((r) => {
    params.push(r.payment_hash, r.owner_address, r.amount_msat, r.owner_msat, r.fee_msat, r.state);
    const n = params.length;
    return `($${n - 5}, $${n - 4}, $${n - 3}::int8, $${n - 2}::int8, $${n - 1}::int8, $${n})`;
  });
  await db.query(`INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state) VALUES ${values.join(', ')}`, params);
}

// ---------------------------------------------------------------------------
// The brute force: the stats object recomputed from every row, in TypeScript

interface SessionRow {
  session_id: string;
  unit_price_msat: number | null;
  spent_msat: number;
  refund_msat: number;
  refund_state: 'none' | 'due' | 'failed' | 'paid' | 'given-up' | null;
}

interface RefusedTopUpRow {
  payment_hash: string;
  session_id: string;
  amount_msat: number;
}

/**
 * Prepaid sessions on some of the payments (their deposits), in every refund
 * state, and top-ups some of them refused (migration 008): some since used as
 * a payment (another deposit's hash), the others used by nothing.
 */
async function insertSessions(db: Queryable, gen: Generator, deposits: PaymentRow[]): Promise<void> {
  for (const p of deposits) {
    for (let i = gen.int(3) - 1; i > 0; i--) {
      const used = gen.chance(0.4);
      await db.query(
        `INSERT INTO session_refused_topups (payment_hash, session_id, amount_msat, refund_state, refused_at) VALUES ($1, $2, $3, $4, now())
         ON CONFLICT (payment_hash) DO NOTHING`,
        [
          used ? gen.pick(deposits).payment_hash : bytesToHex(randomBytes(32)),
          p.payment_hash,
          (1 + gen.int(50)) * 1000,
          gen.pick(['paying', 'paid', 'given-up']),
        ],
      );
    }
    const unit = gen.pick([1000, 2000, null]);
    const paid = Math.max(1, p.amount_sats ?? 1) * 1000;
    const spent = gen.int(paid + 1);
    const state = gen.pick(['none', 'due', 'failed', 'paid', 'given-up', null] as const);
    await db.query(
      'INSERT INTO payment_sessions (session_id, unit_price_msat, paid_msat, spent_msat, refund_msat, refund_state) VALUES ($1, $2, $3, $4, $5, $6)',
      [p.payment_hash, unit, paid, spent, state === 'none' || state === null ? 0 : paid - spent + gen.int(2) * 500, state],
    );
  }
}

interface Snapshot {
  payments: PaymentRow[];
  splits: SplitRow[];
  sessions: SessionRow[];
  refusedTopUps: RefusedTopUpRow[];
  pro: Array<{ address: string; expires_at: Date }>;
  links: Array<{ pubkey: string; address: string }>;
}

async function snapshot(db: Queryable): Promise<Snapshot> {
  const payments = (await db.query('SELECT id, payment_hash, endpoint, amount_sats, paid_at, owner_address FROM payments')).map((r) => ({
    id: String(r.id),
    payment_hash: String(r.payment_hash),
    endpoint: r.endpoint as string | null,
    amount_sats: r.amount_sats === null ? null : Number(r.amount_sats),
    paid_at: r.paid_at as Date,
    owner_address: r.owner_address as string | null,
  }));
  const splits = (await db.query('SELECT payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state FROM splits')).map((r) => ({
    payment_hash: String(r.payment_hash),
    owner_address: String(r.owner_address),
    amount_msat: Number(r.amount_msat),
    owner_msat: Number(r.owner_msat),
    fee_msat: Number(r.fee_msat),
    state: r.state as SplitRow['state'],
  }));
  const pro = (await db.query('SELECT address, expires_at FROM pro_subscriptions')).map((r) => ({
    address: String(r.address),
    expires_at: r.expires_at as Date,
  }));
  const links = (await db.query('SELECT pubkey, address FROM address_links')).map((r) => ({ pubkey: String(r.pubkey), address: String(r.address) }));
  const sessions = (await db.query('SELECT session_id, unit_price_msat, spent_msat, refund_msat, refund_state FROM payment_sessions')).map((r) => ({
    session_id: String(r.session_id),
    unit_price_msat: r.unit_price_msat === null ? null : Number(r.unit_price_msat),
    spent_msat: Number(r.spent_msat),
    refund_msat: Number(r.refund_msat),
    refund_state: r.refund_state as SessionRow['refund_state'],
  }));
  const refusedTopUps = (await db.query('SELECT payment_hash, session_id, amount_msat FROM session_refused_topups')).map((r) => ({
    payment_hash: String(r.payment_hash),
    session_id: String(r.session_id),
    amount_msat: Number(r.amount_msat),
  }));
  return { payments, splits, pro, links, sessions, refusedTopUps };
}

interface Expected extends PaymentStats {
  /** msat: owners' unpaid splits; for admins, not from the database. */
  owedMsat: number;
  tier: 'admin' | 'pro' | 'free';
}

function bruteForce(data: Snapshot, who: { pubkey: string; admin: boolean }, now: Date): Expected {
  const addresses = who.admin ? null : new Set(data.links.filter((l) => l.pubkey === who.pubkey).map((l) => l.address));
  const pro = addresses !== null && data.pro.some((s) => addresses.has(s.address) && s.expires_at.getTime() > now.getTime());
  const since = who.admin || pro ? null : now.getTime() - 7 * DAY_MS;
  const owned = data.payments.filter((p) => addresses === null || (p.owner_address !== null && addresses.has(p.owner_address)));
  const visible = owned.filter((p) => since === null || p.paid_at.getTime() >= since);
  const fees = new Map(data.splits.map((s) => [s.payment_hash, s.fee_msat]));
  const sats = (rows: PaymentRow[]) => rows.reduce((sum, p) => sum + (p.amount_sats ?? 0), 0);
  const groupBy = (rows: PaymentRow[], key: (p: PaymentRow) => string | null) => {
    const groups = new Map<string, PaymentRow[]>();
    for (const p of rows) {
      const k = key(p);
      if (k !== null) groups.set(k, [...(groups.get(k) ?? []), p]);
    }
    return groups;
  };
  const week = visible.filter((p) => p.paid_at.getTime() >= now.getTime() - 7 * DAY_MS);
  // Sessions on the visible deposits; revenue is received minus refunds paid, each group's refunds rounded up to whole sats.
  const deposits = new Map(visible.map((p) => [p.payment_hash, p]));
  const sessions = data.sessions.filter((s) => deposits.has(s.session_id));
  const refundedMsat = (rows: PaymentRow[]) =>
    sessions.filter((s) => s.refund_state === 'paid' && rows.some((p) => p.payment_hash === s.session_id)).reduce((sum, s) => sum + s.refund_msat, 0);
  const kept = (rows: PaymentRow[]) => sats(rows) - Math.ceil(refundedMsat(rows) / 1000);
  const countKept = (groups: Map<string, PaymentRow[]>) =>
    Object.fromEntries([...groups].sort(([a], [b]) => (a < b ? -1 : 1)).map(([key, rows]) => [key, { count: rows.length, sats: kept(rows) }]));
  const refunds = (states: SessionRow['refund_state'][]) => {
    const matching = sessions.filter((s) => states.includes(s.refund_state));
    return { count: matching.length, sats: Math.ceil(matching.reduce((sum, s) => sum + s.refund_msat, 0) / 1000) };
  };
  // Top-ups refused by the visible deposits' sessions; unused: no payment (in any scope) has their hash.
  const refused = data.refusedTopUps.filter((r) => deposits.has(r.session_id));
  const countAndSats = (rows: RefusedTopUpRow[]) => ({ count: rows.length, sats: Math.ceil(rows.reduce((sum, r) => sum + r.amount_msat, 0) / 1000) });
  const recent = [...visible]
    .sort((a, b) => b.paid_at.getTime() - a.paid_at.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .slice(0, RECENT_LIMIT)
    .map(toRecord);
  return {
    tier: who.admin ? 'admin' : pro ? 'pro' : 'free',
    totalPayments: visible.length,
    totalSats: kept(visible),
    serviceFee: Math.floor(visible.reduce((sum, p) => sum + (fees.get(p.payment_hash) ?? 0), 0) / 1000),
    byOwner: countKept(groupBy(visible, (p) => p.owner_address)),
    byDay: countKept(groupBy(visible, (p) => p.paid_at.toISOString().slice(0, 10))),
    trend: { payments7d: week.length, sats7d: kept(week) },
    recent,
    sessions: {
      count: sessions.length,
      units: sessions.reduce((sum, s) => sum + (s.unit_price_msat ? Math.floor(s.spent_msat / s.unit_price_msat) : 0), 0),
      spentSats: Math.floor(sessions.reduce((sum, s) => sum + s.spent_msat, 0) / 1000),
      refunded: refunds(['paid']),
      owed: refunds(['due', 'failed']),
      givenUp: refunds(['given-up']),
      topUpsRefused: { ...countAndSats(refused), unused: countAndSats(refused.filter((r) => !data.payments.some((p) => p.payment_hash === r.payment_hash))) },
    },
    owedMsat:
      addresses === null ? 0 : data.splits.filter((s) => addresses.has(s.owner_address) && s.state !== 'paid').reduce((sum, s) => sum + s.owner_msat, 0),
  };
}

function toRecord(p: PaymentRow): PaymentRecord {
  return {
    id: p.id,
    endpoint: p.endpoint,
    payment_hash: p.payment_hash,
    amount_sats: p.amount_sats,
    owner_address: p.owner_address,
    paid_at: p.paid_at.toISOString(),
  };
}

/** The roll-up itself equals a GROUP BY over the base tables (zero cells aside). */
async function expectRollUpExact(db: Queryable): Promise<void> {
  const rolled = await db.query(
    `SELECT to_char(day, 'YYYY-MM-DD') AS day, coalesce(owner_address, '<none>') AS owner, payments::int8 AS payments, sats::int8 AS sats, fee_msat::int8 AS fee
     FROM stats_daily WHERE payments <> 0 OR sats <> 0 OR fee_msat <> 0 ORDER BY 1, 2`,
  );
  const direct = await db.query(
    `SELECT to_char((p.paid_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, coalesce(p.owner_address, '<none>') AS owner,
            count(*)::int8 AS payments, coalesce(sum(p.amount_sats), 0)::int8 AS sats, coalesce(sum(s.fee_msat), 0)::int8 AS fee
     FROM payments p LEFT JOIN splits s ON s.payment_hash = p.payment_hash GROUP BY 1, 2 ORDER BY 1, 2`,
  );
  expect(rolled).toEqual(direct);
  const owed = await db.query(`SELECT owner_address, owed_msat::int8 AS msat FROM stats_owed WHERE owed_msat <> 0 ORDER BY 1`);
  const unpaid = await db.query(
    `SELECT owner_address, sum(owner_msat)::int8 AS msat FROM splits WHERE state <> 'paid' GROUP BY 1 HAVING sum(owner_msat) <> 0 ORDER BY 1`,
  );
  expect(owed).toEqual(unpaid);
}

// ---------------------------------------------------------------------------

/** Applies every migration before 005 (the roll-up), so its back-fill has rows to count. */
async function migrateBeforeStats(db: Database): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'l402-migrations-'));
  try {
    for (const file of readdirSync(MIGRATIONS_DIR))
      if (file.endsWith('.sql') && Number(file.slice(0, 3)) < 5) cpSync(join(MIGRATIONS_DIR, file), join(dir, file));
    await migrate(db, dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function seedAccess(db: Queryable, now: Date): Promise<void> {
  for (const [pubkey, address] of LINKS) await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2)', [pubkey, address]);
  await db.query('INSERT INTO pro_subscriptions (address, expires_at) VALUES ($1, $2), ($3, $4)', [
    'carol@example.com',
    new Date(now.getTime() + 10 * DAY_MS),
    'erin@example.com',
    new Date(now.getTime() - 1000),
  ]);
}

const WHO = [
  { name: 'admin', pubkey: KEYS.admin, admin: true },
  { name: 'free owner', pubkey: KEYS.free, admin: false },
  { name: 'Pro owner', pubkey: KEYS.pro, admin: false },
  { name: 'lapsed Pro owner', pubkey: KEYS.lapsed, admin: false },
  { name: 'key with no address', pubkey: KEYS.unlinked, admin: false },
] as const;

async function expectStatsExact(db: Queryable, now: Date, expectTiers?: Record<string, Expected['tier']>): Promise<void> {
  const data = await snapshot(db);
  for (const who of WHO) {
    const expected = bruteForce(data, who, now);
    const view = await statsView(db, who, now);
    const { owedMsat: owed, tier, ...history } = expected;
    expect(view.tier, who.name).toBe(tier);
    if (expectTiers?.[who.name]) expect(tier, who.name).toBe(expectTiers[who.name]);
    expect(await paymentStats(db, view), who.name).toEqual(history);
    if (view.addresses !== 'all') expect(await owedMsat(db, view.addresses), who.name).toBe(owed);
  }
  await expectRollUpExact(db);
}

for (const backend of backends) {
  describe.skipIf(backend.skip)(`stats computation on ${backend.name} (seed ${SEED})`, () => {
    let db: Database;
    let drop = async () => {};
    const gen = new Generator(SEED);
    const now = new Date();
    now.setUTCMilliseconds(500);

    beforeAll(async () => {
      const opened = await backend.open();
      drop = opened.drop;
      db = await createDatabase(opened.url === 'pglite://memory' ? { pgliteDir: null } : { url: opened.url });
      await migrateBeforeStats(db);
      await seedAccess(db, now);
      // Rows from before the roll-up existed: the migration must back-fill them.
      const before = Array.from({ length: 300 }, () => gen.payment(now));
      await insertPayments(db, before);
      await insertSplits(
        db,
        before.filter(() => gen.chance(0.7)).map((p) => gen.split(p)),
      );
      await migrate(db);
    });
    afterAll(async () => {
      await db?.close();
      await drop();
    });

    it('equals the brute force after the back-fill, for every kind of caller', async () => {
      await expectStatsExact(db, now, { admin: 'admin', 'free owner': 'free', 'Pro owner': 'pro', 'lapsed Pro owner': 'free', 'key with no address': 'free' });
      const [cells] = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM stats_daily');
      expect(cells?.n).toBeGreaterThan(0);
    });

    it('stays exact through inserts of every shape: batches, single rows, back-dated rows, splits before and after their payment', async () => {
      const batch = Array.from({ length: 200 }, () => gen.payment(now));
      // Splits that arrive before their payment row (the webhook beat the payment log).
      const early = batch.filter(() => gen.chance(0.3)).map((p) => gen.split(p));
      await insertSplits(db, early);
      await insertPayments(db, batch);
      // Some of them are prepaid sessions' deposits, with refunds paid, owed and given up.
      await insertSessions(
        db,
        gen,
        batch.filter(() => gen.chance(0.3)),
      );
      const later = batch.filter((p) => !early.some((s) => s.payment_hash === p.payment_hash) && gen.chance(0.5));
      for (const p of later.slice(0, 20)) await insertSplits(db, [gen.split(p)]);
      await insertSplits(
        db,
        later.slice(20).map((p) => gen.split(p)),
      );
      // Back-dated one by one, into days the roll-up already has and days it has not.
      for (let i = 0; i < 25; i++) await insertPayments(db, [gen.payment(now, new Date(now.getTime() - gen.int(800) * DAY_MS - gen.int(DAY_MS)))]);
      // On the free window's edge: exactly 7 × 24 h ago counts, a millisecond earlier does not.
      const edge = now.getTime() - 7 * DAY_MS;
      await insertPayments(db, [
        gen.payment(now, new Date(edge), 'alice@example.com'),
        gen.payment(now, new Date(edge - 1), 'alice@example.com'),
        gen.payment(now, new Date(edge + 1), 'bob@example.com'),
      ]);
      // Same instant, different ids: recent breaks the tie by id.
      const tie = new Date(now.getTime() - 1000);
      await insertPayments(
        db,
        Array.from({ length: 5 }, () => gen.payment(now, tie, 'carol@example.com')),
      );
      // A split with no payment row: owed to its owner, not counted as a payment.
      await insertSplits(db, [gen.split({ payment_hash: bytesToHex(randomBytes(32)), amount_sats: 42, owner_address: 'alice@example.com' })]);
      await expectStatsExact(db, now);
    });

    it('stays exact after erasure, deletes and updates of payments and splits', async () => {
      const erased = await eraseKey(db, KEYS.lapsed);
      expect(erased.payments).toBeGreaterThan(0);
      await db.query(`DELETE FROM payments WHERE payment_hash IN (SELECT payment_hash FROM payments ORDER BY payment_hash LIMIT 15)`);
      const [one] = await db.query(`SELECT payment_hash FROM payments WHERE owner_address = 'alice@example.com' ORDER BY paid_at DESC LIMIT 1`);
      await db.query('DELETE FROM payments WHERE payment_hash = $1', [one!.payment_hash]);
      // Payouts move splits along; an operator corrects a fee; splits go.
      await db.query(`UPDATE splits SET state = 'paid' WHERE state = 'pending'`);
      await db.query(
        `UPDATE splits SET fee_msat = fee_msat + 1000, owner_msat = owner_msat - 1000 WHERE owner_msat >= 1000 AND payment_hash IN (SELECT payment_hash FROM splits ORDER BY payment_hash LIMIT 10)`,
      );
      await db.query(`DELETE FROM splits WHERE payment_hash IN (SELECT payment_hash FROM splits ORDER BY payment_hash DESC LIMIT 10)`);
      // A payment moved to another day and owner; one re-priced.
      await db.query(
        `UPDATE payments SET paid_at = paid_at - interval '3 days', owner_address = 'dave@example.com' WHERE payment_hash = (SELECT min(payment_hash) FROM payments WHERE owner_address = 'bob@example.com')`,
      );
      await db.query(`UPDATE payments SET amount_sats = coalesce(amount_sats, 0) + 7 WHERE payment_hash = (SELECT max(payment_hash) FROM payments)`);
      await db.query(`UPDATE payments SET endpoint = '/api/renamed' WHERE owner_address = 'carol@example.com'`);
      await expectStatsExact(db, now);
    });

    it('streams CSV page by page without losing or repeating a row (ties on paid_at included)', async () => {
      const data = await snapshot(db);
      for (const who of WHO.slice(0, 3)) {
        const view = await statsView(db, who, now);
        const expected = data.payments
          .filter((p) => view.addresses === 'all' || (p.owner_address !== null && view.addresses.includes(p.owner_address)))
          .filter((p) => view.since === null || p.paid_at >= view.since)
          .sort((a, b) => a.paid_at.getTime() - b.paid_at.getTime() || (a.id < b.id ? -1 : 1))
          .map((p) => p.id);
        // Pages of 7, and pages that end exactly at the last row (the next page is empty).
        for (const batch of [7, expected.length, Math.ceil(expected.length / 2)]) {
          const text = await new Response(await paymentsCsv(db, view, batch)).text();
          const ids = text
            .split('\r\n')
            .slice(1, -1)
            .map((line) => line.slice(0, 36));
          // Endpoints with a line break are quoted; ids still start each record.
          expect(
            ids.filter((id) => /^[0-9a-f-]{36}$/.test(id)),
            `${who.name}, pages of ${batch}`,
          ).toEqual(expected);
        }
      }
    });

    it('follows Pro: an expired subscription means 7 days again', async () => {
      await db.query(`UPDATE pro_subscriptions SET expires_at = $1 WHERE address = 'carol@example.com'`, [new Date(now.getTime() - 1)]);
      await expectStatsExact(db, now, { 'Pro owner': 'free' });
      await db.query(`UPDATE pro_subscriptions SET expires_at = $1 WHERE address = 'carol@example.com'`, [new Date(now.getTime() + DAY_MS)]);
      await expectStatsExact(db, now, { 'Pro owner': 'pro' });
    });

    it('starts again from nothing after TRUNCATE', async () => {
      await db.query('TRUNCATE splits');
      await expectStatsExact(db, now);
      await db.query('TRUNCATE payments');
      await insertPayments(db, [gen.payment(now)]);
      await expectStatsExact(db, now);
    });

    // PGlite has one connection, so nothing can overlap there: the race exists only on a real server.
    if (backend.name === 'PostgreSQL')
      it('counts every fee when payments and their splits are written at the same moment by different transactions', async () => {
        const pairs = Array.from({ length: 12 }, () => gen.payment(now, new Date(now.getTime() - gen.int(3) * DAY_MS), gen.pick(OWNERS)));
        // Each payment and its split in two transactions that overlap (neither sees the other's row uncommitted).
        await Promise.all(
          pairs.flatMap((p, i) => [
            db.transaction(async (tx) => {
              if (i % 2) await tx.query('SELECT pg_sleep(0.05)');
              await insertPayments(tx, [p]);
              await tx.query('SELECT pg_sleep(0.1)');
            }),
            db.transaction(async (tx) => {
              if (!(i % 2)) await tx.query('SELECT pg_sleep(0.05)');
              await insertSplits(tx, [gen.split(p)]);
              await tx.query('SELECT pg_sleep(0.1)');
            }),
          ]),
        );
        await expectStatsExact(db, now);
        // And erasure-style deletes racing new splits.
        const victims = pairs.slice(0, 6);
        const fresh = Array.from({ length: 6 }, () => gen.payment(now, undefined, 'frank@example.com'));
        await insertPayments(db, fresh);
        await Promise.all([
          ...victims.map((p) =>
            db.transaction(async (tx) => {
              await tx.query('DELETE FROM payments WHERE payment_hash = $1', [p.payment_hash]);
              await tx.query('SELECT pg_sleep(0.1)');
            }),
          ),
          ...fresh.map((p) =>
            db.transaction(async (tx) => {
              await insertSplits(tx, [gen.split(p)]);
              await tx.query('SELECT pg_sleep(0.1)');
            }),
          ),
        ]);
        await expectStatsExact(db, now);
      });
  });
}

// ---------------------------------------------------------------------------
// The endpoint, through the real dev server

describe('CSV fields', () => {
  it('quotes what needs quoting and defuses spreadsheet formulas', () => {
    expect(csvField('/api/x')).toBe('/api/x');
    expect(csvField('a,b')).toBe('"a,b"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    expect(csvField('two\nlines')).toBe('"two\nlines"');
    expect(csvField('=1+1')).toBe("'=1+1");
    expect(csvField('@SUM(A1)')).toBe("'@SUM(A1)");
    expect(csvField('=HYPERLINK("x")')).toBe(`"'=HYPERLINK(""x"")"`);
    // Spreadsheets trim leading whitespace and control characters before reading a formula.
    expect(csvField('\t=1+1')).toBe("\t'=1+1");
    expect(csvField('\r=1+1')).toBe(`"\r'=1+1"`);
    expect(csvField(' \u0000\u00a0+1')).toBe(" \u0000\u00a0'+1");
    expect(csvField('a;\t @SUM(1)')).toBe("a;\t '@SUM(1)");
    expect(csvField('\t')).toBe('\t');
    expect(csvLine(['a', '', 'b'])).toBe('a,,b\r\n');
  });

  // OWASP "CSV Injection": a spreadsheet whose list separator is ";" (most of
  // Europe) or that splits on tabs starts a new cell in the middle of a field,
  // so a formula there runs although the field itself starts harmlessly.
  it('defuses a formula that starts a cell inside a field (separator, quote or line break before it)', () => {
    const cellStarts = (field: string) => field.split(/[,;\t\r\n"]/).slice(1);
    for (const endpoint of ['/api/x;=cmd|" /C calc"!A0;', '/api/x\t+1+cmd|"/C calc"!A0', '/api/x;@SUM(1+1)', 'a,-2+3', '/x\n=1+1', '/x"=1+1"']) {
      const field = csvField(endpoint);
      for (const cell of cellStarts(field)) expect(cell, `${JSON.stringify(endpoint)} -> ${JSON.stringify(field)}`).not.toMatch(/^[=+\-@]/);
    }
    // What is harmless stays as it was.
    expect(csvField('/api/a-b;c')).toBe('/api/a-b;c');
    expect(csvField('2026-11-21T08:00:00.000Z')).toBe('2026-11-21T08:00:00.000Z');
  });

  it('converts the wallet to cents only at a live price', () => {
    expect(usdCents(100_000, { usd: 65_432.1, source: 'coinbase', fetchedAt: '' })).toBe(6543);
    expect(usdCents(1, { usd: 50_000, source: 'kraken', fetchedAt: '' })).toBe(0);
    expect(usdCents(100_000, { usd: 100_000, source: 'simulated', fetchedAt: '' })).toBeNull();
  });
});

for (const backend of backends) {
  describe.skipIf(backend.skip)(`GET /api/stats on ${backend.name} (seed ${SEED})`, () => {
    const server = useDevServerOn(backend, () => ({ ADMIN_PUBKEYS: KEYS.admin }));
    const gen = new Generator(SEED + 1);
    const tokens: Record<string, string> = {};

    beforeAll(async () => {
      const now = new Date();
      await seedAccess(server.db, now);
      const rows = Array.from({ length: 150 }, () => gen.payment(now));
      // Every endpoint, hostile ones included, at least once for every owner, whatever the seed: the CSV checks below look for them.
      for (const owner of OWNERS) for (const endpoint of ENDPOINTS) rows.push({ ...gen.payment(now, undefined, owner), endpoint });
      await insertPayments(server.db, rows);
      await insertSessions(
        server.db,
        gen,
        rows.filter(() => gen.chance(0.3)),
      );
      await insertSplits(
        server.db,
        rows.filter(() => gen.chance(0.7)).map((p) => gen.split(p)),
      );
      // Sessions issued by the auth module's own createLogin (what the LNURL-auth callback calls once the signature checks out).
      for (const [name, pubkey] of Object.entries(KEYS)) tokens[name] = (await createLogin(server.ctx, pubkey)).token;
    });

    const get = (query: string, token?: string) => fetch(`${server.url}/api/stats${query}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

    async function expectError(response: Response, status: number, code: string): Promise<void> {
      const body = (await response.json()) as { error: unknown; code: unknown };
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(body).toEqual(expect.objectContaining({ error: expect.any(String), code }));
    }

    it('answers 401 without a session, with an unknown one, and with a malformed header', async () => {
      await expectError(await get(''), 401, 'SESSION_REQUIRED');
      await expectError(await get('', 'A'.repeat(43)), 401, 'SESSION_INVALID');
      await expectError(await fetch(`${server.url}/api/stats?format=csv`, { headers: { authorization: 'Basic abc' } }), 401, 'SESSION_INVALID');
    });

    it('answers 400 for an unknown format', async () => {
      await expectError(await get('?format=xml', tokens.pro), 400, 'INVALID_REQUEST');
    });

    for (const who of WHO) {
      it(`gives the ${who.name} exactly the brute-force stats, privately`, async () => {
        const name = Object.entries(KEYS).find(([, key]) => key === who.pubkey)![0];
        const response = await get('', tokens[name]);
        const body = (await response.json()) as PaymentStats & {
          walletSats: number;
          walletUsdCents: number | null;
          btcPrice: { source: string };
          scope: { tier: string; generatedAt: string; since: string | null };
        };
        expect(response.status, JSON.stringify(body)).toBe(200);
        expect(response.headers.get('cache-control')).toBe('no-store');
        const now = new Date(body.scope.generatedAt);
        const { owedMsat: owed, tier, ...history } = bruteForce(await snapshot(server.db), who, now);
        expect(body.scope.tier).toBe(tier);
        expect(body.scope.since).toBe(tier === 'free' ? new Date(now.getTime() - 7 * DAY_MS).toISOString() : null);
        const walletMsat = who.admin ? (await server.ctx.provider.balance()).balanceMsat : owed;
        expect(body).toEqual({
          ...history,
          walletSats: Math.floor(walletMsat / 1000),
          walletUsdCents: null,
          btcPrice: expect.objectContaining({ source: 'simulated' }),
          scope: expect.any(Object),
        });
        // Integers only, as the stats object promises (walletUsdCents is null: the test runs offline, BTC_PRICE_SOURCES=none).
        for (const field of ['totalPayments', 'totalSats', 'serviceFee', 'walletSats'] as const) expect(Number.isInteger(body[field])).toBe(true);
        if (!who.admin) expect(body.serviceFee).toBe(history.serviceFee);
      });
    }

    it('refuses CSV to a free owner with 403', async () => {
      await expectError(await get('?format=csv', tokens.free), 403, 'PRO_REQUIRED');
    });

    for (const name of ['pro', 'admin'] as const) {
      it(`exports the ${name}'s full history as exact CSV`, async () => {
        const response = await get('?format=csv', tokens[name]);
        const text = await response.text();
        expect(response.status, text.slice(0, 300)).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/csv; charset=utf-8');
        expect(response.headers.get('content-disposition')).toMatch(/^attachment; filename="payments-\d{4}-\d{2}-\d{2}\.csv"$/);
        expect(response.headers.get('cache-control')).toBe('no-store');
        const data = await snapshot(server.db);
        const addresses = name === 'admin' ? null : new Set(data.links.filter((l) => l.pubkey === KEYS[name]).map((l) => l.address));
        const rows = data.payments
          .filter((p) => addresses === null || (p.owner_address !== null && addresses.has(p.owner_address)))
          .sort((a, b) => a.paid_at.getTime() - b.paid_at.getTime() || (a.id < b.id ? -1 : 1));
        expect(rows.length).toBeGreaterThan(0);
        const quote = (v: string) => {
          const safe = v.replace(/^([\s\u0000-\u001f\u007f-\u009f]*)(?=[=+\-@])/, "$1'");
          return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
        };
        const expected = [
          CSV_COLUMNS.join(','),
          ...rows.map((p) =>
            [p.id, p.endpoint ?? '', p.payment_hash, p.amount_sats ?? '', p.owner_address ?? '', p.paid_at.toISOString()]
              .map((v) => quote(String(v)))
              .join(','),
          ),
        ]
          .map((line) => `${line}\r\n`)
          .join('');
        expect(text).toBe(expected);
        expect(text).toContain('"/api/a,b"');
        expect(text).toContain(`"'=HYPERLINK(""http://x"")"`);
        // Past leading whitespace and control characters too (spreadsheets trim them, then read a formula).
        expect(text).toContain(`,\t'=1+1,`);
        expect(text).toContain(`, \u0001'=SUM(1),`);
        expect(text).not.toMatch(/[,;\t\r\n"][\s\u0000-\u001f]*[=+@]/);
      });
    }
  });
}
