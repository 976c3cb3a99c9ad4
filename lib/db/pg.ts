// Plain PostgreSQL over TCP with node-postgres: self-hosting, and the tests
// against a real server.
import pg from 'pg';
import { attachDatabasePool } from '@vercel/functions';
import { POOL_DEFAULTS, pgliteCompatibleTypes, poolDatabase, type PoolLike, type PoolOptions } from './pool.js';
import type { Database } from './types.js';

export { POOL_DEFAULTS, type PoolOptions } from './pool.js';

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
