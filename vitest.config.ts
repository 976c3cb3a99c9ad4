import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// `l402-paywall` and `l402-paywall/<entry>` resolve to the library's sources,
// as tsconfig.json's paths say (src/<entry>.ts is the entry behind each subpath).
const librarySources = fileURLToPath(new URL('./packages/l402-paywall/src/', import.meta.url));

// The packed-tarball suites are a project of their own: its globalSetup starts the
// slow preparation (npm pack, installs, next build) when the run begins, and
// the project runs after the others, so that work overlaps theirs. npx-mcp
// publishes the packed tarballs to a local registry and runs `npx -y l402-mcp`.
const PACKED_SUITES = ['tests/package/packed.test.ts', 'tests/package/npx-mcp.test.ts'];

export default defineConfig({
  resolve: {
    alias: [
      { find: /^l402-paywall$/, replacement: `${librarySources}index.ts` },
      { find: /^l402-paywall\/(.+)$/, replacement: `${librarySources}$1.ts` },
    ],
  },
  test: {
    testTimeout: 20_000,
    hookTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: { name: 'repo', include: ['tests/**/*.test.ts'], exclude: [...configDefaults.exclude, ...PACKED_SUITES] },
      },
      {
        extends: true,
        test: { name: 'package', include: PACKED_SUITES, globalSetup: ['tests/package/prepare.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
