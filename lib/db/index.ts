// Chooses the database from config: PGlite when no DATABASE_URL is set
// (in memory or under DATA_DIR), the Neon driver for Neon hosts, node-postgres
// for any other postgres:// server. Each driver is imported when a database
// of its kind is first created, never at import: a function instance loads
// the one driver its configuration names (or none, if it never opens one).
import { isAbsolute, relative } from 'node:path';
import type { Config } from '../config.js';
import { migrate, type AppliedMigration } from './migrate.js';
import type { NeonSocketOptions } from './neon.js';
import type { Database, Row } from './types.js';

export type { Database, Queryable, Row, Transaction } from './types.js';
export { DatabaseUnavailable, isUniqueViolation, sqlState } from './types.js';
export { migrate, MigrationError, type AppliedMigration } from './migrate.js';

export type DatabaseConfig = NonNullable<Config['database']>;

export interface CreateDatabaseOptions {
  /** WebSocket settings for the Neon driver (tests reach a local proxy with them). */
  neon?: NeonSocketOptions;
}

/** Which driver a postgres:// URL gets: Neon's own hosts speak WebSocket, everything else plain TCP. */
export function driverFor(url: string): 'neon' | 'pg' {
  let host: string;
  try {
    host = new URL(url).hostname.toLowerCase();
  } catch {
    return 'pg'; // node-postgres reports what is wrong with the URL
  }
  return host.endsWith('.neon.tech') || host.endsWith('.neon.build') ? 'neon' : 'pg';
}

export async function createDatabase(config: DatabaseConfig, options: CreateDatabaseOptions = {}): Promise<Database> {
  if ('pgliteDir' in config) {
    const { createPgliteDatabase } = await import('./pglite.js');
    return createPgliteDatabase(config.pgliteDir ? { dataDir: config.pgliteDir } : {});
  }
  if (driverFor(config.url) === 'neon') {
    const { createNeonDatabase } = await import('./neon.js');
    return createNeonDatabase(config.url, { socket: options.neon });
  }
  const { createPgDatabase } = await import('./pg.js');
  return createPgDatabase(config.url);
}

/** Where the database is, for start-up lines and errors: never the password. */
export function describeDatabase(config: DatabaseConfig): string {
  if ('pgliteDir' in config) {
    if (!config.pgliteDir) return 'PGlite in memory';
    const path = relative(process.cwd(), config.pgliteDir);
    return `PGlite at ${path && !path.startsWith('..') && !isAbsolute(path) ? path : config.pgliteDir}`;
  }
  try {
    const url = new URL(config.url);
    const where = `${url.hostname}${url.port ? `:${url.port}` : ''}${url.pathname.length > 1 ? url.pathname : ''}`;
    return `${driverFor(config.url) === 'neon' ? 'Neon' : 'PostgreSQL'} at ${where}`;
  } catch {
    return 'PostgreSQL (DATABASE_URL is not a valid URL)';
  }
}

// One opened, migrated database per location and process: every function
// instance migrates once on first use (cheap when up to date), and two PGlite
// instances never open the same directory.
const opened = new Map<string, Promise<Database>>();

/**
 * The database with every migration applied, created on first call and shared
 * afterwards. An in-memory PGlite is private to its caller, so each call gets
 * a new one. A failure (e.g. DatabaseUnavailable) is not remembered: the next
 * call tries again. close() on the result forgets it too. `onMigrated` hears
 * what this call applied; it is not called when an earlier call opened it.
 */
export function openMigratedDatabase(config: DatabaseConfig, options: { onMigrated?: (applied: AppliedMigration[]) => void } = {}): Promise<Database> {
  const key = 'pgliteDir' in config ? (config.pgliteDir === null ? undefined : `pglite:${config.pgliteDir}`) : config.url;
  const cached = key === undefined ? undefined : opened.get(key);
  if (cached) return cached;
  const opening = (async () => {
    const db = await createDatabase(config);
    try {
      const applied = await migrate(db);
      options.onMigrated?.(applied);
    } catch (error) {
      await db.close().catch(() => {});
      throw error;
    }
    return forgetOnClose(db, () => {
      if (key !== undefined && opened.get(key) === opening) opened.delete(key);
    });
  })();
  if (key !== undefined) {
    opened.set(key, opening);
    opening.catch(() => {
      if (opened.get(key) === opening) opened.delete(key);
    });
  }
  return opening;
}

function forgetOnClose(db: Database, forget: () => void): Database {
  return {
    kind: db.kind,
    query: <T extends Row = Row>(text: string, params?: readonly unknown[]) => db.query<T>(text, params),
    transaction: (work) => db.transaction(work),
    exec: (script, tx) => db.exec(script, tx),
    close: async () => {
      forget();
      await db.close();
    },
  };
}
