// The real local server (scripts/dev-server.ts) for a test file, on an
// ephemeral port, running the api/ handlers with a deployment of the file's
// own: a config built from plain settings (never process.env) and the service
// context built from it. Fault injection hands the handlers a modified context
// (`use`) or a new deployment (`redeploy`); `restore` goes back.
import { afterAll, beforeAll, expect } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../lib/config.js';
import { keepLocalKeys } from '../../scripts/local-keys.js';
import type { ServiceContext } from '../../lib/service/context.js';
import { createDeployment, deploymentOf, type Deployment } from '../../lib/service/deployment.js';
import type { Database } from '../../lib/db/index.js';
import type { DatabaseBackend, TestDatabase } from './postgres.js';
import type { ChallengeBody } from '../../packages/l402-paywall/tests/support/l402.js';
import { startDevServer, type DevServer, type DevServerOptions } from '../../scripts/dev-server.js';

export const TEST_SECRET = 'test-server-secret-0123456789abcdef0123456789abcdef';

/** Settings as the environment would give them; undefined leaves one unset. */
export type Settings = Record<string, string | undefined>;

/** What every test server runs with unless its file says otherwise: a fixed secret, no price sources, PGlite in memory. */
export const TEST_SETTINGS: Settings = { L402_SECRET: TEST_SECRET, BTC_PRICE_SOURCES: 'none', DATABASE_URL: 'pglite://memory' };

/** The 402 body of the paywall's challenges, as the library's tests read it. */
export type { ChallengeBody };

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
  const paid = await fetch(`${serverUrl}/api/dev/pay`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice: body.invoice }),
  });
  expect(paid.status).toBe(200);
  const { preimage } = (await paid.json()) as { preimage: string };
  return { authorization: `L402 ${body.macaroon}:${preimage}`, token: body.macaroon, preimage, paymentHash: body.paymentHash };
}

export interface TestServer {
  readonly url: string;
  /** The server's own DATA_DIR, a temporary directory removed after the file. */
  readonly dataDir: string;
  /** What the handlers run with; pass it to an api/ function called directly: `fn.fetchWith(request, server.deployment)`. */
  readonly deployment: Deployment;
  /** The service context the handlers run with now (built on first use). */
  readonly ctx: ServiceContext;
  /** The config of the file's settings over TEST_SETTINGS, with `extra` over both (undefined unsets a setting). */
  config(extra?: Settings): Config;
  /** The connections the server holds open now. */
  connections(): Promise<number>;
  /** From now on the handlers run with `ctx`, e.g. `{ ...server.ctx, provider: down }`. */
  use(ctx: ServiceContext): void;
  /**
   * From now on the handlers run with a new deployment, as after a restart with
   * other settings: built from `config` (default: the file's own), its context
   * built on first use with `overrides` replacing parts of it.
   */
  redeploy(config?: Config, overrides?: Partial<ServiceContext>): void;
  /** Back to the file's own deployment and its context. */
  restore(): void;
}

export function useDevServer(settings: () => Settings = () => ({}), serverOptions: Omit<DevServerOptions, 'deployment'> = {}): TestServer {
  let server: DevServer | undefined;
  let dataDir = '';
  let own: Deployment | undefined;
  let current: Deployment | undefined;
  const running = () => {
    if (!current || !own) throw new Error('the dev server starts in beforeAll');
    return current;
  };
  // One object for the server's lifetime, so the dev server (and direct calls) always reach the current deployment.
  const deployment: Deployment = {
    config: () => running().config(),
    context: () => running().context(),
  };
  // Keys a local run generates are kept under the server's DATA_DIR, as npm start keeps them.
  const config = (extra: Settings = {}) => keepLocalKeys(loadConfig({ ...TEST_SETTINGS, DATA_DIR: dataDir, ...settings(), ...extra }));
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'l402-test-'));
    own = current = createDeployment(config());
    server = await startDevServer({ ...serverOptions, port: 0, deployment });
    // The file's own deployment knows where it listens too (its public origin without PUBLIC_URL), as npm start's does.
    own.localUrl = server.url;
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });
  return {
    get url() {
      if (!server) throw new Error('the dev server starts in beforeAll');
      return server.url;
    },
    get dataDir() {
      return dataDir;
    },
    deployment,
    connections() {
      if (!server) throw new Error('the dev server starts in beforeAll');
      return server.connections();
    },
    get ctx() {
      return deployment.context();
    },
    config,
    use(ctx) {
      running();
      current = deploymentOf(ctx);
    },
    redeploy(newConfig = config(), overrides = {}) {
      running();
      const fresh = createDeployment(newConfig);
      fresh.localUrl = server?.url;
      let built: ServiceContext | undefined;
      current = { config: () => newConfig, context: () => (built ??= { ...fresh.context(), ...overrides }) };
    },
    restore() {
      running();
      current = own;
    },
  };
}

/**
 * The dev server on a database backend of its own (tests/support/postgres.ts):
 * the database is created before the server starts and dropped after, and
 * `db` is the service's own (migrated) connection to it.
 */
export function useDevServerOn(backend: DatabaseBackend, settings: () => Settings = () => ({})): TestServer & { readonly db: Database } {
  let database: TestDatabase | undefined;
  let db: Database | undefined;
  beforeAll(async () => {
    database = await backend.open();
  });
  afterAll(async () => {
    await database?.drop();
  });
  const running = useDevServer(() => ({ ...settings(), DATABASE_URL: database!.url }));
  beforeAll(async () => {
    db = await running.ctx.database(); // migrated on open
  });
  afterAll(() => db?.close());
  return Object.create(running, {
    db: {
      get() {
        if (!db) throw new Error('the database opens in beforeAll');
        return db;
      },
    },
  }) as TestServer & { readonly db: Database };
}
