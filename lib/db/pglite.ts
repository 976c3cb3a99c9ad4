// PGlite: Postgres compiled to WebAssembly, in process. The embedded default:
// file-backed under .data/ for npm start, in memory for tests.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { execOn, type Database, type Queryable, type Row } from './types.js';

/**
 * New in-memory databases, from the data directory initdb made for the first
 * one. initdb's result is the same every time, and running it is most of the
 * cost of a new database, so later in-memory databases start from a copy of it
 * (as PGlite's own clone() does): several times faster, and the test suites
 * open hundreds. Pure precomputation: what a caller gets is the same either
 * way. A file-backed database (npm start) is not affected, unless it was
 * given a copy made elsewhere (startFrom).
 */
class NewDatabases {
  #freshCluster: Promise<Blob> | undefined;
  /** The copy startFrom() gave, if any. */
  #given: Blob | undefined;

  /**
   * New databases start from `cluster`, a copy of the empty cluster made by
   * freshCluster() in another process with this version of PGlite: in memory,
   * and under a data directory that holds none yet. The test runner makes one
   * per run and hands it to the process of every test file
   * (tests/support/pglite-cluster.ts), so none of them runs initdb (seconds
   * each) itself.
   */
  startFrom(cluster: Blob): void {
    this.#given = cluster;
    this.#freshCluster = Promise.resolve(cluster);
  }

  async inMemory(): Promise<PGlite> {
    if (this.#freshCluster) {
      const snapshot = await this.#freshCluster.catch(() => undefined);
      if (snapshot) return PGlite.create({ loadDataDir: snapshot });
    }
    const { db, dumped } = await initdb();
    this.#freshCluster ??= dumped;
    // A failed dump costs the copies, not this database: later ones run initdb again.
    await dumped.catch(() => {
      if (this.#freshCluster === dumped) this.#freshCluster = undefined;
    });
    return db;
  }

  /** The database under `dataDir`: opened if there is one, else made there (from the given copy, or by initdb). */
  underDirectory(dataDir: string): PGlite {
    if (this.#given && !existsSync(join(dataDir, 'PG_VERSION'))) return new PGlite(dataDir, { loadDataDir: this.#given });
    return new PGlite(dataDir);
  }
}

/** A new in-memory database, and the copy of its empty cluster (dumped before anything is written to it). */
async function initdb(): Promise<{ db: PGlite; dumped: Promise<Blob> }> {
  const db = new PGlite();
  await db.waitReady;
  return { db, dumped: db.dumpDataDir('none') };
}

/** The empty cluster every new database starts as, for startNewDatabasesFrom() in another process. */
export async function freshCluster(): Promise<Blob> {
  const { db, dumped } = await initdb();
  try {
    return await dumped;
  } finally {
    await db.close();
  }
}

// One per process: the copy is worth the most when every in-memory database shares it.
const newDatabases = new NewDatabases();

/** Every later new database of this process (in memory, or in an empty data directory) starts from `cluster` (what freshCluster() gave, with this version of PGlite). */
export function startNewDatabasesFrom(cluster: Blob): void {
  newDatabases.startFrom(cluster);
}

export async function createPgliteDatabase(options: { dataDir?: string } = {}): Promise<Database> {
  const db = options.dataDir ? newDatabases.underDirectory(options.dataDir) : await newDatabases.inMemory();
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
