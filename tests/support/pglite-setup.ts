// setupFiles of every project (vitest.config.ts): when the run made the empty
// PGlite cluster (tests/support/pglite-cluster.ts), this file's in-memory
// databases start from it. Only when the file first loads the PGlite driver:
// a file that never opens one never reads it.
import { readFileSync } from 'node:fs';
import { inject, vi } from 'vitest';

vi.doMock('../../lib/db/pglite.js', async (importOriginal) => {
  const pglite = await importOriginal<typeof import('../../lib/db/pglite.js')>();
  const cluster = inject('pgliteCluster');
  if (cluster) pglite.startInMemoryDatabasesFrom(new Blob([readFileSync(cluster)]));
  return pglite;
});
