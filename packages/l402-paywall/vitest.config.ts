import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// The library's own tests (`npm test` in this folder): tests/unit (the core,
// the client's pure parts, the Payment codecs, the adapters, the edge-runtime
// bundles) and tests/integration (the clients, CLI and sellers over real
// sockets and child processes, the shared stores and ledgers on Redis), against
// the sources. `l402-paywall` and `l402-paywall/<entry>` resolve to
// src/<entry>.ts, as the repository's tsconfig paths say. The repository's
// root `npm test` runs these too (its vitest.config.ts names this folder and
// takes the SLOW list below from here). `npm run test:slow` here runs LIBRARY_SLOW.

/** Child processes under tsx (the CLI, a second seller process): seconds each to start, so out of `npm test`. */
export const LIBRARY_SLOW = [
  'tests/integration/cli-hostile.test.ts',
  'tests/integration/client-mpp.test.ts',
  'tests/integration/mcp-paid-tools-bins.test.ts',
  'tests/integration/session-stream-processes.test.ts',
  'tests/integration/proxy-cli.test.ts',
  // 400 requests and 200 invoices at once: seconds of signing on a shared machine.
  'tests/integration/proxy-load.test.ts',
  'tests/integration/usage-metering-cli.test.ts',
];

/** Probes the shared Redis once, says what its absence skips; under L402_TEST_REQUIRE_SERVICES=1 fails instead. */
const SERVICES = 'tests/support/services-setup.ts';

const sources = fileURLToPath(new URL('./src/', import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^l402-paywall$/, replacement: `${sources}index.ts` },
      { find: /^l402-paywall\/(.+)$/, replacement: `${sources}$1.ts` },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'unit', include: ['tests/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['tests/integration/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...LIBRARY_SLOW],
          globalSetup: [SERVICES],
        },
      },
      { extends: true, test: { name: 'slow', include: LIBRARY_SLOW, globalSetup: [SERVICES] } },
    ],
  },
});
