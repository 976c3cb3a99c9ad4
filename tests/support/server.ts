// The real local server (scripts/dev-server.ts) for a test file, on an
// ephemeral port, with the environment the file asks for and restored after.
import { afterAll, beforeAll, expect } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetServiceContext, serviceContext } from '../../lib/service/context.js';
import type { Database } from '../../lib/db/index.js';
import type { DatabaseBackend, TestDatabase } from './postgres.js';
import { startDevServer, type DevServer, type DevServerOptions } from '../../scripts/dev-server.js';

export const TEST_SECRET = 'test-server-secret-0123456789abcdef0123456789abcdef';

/** The 402 body of lib/l402 challenges. */
export interface ChallengeBody {
  error: string;
  code: string;
  macaroon: string;
  invoice: string;
  paymentHash: string;
  priceSats: number;
  expiresAt: string;
}

/** What paying the demo's challenge gives: the Authorization value of one paid request, and its parts. */
export interface DemoCredential {
  authorization: string;
  token: string;
  preimage: string;
  paymentHash: string;
}

/** The demo route's 402 challenge, paid with the dev wallet (POST /api/dev/pay) of the server at `serverUrl`. */
export async function payDemoChallenge(serverUrl: string): Promise<DemoCredential> {
  const challenge = await fetch(`${serverUrl}/api/demo/btc-price`);
  expect(challenge.status).toBe(402);
  const body = (await challenge.json()) as ChallengeBody;
  const paid = await fetch(`${serverUrl}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice: body.invoice }) });
  expect(paid.status).toBe(200);
  const { preimage } = (await paid.json()) as { preimage: string };
  return { authorization: `L402 ${body.macaroon}:${preimage}`, token: body.macaroon, preimage, paymentHash: body.paymentHash };
}

export function useDevServer(env: () => Record<string, string> = () => ({}), serverOptions: DevServerOptions = {}): { readonly url: string } {
  let server: DevServer | undefined;
  let dataDir = '';
  const saved = { ...process.env };
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'l402-test-'));
    Object.assign(process.env, { L402_SECRET: TEST_SECRET, BTC_PRICE_SOURCES: 'none', DATA_DIR: dataDir, DATABASE_URL: 'pglite://memory' }, env());
    resetServiceContext();
    server = await startDevServer({ ...serverOptions, port: 0 });
  });
  afterAll(async () => {
    await server?.close();
    process.env = saved;
    resetServiceContext();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    get url() {
      if (!server) throw new Error('the dev server starts in beforeAll');
      return server.url;
    },
  };
}

/**
 * The dev server on a database backend of its own (tests/support/postgres.ts):
 * the database is created before the server starts and dropped after, and
 * `db` is the service's own (migrated) connection to it.
 */
export function useDevServerOn(backend: DatabaseBackend, env: () => Record<string, string> = () => ({})): { readonly url: string; readonly db: Database } {
  let database: TestDatabase | undefined;
  let db: Database | undefined;
  beforeAll(async () => {
    database = await backend.open();
  });
  afterAll(async () => {
    await database?.drop();
  });
  const running = useDevServer(() => ({ ...env(), DATABASE_URL: database!.url }));
  beforeAll(async () => {
    db = await serviceContext().database(); // migrated on open
  });
  afterAll(() => db?.close());
  return {
    get url() {
      return running.url;
    },
    get db() {
      if (!db) throw new Error('the database opens in beforeAll');
      return db;
    },
  };
}
