// The stats' SQL (docs/architecture.md decision 11): totals, per day and per
// owner, the service fee, the 7-day trend and the recent payments over the
// payments a scope covers, and pages of those payments for the CSV export.
//
// Speed: totals, byDay, byOwner and the fee come from the stats_daily roll-up
// (migration 005, exact and kept by triggers), so an admin's stats read one
// row per day and owner instead of every payment. A window that starts inside
// a day (now - 7 days) takes whole days from the roll-up and the first,
// partial day from the payments themselves. What owners are owed comes from
// the stats_owed roll-up (one row per owner).
//
// Rounding: serviceFee = floor(sum of fee_msat / 1000) over the scope's
// payments' splits.
//
// Prepaid sessions (migration 007): a session's deposit and top-ups are
// payments; what it spent is not. Revenue is what was kept: a refund paid
// back is taken off totalSats, byDay, byOwner and the trend, in the cell (day,
// owner) of the session's deposit, a fraction of a sat counting as a whole one.
// `sessions` shows the sessions, their spending and their refunds, and the
// top-ups they refused (migration 008: paid after the refund had started, not
// taken, so not payments).
import type { Queryable } from '../../db/types.js';

export const TREND_DAYS = 7;
export const RECENT_LIMIT = 50;
const DAY_MS = 86_400_000;

/** docs/architecture.md "The hosted interface's records". Columns the payment log may leave empty are null. */
export interface PaymentRecord {
  id: string;
  endpoint: string | null;
  payment_hash: string;
  amount_sats: number | null;
  owner_address: string | null;
  paid_at: string;
}

export interface CountAndSats {
  count: number;
  sats: number;
}

/** The history part of the stats object: everything computed from payments and splits. */
export interface PaymentStats {
  totalPayments: number;
  totalSats: number;
  /** floor(sum of the visible payments' splits.fee_msat / 1000). */
  serviceFee: number;
  /** Payments without an owner (sovereign mode, the demo) count in the totals, not here. */
  byOwner: Record<string, CountAndSats>;
  /** UTC days, YYYY-MM-DD, ascending. */
  byDay: Record<string, CountAndSats>;
  /** The visible payments of the last 7 × 24 hours. */
  trend: { payments7d: number; sats7d: number };
  /** Newest first (paid_at, then id), at most RECENT_LIMIT. */
  recent: PaymentRecord[];
  /** Prepaid sessions whose deposit is among the visible payments. */
  sessions: SessionStats;
}

export interface SessionStats {
  /** Sessions opened (their deposits and top-ups are among the payments). */
  count: number;
  /** What the requests and streams they served spent: units, and sats (floor). Not payments. */
  units: number;
  spentSats: number;
  /** Refunds paid back: already taken off the totals. */
  refunded: CountAndSats;
  /** Refunds due or failed and retried: still owed. */
  owed: CountAndSats;
  /** Refunds given up: owed, the operator's to settle by hand. */
  givenUp: CountAndSats;
  /**
   * Top-ups refused because their session's refund had started (migration 008):
   * paid to the node but not taken, their payments left to the clients to open
   * a session with. Not in the totals (not payments, unless a client used one).
   */
  topUpsRefused: CountAndSats & {
    /** Of those, the ones no session has used since (no payment with their hash): received, and nothing given for them. */
    unused: CountAndSats;
  };
}

/** Which payments a caller sees. */
export interface StatsScope {
  /** 'all' (admins) or the linked addresses (possibly none). */
  addresses: 'all' | string[];
  /** Start of the window (inclusive), or null for the full history. */
  since: Date | null;
  now: Date;
}

/** Totals, byOwner, byDay, fee, trend and recent over the payments of `scope`. */
export async function paymentStats(db: Queryable, scope: StatsScope): Promise<PaymentStats> {
  const trendSince = new Date(scope.now.getTime() - TREND_DAYS * DAY_MS);
  const trendIsWindow = scope.since !== null && scope.since.getTime() === trendSince.getTime();
  const [received, receivedTrend, recent, sessionCells, topUpsRefused] = await Promise.all([
    groupedTotals(db, scope),
    trendIsWindow ? null : windowTotals(db, { ...scope, since: trendSince }),
    recentPayments(db, scope, RECENT_LIMIT),
    sessionTotals(db, scope, trendSince),
    refusedTopUps(db, scope),
  ]);
  const kept = keptRevenue(received, sessionCells);
  const trend = receivedTrend ?? { payments7d: received.totalPayments, sats7d: received.totalSats };
  const refundedThisWeek = refundSats(sessionCells.filter((cell) => cell.inTrend).reduce((sum, cell) => sum + cell.refundedMsat, 0));
  return {
    ...kept,
    trend: { payments7d: trend.payments7d, sats7d: trend.sats7d - refundedThisWeek },
    recent,
    sessions: { ...sessionSummary(sessionCells), topUpsRefused },
  };
}

