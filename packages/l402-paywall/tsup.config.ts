import { defineConfig } from 'tsup';

// One output file per entry in src/ (src/<name>.ts -> dist/<name>.js), matching
// package.json's exports. Shared code is split into chunks, so an app that
// imports two entries loads the core once.
export default defineConfig({
  entry: ['src/*.ts'],
  format: ['esm'],
  target: 'es2022',
  platform: 'neutral',
  dts: true,
  splitting: true,
  treeshake: true,
  clean: true,
  outDir: 'dist',
  // Keep `node:` in the one Node entry's imports: Deno, Bun and Workers' nodejs_compat resolve it.
  removeNodeProtocol: false,
  // Peer and optional dependencies stay imports; everything else the entries need is listed in dependencies.
  // ioredis and redis: whichever client the user installed, for the proxy's REDIS_URL.
  external: [
    /^@noble\//,
    /^@scure\//,
    'zod',
    '@getalby/sdk',
    /^@getalby\/sdk\//,
    /^@modelcontextprotocol\/sdk/,
    '@upstash/redis',
    'ws',
    /^node:/,
    'ioredis',
    'redis',
  ],
});
