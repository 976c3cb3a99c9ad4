// PGlite: Postgres compiled to WebAssembly, in process. The embedded default:
// file-backed under .data/ for npm start, in memory for tests.
import { PGlite } from '@electric-sql/pglite';
import { execOn, type Database, type Queryable, type Row } from './types.js';

/**
 * The data directory initdb made for the first in-memory database of this
 * process. initdb's result is the same every time, and running it is most of
 * the cost of a new database, so later in-memory databases start from a copy
 * of it (as PGlite's own clone() does): several times faster, and the test
 * suites open hundreds. A file-backed database (npm start) is not affected.
 */
let freshCluster: Promise<Blob> | undefined;

async function openInMemory(): Promise<PGlite> {
  if (freshCluster) {
    const snapshot = await freshCluster.catch(() => undefined);
    if (snapshot) return PGlite.create({ loadDataDir: snapshot });
  }
  const db = new PGlite();
  await db.waitReady;
  // Dumped before anything is written to it, so the copy is the empty cluster.
  const dumped = db.dumpDataDir('none');
  freshCluster ??= dumped;
  // A failed dump costs the copies, not this database: later ones run initdb again.
  await dumped.catch(() => {
    if (freshCluster === dumped) freshCluster = undefined;
  });
  return db;
}

export async function createPgliteDatabase(options: { dataDir?: string } = {}): Promise<Database> {
  const db = options.dataDir ? new PGlite(options.dataDir) : await openInMemory();
  await db.waitReady;
  // PGlite runs one statement at a time: transactions are serialised by it.
  // It is in process, so it is never "unreachable": no DatabaseUnavailable here.
  return {
    kind: 'pglite',
    async query<T extends Row = Row>(text: string, params: readonly unknown[] = []) {
      return (await db.query<T>(text, params as unknown[])).rows;
    },
    async transaction(work) {
      return db.transaction((tx) =>
        work({
          query: async <T extends Row = Row>(text: string, params: readonly unknown[] = []) => (await tx.query<T>(text, params as unknown[])).rows,
          // query() uses the extended protocol, which takes one statement; exec() takes a script.
          exec: async (script: string) => {
            await tx.exec(script);
          },
        }),
      );
    },
    async exec(script: string, tx?: Queryable) {
      if (tx) await execOn(tx, script);
      else await db.exec(script);
    },
    async close() {
      await db.close();
    },
  };
}