/** Sessions of one (deposit day, owner), and whether their deposits fall in the 7-day trend. */
interface SessionCell {
  day: string;
  owner: string | null;
  inTrend: boolean;
  sessions: number;
  units: number;
  spentMsat: number;
  refunded: number;
  refundedMsat: number;
  owed: number;
  owedMsat: number;
  givenUp: number;
  givenUpMsat: number;
}

/** The sessions whose deposit is among the scope's payments, per (deposit day, owner, in the trend). */
async function sessionTotals(db: Queryable, scope: StatsScope, trendSince: Date): Promise<SessionCell[]> {
  const params: unknown[] = [];
  const conditions: string[] = [];
  if (scope.addresses !== 'all') conditions.push(`p.owner_address = ANY(${param(params, scope.addresses)}::text[])`);
  if (scope.since !== null) conditions.push(`p.paid_at >= ${param(params, scope.since)}`);
  const trend = param(params, trendSince);
  const sum = (what: string, state: string) => `coalesce(sum(${what}) FILTER (WHERE ps.refund_state IN (${state})), 0)::int8`;
  const rows = await db.query(
    `SELECT to_char((p.paid_at AT TIME ZONE 'UTC')::date, 'YYYY-MM-DD') AS day, p.owner_address AS owner, p.paid_at >= ${trend} AS in_trend,
            count(*)::int8 AS sessions, coalesce(sum(ps.spent_msat / ps.unit_price_msat), 0)::int8 AS units, coalesce(sum(ps.spent_msat), 0)::int8 AS spent_msat,
            ${sum('1', `'paid'`)} AS refunded, ${sum('ps.refund_msat', `'paid'`)} AS refunded_msat,
            ${sum('1', `'due', 'failed'`)} AS owed, ${sum('ps.refund_msat', `'due', 'failed'`)} AS owed_msat,
            ${sum('1', `'given-up'`)} AS given_up, ${sum('ps.refund_msat', `'given-up'`)} AS given_up_msat
     FROM payment_sessions ps JOIN payments p ON p.payment_hash = ps.session_id
     ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}
     GROUP BY 1, 2, 3`,
    params,
  );
  return rows.map((row) => ({
    day: String(row.day),
    owner: row.owner === null ? null : String(row.owner),
    inTrend: row.in_trend === true,
    sessions: int(row.sessions),
    units: int(row.units),
    spentMsat: int(row.spent_msat),
    refunded: int(row.refunded),
    refundedMsat: int(row.refunded_msat),
    owed: int(row.owed),
    owedMsat: int(row.owed_msat),
    givenUp: int(row.given_up),
    givenUpMsat: int(row.given_up_msat),
  }));
}

/** The top-ups refused by the sessions whose deposit is among the scope's payments, and those of them no session has used since. */
async function refusedTopUps(db: Queryable, scope: StatsScope): Promise<SessionStats['topUpsRefused']> {
  const params: unknown[] = [];
  const conditions: string[] = [];
  if (scope.addresses !== 'all') conditions.push(`p.owner_address = ANY(${param(params, scope.addresses)}::text[])`);
  if (scope.since !== null) conditions.push(`p.paid_at >= ${param(params, scope.since)}`);
  const unused = 'NOT EXISTS (SELECT 1 FROM payments u WHERE u.payment_hash = r.payment_hash)';
  const [row] = await db.query(
    `SELECT count(*)::int8 AS count, coalesce(sum(r.amount_msat), 0)::int8 AS msat,
            count(*) FILTER (WHERE ${unused})::int8 AS unused, coalesce(sum(r.amount_msat) FILTER (WHERE ${unused}), 0)::int8 AS unused_msat
     FROM session_refused_topups r JOIN payments p ON p.payment_hash = r.session_id
     ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''}`,
    params,
  );
  return {
    count: int(row?.count),
    sats: refundSats(int(row?.msat)),
    unused: { count: int(row?.unused), sats: refundSats(int(row?.unused_msat)) },
  };
}

const refundSats = (msat: number) => Math.ceil(msat / 1000);

type Grouped = Pick<PaymentStats, 'totalPayments' | 'totalSats' | 'serviceFee' | 'byOwner' | 'byDay'>;

