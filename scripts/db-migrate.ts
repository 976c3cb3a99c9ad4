// `npm run db:migrate`: applies the pending migrations in lib/db/migrations to
// the database DATABASE_URL names (PGlite under DATA_DIR when unset, as npm
// start uses). Safe to run beside running instances: see lib/db/migrate.ts.
// Against a PGlite directory, stop npm start first: PGlite is single-process.
import { existsSync } from 'node:fs';
import { loadConfig } from '../lib/config.js';
import { createDatabase, DatabaseUnavailable, describeDatabase, migrate } from '../lib/db/index.js';

async function main(): Promise<void> {
  // As npm start does: settings from .env, the shell's own variables win.
  if (existsSync('.env')) process.loadEnvFile('.env');
  const config = loadConfig();
  if (!config.database) throw new Error('no database is configured; set DATABASE_URL');
  const where = describeDatabase(config.database);
  const db = await createDatabase(config.database);
  try {
    const applied = await migrate(db);
    if (applied.length === 0) console.log(`${where}: migrations up to date`);
    for (const { file } of applied) console.log(`${where}: applied ${file}`);
  } catch (error) {
    if (error instanceof DatabaseUnavailable) throw new Error(`cannot reach ${where}: ${error.message.replace(/^Database unavailable: /, '')}`);
    throw new Error(`${where}: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    await db.close();
  }
}

main().catch((error: unknown) => {
  // One line for a person; the details are in the message already.
  const message = error instanceof Error ? error.message : String(error);
  console.error(`db:migrate: ${message.replace(/\s*\n\s*/g, ' ')}`);
  process.exitCode = 1;
});
