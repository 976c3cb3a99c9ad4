// Chooses the database from config: PGlite when no DATABASE_URL is set
// (in memory or under DATA_DIR), otherwise a postgres:// server.
import type { Config } from '../config.js';
import { createPgliteDatabase } from './pglite.js';
import type { Database } from './types.js';

export type { Database, Queryable, Row } from './types.js';
export { DatabaseUnavailable } from './types.js';

export async function createDatabase(config: NonNullable<Config['database']>): Promise<Database> {
  if ('pgliteDir' in config) return createPgliteDatabase(config.pgliteDir ? { dataDir: config.pgliteDir } : {});
  throw new Error('postgres:// databases are not wired yet'); // lib/db/pg.ts and neon.ts (in progress)
}
