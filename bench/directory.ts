// GET /api/apis.json with 10,000 directory entries, through the real dev
// server: server time (the function's own Server-Timing, query to serialised
// body) and the client's time to the last byte, on PGlite in memory and on
// PostgreSQL when one is reachable (TEST_DATABASE_URL, default
// postgres://postgres@127.0.0.1:5432/test), in a scratch database dropped after.
import { randomUUID } from 'node:crypto';
import { scratchDatabase } from '../tests/support/postgres.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from '../lib/db/index.js';
import { loadConfig } from '../lib/config.js';
import { createDeployment } from '../lib/service/deployment.js';
import { startDevServer } from '../scripts/dev-server.js';

export const DIRECTORY_ENTRIES = 10_000;
const WARMUP = 10;
const ROUNDS = 100;

export interface DirectoryBench {
  entries: number;
  /** Server time (Server-Timing "app"): query, rows to objects, JSON text. */
  p50Ms: number;
  p95Ms: number;
  /** The client's view over loopback: request to last byte of a ~2 MB body. */
  roundTripP50Ms: number;
  roundTripP95Ms: number;
  bytes: number;
  /** The same against real PostgreSQL, or why it was not measured. */
  postgres: Omit<DirectoryBench, 'postgres'> | { skipped: string };
}

export async function benchDirectory(): Promise<DirectoryBench> {
  const pglite = await measure('pglite://memory');
  let postgres: DirectoryBench['postgres'];
  const scratch = await scratchDatabase();
  if (typeof scratch === 'string') postgres = { skipped: scratch };
  else {
    try {
      postgres = await measure(scratch.url);
    } finally {
      await scratch.drop();
    }
  }
  return { ...pglite, postgres };
}

async function measure(databaseUrl: string): Promise<Omit<DirectoryBench, 'postgres'>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'l402-bench-directory-'));
  const deployment = createDeployment(
    loadConfig({ L402_SECRET: 'bench-directory-secret-0123456789abcdef0123456789', BTC_PRICE_SOURCES: 'none', DATA_DIR: dataDir, DATABASE_URL: databaseUrl }),
  );
  const run = `bench-${randomUUID().slice(0, 8)}`;
  let db: Database | undefined;
  let server: Awaited<ReturnType<typeof startDevServer>> | undefined;
  try {
    db = await deployment.context().database(); // migrated on open
    await seed(db, run);
    server = await startDevServer({ port: 0, deployment });
    const serverMs: number[] = [];
    const roundTripMs: number[] = [];
    let entries = 0;
    let bytes = 0;
    for (let i = 0; i < WARMUP + ROUNDS; i++) {
      const started = performance.now();
      const response = await fetch(`${server.url}/api/apis.json`);
      const body = await response.text();
      const elapsed = performance.now() - started;
      if (response.status !== 200) throw new Error(`GET /api/apis.json answered ${response.status}: ${body.slice(0, 200)}`);
      const app = /app;dur=([\d.]+)/.exec(response.headers.get('server-timing') ?? '');
      if (!app) throw new Error('GET /api/apis.json sent no Server-Timing');
      if (i < WARMUP) continue;
      serverMs.push(Number(app[1]));
      roundTripMs.push(elapsed);
      entries = (JSON.parse(body) as { count: number }).count;
      bytes = Buffer.byteLength(body);
    }
    if (entries < DIRECTORY_ENTRIES) throw new Error(`the listing had ${entries} entries, expected at least ${DIRECTORY_ENTRIES}`);
    return {
      entries,
      p50Ms: percentile(serverMs, 0.5),
      p95Ms: percentile(serverMs, 0.95),
      roundTripP50Ms: percentile(roundTripMs, 0.5),
      roundTripP95Ms: percentile(roundTripMs, 0.95),
      bytes,
    };
  } finally {
    await server?.close();
    await db?.close().catch(() => {});
    rmSync(dataDir, { recursive: true, force: true });
  }
}

/** Entries shaped like real ones: a url, a name, a sentence or two, spread over categories and time. */
async function seed(db: Database, run: string): Promise<void> {
  await db.query(
    `INSERT INTO apis (url, name, description, price_sats, category, lightning_address, created_at, updated_at)
     SELECT 'https://' || $1 || '-' || i || '.example.com/api/v1/resource?format=json',
            'Bench API number ' || i,
            'A paid endpoint registered by the directory benchmark. It answers JSON for a few satoshis per call; entry ' || i || '.',
            1 + i % 1000,
            (ARRAY['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other'])[1 + i % 7],
            'owner' || (i % 100) || '@example.com',
            now() - i * interval '1 second',
            now() - i * interval '1 second'
     FROM generate_series(1, $2::int) AS i`,
    [run, DIRECTORY_ENTRIES],
  );
  await db.query('ANALYZE apis');
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

// `npx tsx bench/directory.ts` runs it alone.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const result = await benchDirectory();
  const line = (label: string, r: Omit<DirectoryBench, 'postgres'>) =>
    console.log(
      `  ${label.padEnd(10)} ${r.entries.toLocaleString('en-US')} entries, ${(r.bytes / 1e6).toFixed(1)} MB: server p50 ${r.p50Ms.toFixed(1)} ms, p95 ${r.p95Ms.toFixed(1)} ms (target < 50); round trip p50 ${r.roundTripP50Ms.toFixed(1)} ms, p95 ${r.roundTripP95Ms.toFixed(1)} ms`,
    );
  console.log('GET /api/apis.json through the dev server:');
  line('PGlite', result);
  if ('skipped' in result.postgres) console.log(`  PostgreSQL not measured: ${result.postgres.skipped}`);
  else line('PostgreSQL', result.postgres);
}
