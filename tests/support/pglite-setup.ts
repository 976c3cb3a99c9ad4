// setupFiles of the projects that make the empty PGlite cluster
// (tests/support/pglite-cluster.ts, vitest.config.ts): the new PGlite databases
// of the test file's process, in memory or in an empty data directory, start
// from it. Only once the file loads the PGlite driver: a file that never opens
// one never reads it.
import { readFileSync } from 'node:fs';
import { inject, vi } from 'vitest';

vi.doMock('../../lib/db/pglite.js', async (importOriginal) => {
  const pglite = await importOriginal<typeof import('../../lib/db/pglite.js')>();
  const cluster = inject('pgliteCluster');
  if (cluster) pglite.startNewDatabasesFrom(new Blob([readFileSync(cluster)]));
  return pglite;
});
