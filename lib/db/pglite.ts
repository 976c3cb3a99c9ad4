// PGlite: Postgres compiled to WebAssembly, in process. The embedded default:
// file-backed under .data/ for npm start, in memory for tests.
import { PGlite } from '@electric-sql/pglite';
import { execOn, type Database, type Queryable, type Row } from './types.js';

export async function createPgliteDatabase(options: { dataDir?: string } = {}): Promise<Database> {
  const db = options.dataDir ? new PGlite(options.dataDir) : new PGlite();
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
