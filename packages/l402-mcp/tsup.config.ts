import { defineConfig } from 'tsup';

// One file: the bin. Its dependencies stay imports (tsup leaves dependencies external).
export default defineConfig({
  entry: ['src/bin.ts'],
  format: ['esm'],
  target: 'node20',
  platform: 'node',
  clean: true,
  outDir: 'dist',
});