/** Received minus refunded, in the total and in the cells of the sessions' deposits. */
function keptRevenue(received: Grouped, cells: SessionCell[]): Grouped {
  const byDay = structuredClone(received.byDay);
  const byOwner = structuredClone(received.byOwner);
  let refundedMsat = 0;
  const refundedByDay = new Map<string, number>();
  const refundedByOwner = new Map<string, number>();
  for (const cell of cells) {
    refundedMsat += cell.refundedMsat;
    refundedByDay.set(cell.day, (refundedByDay.get(cell.day) ?? 0) + cell.refundedMsat);
    if (cell.owner !== null) refundedByOwner.set(cell.owner, (refundedByOwner.get(cell.owner) ?? 0) + cell.refundedMsat);
  }
  for (const [day, msat] of refundedByDay) if (byDay[day]) byDay[day].sats -= refundSats(msat);
  for (const [owner, msat] of refundedByOwner) if (byOwner[owner]) byOwner[owner].sats -= refundSats(msat);
  return { ...received, byDay, byOwner, totalSats: received.totalSats - refundSats(refundedMsat) };
}

function sessionSummary(cells: SessionCell[]): Omit<SessionStats, 'topUpsRefused'> {
  const total = (pick: (cell: SessionCell) => number) => cells.reduce((sum, cell) => sum + pick(cell), 0);
  return {
    count: total((c) => c.sessions),
    units: total((c) => c.units),
    spentSats: Math.floor(total((c) => c.spentMsat) / 1000),
    refunded: { count: total((c) => c.refunded), sats: refundSats(total((c) => c.refundedMsat)) },
    owed: { count: total((c) => c.owed), sats: refundSats(total((c) => c.owedMsat)) },
    givenUp: { count: total((c) => c.givenUp), sats: refundSats(total((c) => c.givenUpMsat)) },
  };
}

/** What the service still owes these owners: their splits not yet paid out (accrued, pending, failed), in msat. */
export async function owedMsat(db: Queryable, addresses: string[]): Promise<number> {
  if (addresses.length === 0) return 0;
  // The stats_owed roll-up (migration 005): one row per owner, however many splits wait.
  const [row] = await db.query('SELECT coalesce(sum(owed_msat), 0)::int8 AS msat FROM stats_owed WHERE owner_address = ANY($1::text[])', [addresses]);
  return int(row?.msat);
}

interface Sql {
  text: string;
  params: unknown[];
}

/** Appends a parameter and returns its placeholder. */
function param(params: unknown[], value: unknown): string {
  params.push(value);
  return `$${params.length}`;
}

/**
 * One row per (UTC day, owner) with payments, sats and fee_msat, over the
 * scope: whole days from the roll-up, the partial first day of a window
 * from payments ⋈ splits.
 */
function cells(scope: StatsScope, params: unknown[]): string {
  const addresses = scope.addresses === 'all' ? null : param(params, scope.addresses);
  const owned = (column: string) => (addresses === null ? 'TRUE' : `${column} = ANY(${addresses}::text[])`);
  const rolled = `SELECT day, owner_address, payments, sats, fee_msat FROM stats_daily WHERE payments > 0 AND ${owned('owner_address')}`;
  if (scope.since === null) return rolled;
  const since = param(params, scope.since);
  const firstDay = `(${since}::timestamptz AT TIME ZONE 'UTC')::date`;
  return `${rolled} AND day > ${firstDay}
    UNION ALL
    SELECT (p.paid_at AT TIME ZONE 'UTC')::date, p.owner_address, count(*), coalesce(sum(p.amount_sats), 0), coalesce(sum(s.fee_msat), 0)
    FROM payments p LEFT JOIN splits s ON s.payment_hash = p.payment_hash
    WHERE ${owned('p.owner_address')} AND p.paid_at >= ${since} AND p.paid_at < (${firstDay} + 1)::timestamp AT TIME ZONE 'UTC'
    GROUP BY 1, 2`;
}

