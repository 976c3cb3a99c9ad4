import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';
import { LIBRARY_SLOW } from './packages/l402-paywall/vitest.config.js';

// `l402-paywall` and `l402-paywall/<entry>` resolve to the library's sources,
// as tsconfig.json's paths say (src/<entry>.ts is the entry behind each subpath).
const librarySources = fileURLToPath(new URL('./packages/l402-paywall/src/', import.meta.url));

// The tiers (docs/contributing.md). `npm test` runs the projects `unit` and
// `integration`: every test file under tests/unit and tests/integration (the
// service's) and under the library's own packages/l402-paywall/tests/unit and
// tests/integration (which `npm test` in that folder runs alone, with
// packages/l402-paywall/vitest.config.ts), so a new file there is in it,
// except the files named below, which run under scripts of their own (`npm
// run test:slow`, `test:e2e`, `test:package`, `test:deploy`); `npm run
// test:all` runs every project. A file is moved out of `npm test` by naming it
// here, or, for the library's, in LIBRARY_SLOW (packages/l402-paywall/vitest.config.ts).

/** The library's tests, by tier. */
const LIBRARY_TESTS = 'packages/l402-paywall/tests';

/** Outages for real (servers of their own killed mid-test), processes started with npm, and the 100,000-request fuzzer: minutes each. */
const SLOW = [
  'tests/integration/fuzz-api.test.ts',
  'tests/integration/database-outage.test.ts',
  'tests/integration/store-outage.test.ts',
  'tests/integration/lost-answers.test.ts',
  'tests/integration/rate-limit-shared.test.ts',
  'tests/integration/npm-start.test.ts',
  // The binaries run as child processes under tsx (the CLI, l402-mcp, the dev server, a second paywall
  // process): each start costs seconds of transpiling, which kept `npm test` over five minutes.
  'tests/integration/cli.test.ts',
  'tests/integration/mcp-hostile.test.ts',
  'tests/integration/dev-server.test.ts',
  'tests/integration/demo-session-clients.test.ts',
  'tests/integration/demo-session-mcp.test.ts',
  'tests/integration/mcp.test.ts',
  'tests/integration/mcp-host-gone.test.ts',
  'tests/integration/hostile-session-bins.test.ts',
  // mppx's validator, its command line as a child process (its programmatic entry needs a package mppx does not install).
  'tests/integration/mppx-validate.test.ts',
  // POST /api/mcp on the service `npm start` starts.
  'tests/integration/mcp-npm-start.test.ts',
  // Every database driver (PGlite, node-postgres, Neon's) migrating fresh databases from nothing.
  'tests/integration/db.test.ts',
  // Two more whole vitest runs as child processes (what a passing test logs, with and without L402_TEST_LOGS).
  'tests/unit/test-output.test.ts',
  // Time is what they test: clients trickling bytes until the server's limits cut them off, and a dry stream
  // held six seconds for a top-up (25 s of waiting between them).
  'tests/integration/slow-clients.test.ts',
  'tests/integration/demo-stream-hold.test.ts',
  ...LIBRARY_SLOW.map((path) => `packages/l402-paywall/${path}`),
];

/** Real Chromium: the pages, and which Chromium they drive (the first run unpacks the bundled one). */
const BROWSER = ['tests/e2e/**/*.test.ts', 'tests/unit/browser-choice.test.ts'];

/** The packed tarballs in fresh apps (npm pack, installs, next build), and `npx -y l402-mcp` from a local registry. */
const PACKED = ['tests/package/packed.test.ts', 'tests/package/npx-mcp.test.ts'];

/** `vercel build` of the whole project. */
const DEPLOY = ['tests/deploy/**/*.test.ts'];

/** Probes PostgreSQL, Redis and their binaries once (the library's checks and the service's), says what their absence skips; under L402_TEST_REQUIRE_SERVICES=1 fails instead. */
const SERVICES = 'tests/support/services-setup.ts';

/**
 * The empty PGlite cluster, made once (and kept for later runs), and every test file's new PGlite databases
 * (in memory, or in a server's empty DATA_DIR) started from it rather than from an initdb of their own:
 * seconds for each file that opens one.
 */
const PGLITE = { globalSetup: 'tests/support/pglite-cluster.ts', setupFiles: ['tests/support/pglite-setup.ts'] };

// vitest's default on a machine of n cores is n - 1 workers: one on 2 cores,
// so every file ran after the other. Each file is safe beside the others (its
// own ports, databases, Redis key prefixes or Redis server, data directories),
// and much of a file's time is spent waiting on servers and child processes,
// so use every core. VITEST_MAX_WORKERS or --maxWorkers overrides this.
const maxWorkers = Math.max(2, availableParallelism());

// Many tests take a webhook receiver, a provider or a database down on purpose, and the service logs each
// failure as it would in production: over a thousand lines on a green run, burying the summary. What a test
// logs is shown only when it fails (vitest's silent: 'passed-only'); L402_TEST_LOGS=1 shows every log as it comes.
const silent = process.env.L402_TEST_LOGS === '1' ? false : 'passed-only';

export default defineConfig({
  resolve: {
    alias: [
      { find: /^l402-paywall$/, replacement: `${librarySources}index.ts` },
      { find: /^l402-paywall\/(.+)$/, replacement: `${librarySources}$1.ts` },
    ],
  },
  test: {
    testTimeout: 20_000,
    // Set-up hooks open (and migrate) the in-process PGlite database, which on a
    // loaded two-core machine has taken over 30 s: a hook that times out tests nothing.
    hookTimeout: 120_000,
    maxWorkers,
    silent,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['tests/unit/**/*.test.ts', `${LIBRARY_TESTS}/unit/**/*.test.ts`],
          exclude: [...configDefaults.exclude, ...BROWSER, ...SLOW],
          globalSetup: [PGLITE.globalSetup],
          setupFiles: PGLITE.setupFiles,
        },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['tests/integration/**/*.test.ts', `${LIBRARY_TESTS}/integration/**/*.test.ts`],
          exclude: [...configDefaults.exclude, ...SLOW],
          globalSetup: [SERVICES, PGLITE.globalSetup],
          setupFiles: PGLITE.setupFiles,
        },
      },
      { extends: true, test: { name: 'slow', include: SLOW, globalSetup: [SERVICES, PGLITE.globalSetup], setupFiles: PGLITE.setupFiles } },
      { extends: true, test: { name: 'e2e', include: BROWSER, globalSetup: [SERVICES, PGLITE.globalSetup], setupFiles: PGLITE.setupFiles } },
      // The packed-tarball suite's globalSetup starts the slow preparation (npm
      // pack, installs, next build) when the run begins; the project runs after
      // the others, so in `test:all` that work overlaps theirs.
      {
        extends: true,
        test: { name: 'package', include: PACKED, globalSetup: ['tests/package/prepare.ts'], sequence: { groupOrder: 1 } },
      },
      // Last: its `npm run build` rewrites the library's dist/, which the
      // package project's `npm pack` also builds; they must not overlap.
      { extends: true, test: { name: 'deploy', include: DEPLOY, sequence: { groupOrder: 2 } } },
    ],
  },
});
