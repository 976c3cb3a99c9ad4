// Plain PostgreSQL over TCP with node-postgres: self-hosting, and the tests
// against a real server.
import pg from 'pg';
import { attachDatabasePool } from '@vercel/functions';
import { pgliteCompatibleTypes, poolDatabase, type PoolLike } from './pool.js';
import type { Database } from './types.js';

export interface PoolOptions {
  /** Connections kept at most (default 5: a function instance serves one request at a time). */
  max?: number;
  /** How long to wait for a connection before DatabaseUnavailable (default 5 s). */
  connectionTimeoutMillis?: number;
  /** Idle connections are closed after this long (default 10 s). */
  idleTimeoutMillis?: number;
}

export const POOL_DEFAULTS = { max: 5, connectionTimeoutMillis: 5_000, idleTimeoutMillis: 10_000 } satisfies Required<PoolOptions>;

export async function createPgDatabase(url: string, options: PoolOptions = {}): Promise<Database> {
  const pool = new pg.Pool({
    connectionString: url,
    ...POOL_DEFAULTS,
    ...options,
    // Idle connections must not keep a script or test process alive.
    allowExitOnIdle: true,
    types: pgliteCompatibleTypes(pg.types) as pg.CustomTypesConfig,
  });
  // On Vercel: keeps the instance alive until idle connections are closed (a no-op elsewhere).
  attachDatabasePool(pool);
  return poolDatabase('pg', pool as unknown as PoolLike);
}
