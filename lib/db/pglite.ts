// PGlite: Postgres compiled to WebAssembly, in process. The embedded default:
// file-backed under .data/ for npm start, in memory for tests.
import { PGlite } from '@electric-sql/pglite';
import type { Database, Queryable, Row } from './types.js';

export async function createPgliteDatabase(options: { dataDir?: string } = {}): Promise<Database> {
  const db = options.dataDir ? new PGlite(options.dataDir) : new PGlite();
  await db.waitReady;
  // PGlite runs one statement at a time: transactions are serialised by it.
  return {
    kind: 'pglite',
    async query<T extends Row = Row>(text: string, params: readonly unknown[] = []) {
      return (await db.query<T>(text, params as unknown[])).rows;
    },
    async transaction(work) {
      return db.transaction((tx) => work({ query: async <T extends Row = Row>(text: string, params: readonly unknown[] = []) => (await tx.query<T>(text, params as unknown[])).rows }));
    },
    async exec(script: string, tx?: Queryable) {
      if (tx) await tx.query(script);
      else await db.exec(script);
    },
    async close() {
      await db.close();
    },
  };
}
