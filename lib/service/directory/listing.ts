// GET /api/apis.json: the directory for agents, newest first, as JSON text.
import type { ServiceContext } from '../context.js';
import type { Category, DirectoryEntry, DirectoryListing } from './entry.js';

// Only the listed columns, created_at as JavaScript's toISOString() writes it
// (whatever the session time zone), newest first; then whether the entry is the
// service's own demo (demo-entry.ts), listed as `demo: true` on that entry only.
const ROWS = (where: string) => `
  SELECT a.url, a.name, a.description, a.price_sats, a.category,
         to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at, a.demo
  FROM apis a ${where}
  ORDER BY a.created_at DESC, a.id`;
const LISTED = `'url', t.url, 'name', t.name, 'description', t.description, 'price_sats', t.price_sats, 'category', t.category, 'created_at', t.created_at`;
const ENTRY_JSON = `CASE WHEN t.demo THEN json_build_object(${LISTED}, 'demo', true) ELSE json_build_object(${LISTED}) END`;
// PGlite pays for every field it hands over (10,000 rows: ~85 ms against ~30 ms
// for one text value), so there the database writes the JSON array itself. A
// sorted subquery feeding json_agg keeps its order when, as here, nothing else
// happens at the outer level (PostgreSQL docs, "Aggregate Expressions"). A
// server's driver decodes rows faster than the server aggregates them.
const AS_JSON = (where: string) => `SELECT count(*)::int AS count, coalesce(json_agg(${ENTRY_JSON}), '[]')::text AS apis FROM (${ROWS(where)}) t`;
const BY_CATEGORY = 'WHERE a.category = $1';
const QUERIES = {
  rows: { all: ROWS(''), category: ROWS(BY_CATEGORY) },
  json: { all: AS_JSON(''), category: AS_JSON(BY_CATEGORY) },
};

/**
 * GET /api/apis.json's body, `DirectoryListing` as JSON text: newest first,
 * the Lightning Address never listed.
 */
export async function listApisJson(ctx: ServiceContext, category?: Category): Promise<{ count: number; json: string }> {
  const db = await ctx.database();
  const params = category ? [category] : [];
  if (db.kind === 'pglite') {
    const [row] = await db.query<{ count: number; apis: string }>(category ? QUERIES.json.category : QUERIES.json.all, params);
    const count = Number(row?.count ?? 0);
    return { count, json: `{"version":"1","count":${count},"apis":${row?.apis ?? '[]'}}` };
  }
  const rows = await db.query<Omit<DirectoryEntry, 'demo'> & { demo: boolean } & Record<string, unknown>>(
    category ? QUERIES.rows.category : QUERIES.rows.all,
    params,
  );
  // Row objects carry the columns in SELECT order, which is the listing's field order.
  const apis = rows.map(({ demo, ...entry }): DirectoryEntry => (demo ? { ...entry, demo } : entry));
  return { count: apis.length, json: JSON.stringify({ version: '1', count: apis.length, apis } satisfies DirectoryListing) };
}
