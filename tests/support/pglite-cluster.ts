// globalSetup of the projects that run the service in their own processes
// (vitest.config.ts): the empty PGlite cluster every new database starts as,
// made once (PGlite's initdb: seconds, and many more on a loaded machine) and
// kept under node_modules/.cache for the runs after, one file per version of
// PGlite. Each test file's process starts its new databases (in memory, or in
// a server's empty DATA_DIR) from it (tests/support/pglite-setup.ts) instead
// of running initdb again.
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The file holding the empty PGlite cluster (tests/support/pglite-cluster.ts). */
    pgliteCluster: string;
  }
}

const root = fileURLToPath(new URL('../../', import.meta.url));

export default async function makePgliteCluster(project: TestProject): Promise<void> {
  const { version } = JSON.parse(readFileSync(join(root, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')) as { version: string };
  const dir = join(root, 'node_modules/.cache/l402-tests');
  const file = join(dir, `pglite-${version}-empty-cluster.tar`);
  if (!existsSync(file)) {
    mkdirSync(dir, { recursive: true });
    // Written whole under another name first: a run beside this one never reads half a cluster.
    const partial = `${file}.${process.pid}`;
    // PGlite is loaded only to make it: a run that finds the file (most runs) does not load it at all.
    const { freshCluster } = await import('../../lib/db/pglite.js');
    writeFileSync(partial, Buffer.from(await (await freshCluster()).arrayBuffer()));
    renameSync(partial, file);
  }
  project.provide('pgliteCluster', file);
}
