import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// The library's own tests (`npm test` in this folder): the core, the client's
// pure parts, the MPP codecs and the edge-runtime bundles, against the sources.
// `l402-paywall` and `l402-paywall/<entry>` resolve to src/<entry>.ts, as the
// repository's tsconfig paths say. The repository's root `npm test` runs these too.
const sources = fileURLToPath(new URL('./src/', import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^l402-paywall$/, replacement: `${sources}index.ts` },
      { find: /^l402-paywall\/(.+)$/, replacement: `${sources}$1.ts` },
    ],
  },
  test: {
    include: ['tests/**/*.test.ts'],
    testTimeout: 20_000,
  },
});
