import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// `l402-paywall` and `l402-paywall/<entry>` resolve to the library's sources,
// as tsconfig.json's paths say (src/<entry>.ts is the entry behind each subpath).
const librarySources = fileURLToPath(new URL('./packages/l402-paywall/src/', import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^l402-paywall$/, replacement: `${librarySources}index.ts` },
      { find: /^l402-paywall\/(.+)$/, replacement: `${librarySources}$1.ts` },
    ],
  },
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
  },
});