async function groupedTotals(
  db: Queryable,
  scope: StatsScope,
): Promise<Pick<PaymentStats, 'totalPayments' | 'totalSats' | 'serviceFee' | 'byOwner' | 'byDay'>> {
  const params: unknown[] = [];
  // grouping(): 1 = the (day) set, 2 = the (owner) set, 3 = the grand total.
  const rows = await db.query(
    `WITH cells AS (${cells(scope, params)})
     SELECT grouping(day, owner_address) AS set, to_char(day, 'YYYY-MM-DD') AS day, owner_address AS owner,
            coalesce(sum(payments), 0)::int8 AS count, coalesce(sum(sats), 0)::int8 AS sats, coalesce(sum(fee_msat), 0)::int8 AS fee_msat
     FROM cells GROUP BY GROUPING SETS ((day), (owner_address), ())
     ORDER BY set, day, owner`,
    params,
  );
  const byDay: Record<string, CountAndSats> = {};
  const byOwner: Record<string, CountAndSats> = {};
  let total = { count: 0, sats: 0, feeMsat: 0 };
  for (const row of rows) {
    const set = int(row.set);
    const entry = { count: int(row.count), sats: int(row.sats) };
    if (set === 1) byDay[String(row.day)] = entry;
    else if (set === 2 && row.owner !== null) byOwner[String(row.owner)] = entry;
    else if (set === 3) total = { ...entry, feeMsat: int(row.fee_msat) };
  }
  return { totalPayments: total.count, totalSats: total.sats, serviceFee: Math.floor(total.feeMsat / 1000), byOwner, byDay };
}

async function windowTotals(db: Queryable, scope: StatsScope): Promise<PaymentStats['trend']> {
  const params: unknown[] = [];
  const [row] = await db.query(
    `WITH cells AS (${cells(scope, params)}) SELECT coalesce(sum(payments), 0)::int8 AS count, coalesce(sum(sats), 0)::int8 AS sats FROM cells`,
    params,
  );
  return { payments7d: int(row?.count), sats7d: int(row?.sats) };
}

const RECORD_COLUMNS = 'id, endpoint, payment_hash, amount_sats, owner_address, paid_at';

/**
 * Payments of the scope in (paid_at, id) order, `limit` of them, after (or before,
 * newest first) the cursor. Owners' addresses are read one index range each and
 * merged, so a few addresses never mean a scan of every payment.
 */
export function pageOfPayments(scope: StatsScope, options: { newestFirst: boolean; limit: number; after?: Cursor }): Sql {
  const params: unknown[] = [];
  const direction = options.newestFirst ? 'DESC' : 'ASC';
  const conditions: string[] = [];
  if (scope.since !== null) conditions.push(`paid_at >= ${param(params, scope.since)}`);
  if (options.after) {
    const at = param(params, options.after.paidAt);
    const id = param(params, options.after.id);
    const op = options.newestFirst ? '<' : '>';
    // The plain comparison lets the paid_at index bound the scan; the row comparison breaks ties.
    conditions.push(`paid_at ${op}= ${at}::timestamptz AND (paid_at, id) ${op} (${at}::timestamptz, ${id}::uuid)`);
  }
  const limit = param(params, options.limit);
  const order = `ORDER BY paid_at ${direction}, id ${direction} LIMIT ${limit}`;
  const columns = `${RECORD_COLUMNS}, paid_at::text AS cursor_at`;
  if (scope.addresses === 'all') {
    return { text: `SELECT ${columns} FROM payments ${conditions.length ? `WHERE ${conditions.join(' AND ')}` : ''} ${order}`, params };
  }
  const addresses = param(params, scope.addresses);
  const where = ['owner_address = a.address', ...conditions].join(' AND ');
  return {
    text: `SELECT r.* FROM unnest(${addresses}::text[]) AS a(address)
           CROSS JOIN LATERAL (SELECT ${columns} FROM payments WHERE ${where} ${order}) AS r
           ORDER BY r.paid_at ${direction}, r.id ${direction} LIMIT ${limit}`,
    params,
  };
}

export interface Cursor {
  /** paid_at as PostgreSQL printed it: microseconds survive the round trip (a Date would lose them). */
  paidAt: string;
  id: string;
}

async function recentPayments(db: Queryable, scope: StatsScope, limit: number): Promise<PaymentRecord[]> {
  const sql = pageOfPayments(scope, { newestFirst: true, limit });
  return (await db.query(sql.text, sql.params)).map(toRecord);
}

export function toRecord(row: Record<string, unknown>): PaymentRecord {
  return {
    id: String(row.id),
    endpoint: row.endpoint === null ? null : String(row.endpoint),
    payment_hash: String(row.payment_hash),
    amount_sats: row.amount_sats === null ? null : int(row.amount_sats),
    owner_address: row.owner_address === null ? null : String(row.owner_address),
    paid_at: toIso(row.paid_at),
  };
}

/** int8 arrives as a number (or bigint past 2^53); sums are cast to int8 in SQL. */
function int(value: unknown): number {
  const n = typeof value === 'bigint' ? Number(value) : Number(value ?? 0);
  if (!Number.isSafeInteger(n)) throw new Error(`stats: ${String(value)} is not a safe integer`);
  return n;
}

function toIso(value: unknown): string {
  return (value instanceof Date ? value : new Date(String(value))).toISOString();
}
