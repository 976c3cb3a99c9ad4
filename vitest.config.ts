import { fileURLToPath } from 'node:url';
import { configDefaults, defineConfig } from 'vitest/config';

// `l402-paywall` and `l402-paywall/<entry>` resolve to the library's sources,
// as tsconfig.json's paths say (src/<entry>.ts is the entry behind each subpath).
const librarySources = fileURLToPath(new URL('./packages/l402-paywall/src/', import.meta.url));

// The packed-tarball suite is a project of its own: its globalSetup starts the
// slow preparation (npm pack, installs, next build) when the run begins, and
// the project runs after the others, so that work overlaps theirs.
const PACKED_SUITE = 'tests/package/packed.test.ts';

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
        test: { name: 'repo', include: ['tests/**/*.test.ts'], exclude: [...configDefaults.exclude, PACKED_SUITE] },
      },
      {
        extends: true,
        test: { name: 'package', include: [PACKED_SUITE], globalSetup: ['tests/package/prepare.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
