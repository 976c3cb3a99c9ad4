// Real PostgreSQL for integration tests: CI starts one (.ci/run) and sets
// TEST_DATABASE_URL; elsewhere the suites that need it are skipped with a
// message saying so (in CI, failed: tests/support/services.ts). Each suite
// works in a database of its own, created here and dropped after, so parallel
// test files and earlier runs never collide.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { HOW_TO_PROVIDE, redacted, skipBecause } from '../../packages/l402-paywall/tests/support/services.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why the suites that need the shared PostgreSQL server are skipped when it does not answer. */
export const NO_POSTGRES = `no PostgreSQL at ${redacted(TEST_DATABASE_URL)}; set TEST_DATABASE_URL (${HOW_TO_PROVIDE})`;

/**
 * Whether a server at `url` answers a query (connecting within `timeoutMs`).
 * The shared test server (TEST_DATABASE_URL) not answering is an error under
 * L402_TEST_REQUIRE_SERVICES=1, as in CI.
 */
export async function postgresReachable(url = TEST_DATABASE_URL, timeoutMs = 2_000): Promise<boolean> {
  const up = await postgresAnswers(url, timeoutMs);
  if (!up && url === TEST_DATABASE_URL) skipBecause(NO_POSTGRES);
  return up;
}

/** Whether a server at `url` answers a query, whatever the mode. */
export async function postgresAnswers(url: string, timeoutMs = 2_000): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export interface TestDatabase {
  /** The server URL with this database's name in place of the original one. */
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A new, empty database on the server of `serverUrl` (which must allow CREATE DATABASE). */
export async function createTestDatabase(serverUrl = TEST_DATABASE_URL): Promise<TestDatabase> {
  const name = `test_${randomBytes(6).toString('hex')}`;
  // template0 with UTF8 and the C locale works whatever the server's defaults are.
  await admin(serverUrl, `CREATE DATABASE ${name} TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    // FORCE: a pool the test forgot to close must not keep the database alive.
    drop: () => admin(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

async function admin(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

export interface DatabaseBackend {
  name: string;
  /** Why this backend's suite is skipped here, if it is. */
  skip?: string;
  /** A fresh database for one suite: its DATABASE_URL and how to drop it. */
  open(): Promise<TestDatabase>;
}

/** PGlite in memory, and the real server when it answers. */
export async function databaseBackends(): Promise<DatabaseBackend[]> {
  const up = await postgresReachable();
  return [
    { name: 'PGlite', open: async () => ({ url: 'pglite://memory', name: 'memory', drop: async () => {} }) },
    {
      name: 'PostgreSQL',
      skip: up ? undefined : NO_POSTGRES,
      open: () => createTestDatabase(),
    },
  ];
}

/** A scratch database for a benchmark, or the reason there is none (benchmarks skip, not fail). */
export async function scratchDatabase(): Promise<TestDatabase | string> {
  if (!(await postgresAnswers(TEST_DATABASE_URL))) return `no PostgreSQL at ${redacted(TEST_DATABASE_URL)}`;
  try {
    return await createTestDatabase();
  } catch (error) {
    return `cannot create a scratch database (${(error as Error).message})`;
  }
}

/** `url` with another port, e.g. a closed one. */
export function withPort(url: string, port: number): string {
  const copy = new URL(url);
  copy.port = String(port);
  return copy.toString();
}
