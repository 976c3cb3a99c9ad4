// Versioned SQL migrations: lib/db/migrations/NNN_name.sql, applied once each,
// in order. Each one runs in its own transaction together with its row in
// schema_migrations, so a migration is either wholly applied and recorded or
// not at all. Runners that start together (several function instances, or
// npm start beside npm run db:migrate on one server) queue on an advisory
// lock, and whoever comes second finds the version recorded and skips it.
//
// A migration file must not BEGIN or COMMIT itself, nor use statements that
// cannot run in a transaction (CREATE INDEX CONCURRENTLY).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseUnavailable, sqlState, type Database } from './types.js';

/** The migrations shipped with this code. */
export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

const FILE_NAME = /^(\d+)_([A-Za-z0-9_-]+)\.sql$/;
// Any constant works as long as every runner uses the same one ("l402" in ASCII).
const LOCK_KEY = 0x6c343032;
const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations (
  version    integer PRIMARY KEY,
  name       text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

export interface AppliedMigration {
  version: number;
  name: string;
  /** The file name, e.g. 001_initial.sql */
  file: string;
}

/** A migration could not be read or failed; nothing of the failed file was kept. */
export class MigrationError extends Error {
  override readonly name = 'MigrationError';
  constructor(
    message: string,
    /** The migration file at fault, when there is one. */
    readonly file?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Applies the migrations in `dir` not yet recorded in schema_migrations; returns those it applied. */
export async function migrate(db: Database, dir: string = MIGRATIONS_DIR): Promise<AppliedMigration[]> {
  const migrations = await readMigrations(dir);
  const done = await appliedVersions(db);
  const applied: AppliedMigration[] = [];
  for (const migration of migrations) {
    if (done.has(migration.version)) continue;
    const { path, ...entry } = migration;
    const sql = await readFile(path, 'utf8');
    const ran = await db.transaction(async (tx) => {
      // Held until this transaction ends: one runner at a time from here on.
      await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_KEY]);
      await tx.exec(CREATE_TABLE);
      const recorded = await tx.query('SELECT 1 FROM schema_migrations WHERE version = $1', [entry.version]);
      if (recorded.length > 0) return false; // another runner applied it while we waited
      try {
        await tx.exec(sql);
      } catch (error) {
        if (error instanceof DatabaseUnavailable) throw error;
        throw new MigrationError(`Migration ${entry.file} failed and was rolled back: ${explain(error, sql)}`, entry.file, { cause: error });
      }
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [entry.version, entry.name]);
      return true;
    });
    if (ran) applied.push(entry);
  }
  return applied;
}

async function readMigrations(dir: string): Promise<Array<AppliedMigration & { path: string }>> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    // On Vercel this means the .sql files were left out of the function bundle (vercel.json includeFiles).
    throw new MigrationError(`Cannot read the migrations directory ${dir}: ${(error as Error).message}`, undefined, { cause: error });
  }
  const migrations: Array<AppliedMigration & { path: string }> = [];
  for (const file of names.filter((name) => name.endsWith('.sql'))) {
    const match = FILE_NAME.exec(file);
    if (!match) throw new MigrationError(`Migration file ${file} is not named NNN_name.sql`, file);
    const version = Number(match[1]);
    const twin = migrations.find((m) => m.version === version);
    if (twin) throw new MigrationError(`Migration files ${twin.file} and ${file} have the same version ${version}`, file);
    migrations.push({ version, name: match[2]!, file, path: join(dir, file) });
  }
  return migrations.sort((a, b) => a.version - b.version);
}

// Outside any transaction and lock: when everything is applied, this one query is all migrate() costs.
async function appliedVersions(db: Database): Promise<Set<number>> {
  try {
    const rows = await db.query<{ version: number }>('SELECT version FROM schema_migrations');
    return new Set(rows.map((row) => Number(row.version)));
  } catch (error) {
    if (sqlState(error) === '42P01') return new Set(); // undefined_table: a new database
    throw error;
  }
}

function explain(error: unknown, sql: string): string {
  const e = error as { message?: unknown; position?: unknown };
  const parts = [typeof e.message === 'string' ? e.message : String(error)];
  const state = sqlState(error);
  if (state) parts.push(`SQLSTATE ${state}`);
  // Postgres reports a 1-based character position in the script.
  const position = Number(e.position);
  if (Number.isInteger(position) && position > 0) parts.push(`line ${sql.slice(0, position - 1).split('\n').length}`);
  return parts.length > 1 ? `${parts[0]} (${parts.slice(1).join(', ')})` : parts[0]!;
}
