// One contract for the SQL port, run against each implementation: PGlite in
// memory, a real PostgreSQL through node-postgres, and the Neon driver
// through a local WebSocket proxy (tests/support/neon-proxy.ts) to that same
// PostgreSQL. The service's queries rely on exactly these behaviours,
// whichever database runs. Each suite works in databases of its own.
import { copyFileSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { neonConfig } from '@neondatabase/serverless';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDatabase,
  DatabaseUnavailable,
  describeDatabase,
  driverFor,
  isUniqueViolation,
  migrate,
  MigrationError,
  openMigratedDatabase,
  type AppliedMigration,
  type Database,
} from '../../lib/db/index.js';
import { MIGRATIONS_DIR } from '../../lib/db/migrate.js';

const SHIPPED_MIGRATIONS = readdirSync(MIGRATIONS_DIR)
  .filter((f) => /^\d{3}_.+\.sql$/.test(f))
  .sort();
import { createNeonDatabase } from '../../lib/db/neon.js';
import { createPgDatabase } from '../../lib/db/pg.js';
import { createPgliteDatabase } from '../../lib/db/pglite.js';
import { startNeonProxy, type NeonProxy } from '../support/neon-proxy.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import { createTestDatabase, postgresReachable, TEST_DATABASE_URL, withPort, type TestDatabase } from '../support/postgres.js';

const postgresUp = await postgresReachable();
if (!postgresUp) console.warn(`PostgreSQL unreachable at ${TEST_DATABASE_URL}: the pg and Neon driver suites are skipped (set TEST_DATABASE_URL).`);
const withPostgres = (title: string) => (postgresUp ? title : `${title} [SKIPPED: no PostgreSQL at ${TEST_DATABASE_URL}; set TEST_DATABASE_URL]`);

/** An empty database, and as many separate connections (Database instances) to it as a test asks for. */
interface Fresh {
  db: Database;
  /** `n` runners, as if `n` instances had started at once (PGlite: one process, so the same instance). */
  others(n: number): Promise<Database[]>;
  cleanup(): Promise<void>;
}

interface Target {
  title: string;
  available: boolean;
  fresh(): Promise<Fresh>;
}

let proxy: NeonProxy | undefined;
beforeAll(async () => {
  if (postgresUp) proxy = await startNeonProxy();
});
afterAll(async () => {
  await proxy?.close();
});

function serverTarget(title: string, open: (url: string) => Promise<Database>): Target {
  return {
    title: withPostgres(title),
    available: postgresUp,
    async fresh() {
      const database: TestDatabase = await createTestDatabase();
      const opened: Database[] = [];
      const connect = async () => {
        const db = await open(database.url);
        opened.push(db);
        return db;
      };
      const db = await connect();
      return {
        db,
        others: (n) => Promise.all(Array.from({ length: n }, connect)),
        async cleanup() {
          await Promise.all(opened.map((d) => d.close()));
          await database.drop();
        },
      };
    },
  };
}

const targets: Target[] = [
  {
    title: 'PGlite (in memory)',
    available: true,
    async fresh() {
      const db = await createPgliteDatabase();
      return { db, others: async (n) => Array.from({ length: n }, () => db), cleanup: () => db.close() };
    },
  },
  serverTarget('PostgreSQL via node-postgres', (url) => createPgDatabase(url)),
  serverTarget('PostgreSQL via the Neon driver and a local WebSocket proxy', (url) => {
    if (!proxy) throw new Error('the proxy starts in beforeAll');
    return createNeonDatabase(url, { socket: proxy.socket });
  }),
];

// Text that must come back exactly as it went in, whatever it looks like.
const AWKWARD_TEXT = [
  '',
  ' ',
  'ünïcødé ⚡ 🙂 𝄞 日本語 עברית',
  "Robert'); DROP TABLE payments;--",
  "' OR '1'='1",
  '$1 $2 ? :name %s %_',
  'back\\slash \\x00 \\n',
  'line\nbreak\r\nand\ttab',
  '"double" and \'single\' and `back` quotes',
  "E'\\047'",
  '/* comment */ -- comment',
  'x'.repeat(10_000),
];

const files = (applied: AppliedMigration[]) => applied.map((m) => m.file);

async function tableExists(db: Database, name: string): Promise<boolean> {
  const [row] = await db.query<{ exists: boolean }>('SELECT to_regclass($1) IS NOT NULL AS exists', [name]);
  return row?.exists === true;
}

/** A copy of the shipped migrations plus `extra` files, in a temporary directory. */
function migrationsWith(extra: Record<string, string>): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), 'l402-migrations-'));
  copyFileSync(join(MIGRATIONS_DIR, '001_initial.sql'), join(dir, '001_initial.sql'));
  for (const [name, sql] of Object.entries(extra)) writeFileSync(join(dir, name), sql);
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

for (const target of targets) {
  describe.skipIf(!target.available)(target.title, () => {
    // One migrated database for the tests that only read and write rows.
    let shared: Fresh;
    beforeAll(async () => {
      shared = await target.fresh();
      await migrate(shared.db);
    });
    afterAll(async () => {
      await shared?.cleanup();
    });
    let hashes = 0;
    const hash = () => `${target.title.slice(0, 6)}-${process.pid}-${++hashes}`;

    it('round-trips parameters exactly: unicode, quotes, SQL-looking text', async () => {
      const { db } = shared;
      for (const text of AWKWARD_TEXT) {
        const paymentHash = hash();
        const [inserted] = await db.query<{ endpoint: string }>(
          'INSERT INTO payments (payment_hash, endpoint, amount_sats, owner_address) VALUES ($1, $2, $3, $4) RETURNING endpoint',
          [paymentHash, text, 21, text],
        );
        expect(inserted?.endpoint).toBe(text);
        const rows = await db.query<{ endpoint: string; owner_address: string; amount_sats: number }>(
          'SELECT endpoint, owner_address, amount_sats FROM payments WHERE payment_hash = $1 AND endpoint = $2',
          [paymentHash, text],
        );
        expect(rows).toEqual([{ endpoint: text, owner_address: text, amount_sats: 21 }]);
      }
      // The table is still there: nothing in the text ran as SQL.
      expect(await tableExists(db, 'payments')).toBe(true);
    });

    it('reads values back with the same JavaScript types as PGlite', async () => {
      const [row] = await shared.db.query(
        `SELECT count(*) AS n, 9007199254740993::int8 AS big, 12.50::numeric AS amount, 7::integer AS small,
                true AS yes, NULL::text AS nothing, '{"a":[1,"⚡"]}'::jsonb AS doc,
                timestamptz '2024-02-03 04:05:06.789+00' AS at, gen_random_uuid() AS id, $1::text AS echo
           FROM (VALUES (1), (2)) AS v(x)`,
        ['ok'],
      );
      expect(row).toMatchObject({ n: 2, big: 9007199254740993n, amount: '12.50', small: 7, yes: true, nothing: null, doc: { a: [1, '⚡'] }, echo: 'ok' });
      expect(row?.at).toBeInstanceOf(Date);
      expect((row!.at as Date).toISOString()).toBe('2024-02-03T04:05:06.789Z');
      expect(row?.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });

    it('commits a transaction when its work resolves', async () => {
      const [a, b] = [hash(), hash()];
      const result = await shared.db.transaction(async (tx) => {
        await tx.query('INSERT INTO payments (payment_hash, amount_sats) VALUES ($1, 1)', [a]);
        await tx.query('INSERT INTO payments (payment_hash, amount_sats) VALUES ($1, 2)', [b]);
        // Inside the transaction its own writes are visible.
        return (await tx.query<{ n: number }>('SELECT count(*) AS n FROM payments WHERE payment_hash IN ($1, $2)', [a, b]))[0]?.n;
      });
      expect(result).toBe(2);
      const rows = await shared.db.query('SELECT amount_sats FROM payments WHERE payment_hash IN ($1, $2) ORDER BY amount_sats', [a, b]);
      expect(rows).toEqual([{ amount_sats: 1 }, { amount_sats: 2 }]);
    });

    it('rolls a transaction back when its work throws, and rethrows the same error', async () => {
      const a = hash();
      const failure = new Error('changed my mind');
      await expect(
        shared.db.transaction(async (tx) => {
          await tx.query('INSERT INTO payments (payment_hash) VALUES ($1)', [a]);
          await tx.exec(`INSERT INTO payments (payment_hash) VALUES ('${a}-x'); INSERT INTO payments (payment_hash) VALUES ('${a}-y')`);
          throw failure;
        }),
      ).rejects.toBe(failure);
      expect(await shared.db.query('SELECT 1 FROM payments WHERE payment_hash LIKE $1', [`${a}%`])).toEqual([]);
    });

    it('rolls back everything when a statement fails inside the transaction', async () => {
      const a = hash();
      await shared.db.query('INSERT INTO payments (payment_hash) VALUES ($1)', [a]);
      const b = hash();
      const error = await shared.db
        .transaction(async (tx) => {
          await tx.query('INSERT INTO payments (payment_hash) VALUES ($1)', [b]);
          await tx.query('INSERT INTO payments (payment_hash) VALUES ($1)', [a]); // duplicate
        })
        .catch((e: unknown) => e);
      expect(isUniqueViolation(error)).toBe(true);
      expect(await shared.db.query('SELECT 1 FROM payments WHERE payment_hash = $1', [b])).toEqual([]);
      // The connection is usable afterwards.
      expect(await shared.db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    });

    it('surfaces a unique violation as the SQL error with code 23505, not as unavailability', async () => {
      const a = hash();
      await shared.db.query('INSERT INTO payments (payment_hash) VALUES ($1)', [a]);
      const error = await shared.db.query('INSERT INTO payments (payment_hash) VALUES ($1)', [a]).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: '23505' });
      expect(error).not.toBeInstanceOf(DatabaseUnavailable);
      expect(isUniqueViolation(error)).toBe(true);
      // Other SQL errors pass through with their own codes.
      await expect(shared.db.query('SELECT * FROM no_such_table')).rejects.toMatchObject({ code: '42P01' });
      await expect(shared.db.query('SELECT 1/0')).rejects.toMatchObject({ code: '22012' });
    });

    it('keeps concurrent transactions apart', async () => {
      const tags = Array.from({ length: 8 }, () => hash());
      await Promise.all(
        tags.map((tag, i) =>
          shared.db
            .transaction(async (tx) => {
              await tx.query('INSERT INTO payments (payment_hash, amount_sats) VALUES ($1, $2)', [tag, i]);
              if (i % 2 === 1) throw new Error('odd ones roll back');
            })
            .catch(() => undefined),
        ),
      );
      const rows = await shared.db.query<{ payment_hash: string }>(
        'SELECT payment_hash FROM payments WHERE payment_hash = ANY($1::text[]) ORDER BY amount_sats',
        [tags],
      );
      expect(rows.map((r) => r.payment_hash)).toEqual(tags.filter((_, i) => i % 2 === 0));
    });

    it('refuses queries on a transaction that has finished', async () => {
      let leaked: { query(text: string): Promise<unknown> } | undefined;
      await shared.db.transaction(async (tx) => {
        leaked = tx;
      });
      await expect(leaked!.query('SELECT 1')).rejects.toThrow();
    });

    it('creates the payments, apis and Pro tables with the expected columns and indexes', async () => {
      const columns = await shared.db.query<{ table_name: string; column_name: string; data_type: string; is_nullable: string }>(
        `SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns
          WHERE table_schema = current_schema() AND table_name IN ('payments', 'apis', 'pro_subscriptions', 'pro_activations')`,
      );
      const shape = (table: string) =>
        Object.fromEntries(
          columns.filter((c) => c.table_name === table).map((c) => [c.column_name, `${c.data_type}${c.is_nullable === 'NO' ? ' not null' : ''}`]),
        );
      // The payment record, plus the owner it was paid to.
      expect(shape('payments')).toMatchObject({
        id: 'uuid not null',
        payment_hash: 'text not null',
        endpoint: 'text',
        amount_sats: 'integer',
        paid_at: 'timestamp with time zone not null',
        owner_address: 'text',
      });
      expect(shape('apis')).toMatchObject({
        id: 'uuid not null',
        url: 'text not null',
        name: 'text not null',
        description: 'text',
        price_sats: 'integer not null',
        category: 'text',
        lightning_address: 'text not null',
        created_at: 'timestamp with time zone not null',
      });
      expect(shape('pro_subscriptions')).toMatchObject({ address: 'text not null', expires_at: 'timestamp with time zone not null' });
      expect(shape('pro_activations')).toMatchObject({ payment_hash: 'text not null', address: 'text not null' });
      const indexes = await shared.db.query<{ indexname: string }>(
        "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'payments'",
      );
      expect(indexes.map((i) => i.indexname)).toEqual(expect.arrayContaining(['payments_paid_at', 'payments_owner_paid_at']));
      // Payment ids are generated.
      const [row] = await shared.db.query<{ id: string; paid_at: Date }>('INSERT INTO payments (payment_hash) VALUES ($1) RETURNING id, paid_at', [hash()]);
      expect(row?.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row?.paid_at).toBeInstanceOf(Date);
    });

    describe('migrations', () => {
      it('applies every shipped migration once, in order; a second run applies nothing', async () => {
        const fresh = await target.fresh();
        try {
          expect(files(await migrate(fresh.db))).toEqual(SHIPPED_MIGRATIONS);
          expect(await migrate(fresh.db)).toEqual([]);
          const recorded = await fresh.db.query<{ version: number; name: string; applied_at: Date }>(
            'SELECT version, name, applied_at FROM schema_migrations ORDER BY version',
          );
          expect(recorded).toEqual(
            SHIPPED_MIGRATIONS.map((file) => ({ version: Number(file.slice(0, 3)), name: file.slice(4, -4), applied_at: expect.any(Date) })),
          );
          expect(await tableExists(fresh.db, 'payments')).toBe(true);
        } finally {
          await fresh.cleanup();
        }
      });

      it('applies each migration once when five runners start at the same time', async () => {
        const fresh = await target.fresh();
        const extra = migrationsWith({
          '002_counter.sql': 'CREATE TABLE counter (n integer NOT NULL); INSERT INTO counter VALUES (1); SELECT pg_sleep(0.05);',
          '003_bump.sql': 'UPDATE counter SET n = n + 1;',
        });
        try {
          const runners = await fresh.others(5);
          const results = await Promise.all(runners.map((db) => migrate(db, extra.dir)));
          // Every file applied by exactly one runner, whoever it was.
          expect(results.flatMap(files).sort()).toEqual(['001_initial.sql', '002_counter.sql', '003_bump.sql']);
          expect(await fresh.db.query('SELECT n FROM counter')).toEqual([{ n: 2 }]);
          expect(await fresh.db.query('SELECT version FROM schema_migrations ORDER BY version')).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }]);
        } finally {
          extra.remove();
          await fresh.cleanup();
        }
      });

      it('rolls a failing migration back completely, names its file, and stops there', async () => {
        const fresh = await target.fresh();
        const broken = migrationsWith({
          '002_broken.sql': 'CREATE TABLE half_done (x integer);\nINSERT INTO half_done VALUES (1);\nALTER TABLE payments ADD COLUMN extra text;\nSELEC 1/0;\n',
          '003_later.sql': 'CREATE TABLE later (x integer);',
        });
        try {
          const error = await migrate(fresh.db, broken.dir).catch((e: unknown) => e);
          expect(error).toBeInstanceOf(MigrationError);
          expect((error as MigrationError).file).toBe('002_broken.sql');
          expect((error as Error).message).toContain('002_broken.sql');
          expect((error as Error).message).toContain('syntax error');
          expect((error as Error).message).toContain('line 4');
          // 001 went in (its own transaction); nothing of 002; 003 never ran.
          expect(await fresh.db.query('SELECT version FROM schema_migrations ORDER BY version')).toEqual([{ version: 1 }]);
          expect(await tableExists(fresh.db, 'half_done')).toBe(false);
          expect(await tableExists(fresh.db, 'later')).toBe(false);
          const [extra] = await fresh.db.query<{ n: number }>(
            "SELECT count(*) AS n FROM information_schema.columns WHERE table_name = 'payments' AND column_name = 'extra'",
          );
          expect(extra?.n).toBe(0);
          // Once the file is fixed, the next run picks up where it stopped.
          writeFileSync(join(broken.dir, '002_broken.sql'), 'CREATE TABLE half_done (x integer);');
          expect(files(await migrate(fresh.db, broken.dir))).toEqual(['002_broken.sql', '003_later.sql']);
        } finally {
          broken.remove();
          await fresh.cleanup();
        }
      });

      it('refuses migration files that are misnamed or share a version', async () => {
        const fresh = await target.fresh();
        const misnamed = migrationsWith({ '2-oops.sql': 'SELECT 1;' });
        const twins = migrationsWith({ '001_again.sql': 'SELECT 1;' });
        try {
          await expect(migrate(fresh.db, misnamed.dir)).rejects.toThrow(/2-oops\.sql.*NNN_name\.sql/);
          await expect(migrate(fresh.db, twins.dir)).rejects.toThrow(/001_again\.sql.*same version 1/);
          expect(await tableExists(fresh.db, 'payments')).toBe(false);
        } finally {
          misnamed.remove();
          twins.remove();
          await fresh.cleanup();
        }
      });
    });
  });
}

// ---------------------------------------------------------------------------
// Unreachable servers

/** A server that accepts connections and never answers: a hung database. */
async function silentServer(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function expectUnavailable(db: Database): Promise<void> {
  try {
    await expect(db.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(db.transaction(async (tx) => tx.query('SELECT 1'))).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(migrate(db)).rejects.toBeInstanceOf(DatabaseUnavailable);
  } finally {
    await db.close();
  }
}

/** Kills this connection's backend from another one, as a server restart would. */
async function killedMidTransaction(db: Database): Promise<void> {
  const outcome = await db
    .transaction(async (tx) => {
      const [me] = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await db.query('SELECT pg_terminate_backend($1)', [me?.pid]);
      await tx.query('SELECT 1');
    })
    .catch((e: unknown) => e);
  expect(outcome).toBeInstanceOf(DatabaseUnavailable);
  // The pool drops the dead connection and opens a new one.
  expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
}

describe('PostgreSQL that cannot be reached', () => {
  it('node-postgres: a closed port is DatabaseUnavailable', async () => {
    await expectUnavailable(await createPgDatabase(withPort(TEST_DATABASE_URL, await closedPort())));
  });

  it('node-postgres: a server that never answers is DatabaseUnavailable after the connection timeout', async () => {
    const hung = await silentServer();
    try {
      const db = await createPgDatabase(withPort(TEST_DATABASE_URL, hung.port), { connectionTimeoutMillis: 300 });
      await expect(db.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailable);
      await db.close();
    } finally {
      await hung.close();
    }
  });

  it('the cached, migrated database is not remembered when opening it failed', async () => {
    const config = { url: withPort(TEST_DATABASE_URL, await closedPort()) };
    await expect(openMigratedDatabase(config)).rejects.toBeInstanceOf(DatabaseUnavailable);
    await expect(openMigratedDatabase(config)).rejects.toBeInstanceOf(DatabaseUnavailable);
  });

  it.skipIf(!postgresUp)(withPostgres('node-postgres: a connection killed mid-transaction is DatabaseUnavailable, and the pool recovers'), async () => {
    const database = await createTestDatabase();
    const db = await createPgDatabase(database.url);
    try {
      await killedMidTransaction(db);
    } finally {
      await db.close();
      await database.drop();
    }
  });

  it.skipIf(!postgresUp)(withPostgres('Neon driver: a proxy that cannot reach Postgres, or no proxy at all, is DatabaseUnavailable'), async () => {
    const socket = proxy!.socket;
    // The proxy is up; the database behind it is not.
    await expectUnavailable(await createNeonDatabase(withPort(TEST_DATABASE_URL, await closedPort()), { socket }));
    // No proxy answers.
    const deadProxy = await closedPort();
    await expectUnavailable(
      await createNeonDatabase(TEST_DATABASE_URL, { socket: { ...socket, wsProxy: (host, port) => `127.0.0.1:${deadProxy}/v2?address=${host}:${port}` } }),
    );
    // The database behind the proxy accepts and never answers.
    const hung = await silentServer();
    try {
      const db = await createNeonDatabase(withPort(TEST_DATABASE_URL, hung.port), { socket, connectionTimeoutMillis: 300 });
      await expect(db.query('SELECT 1')).rejects.toBeInstanceOf(DatabaseUnavailable);
      await db.close();
    } finally {
      await hung.close();
    }
  });

  it.skipIf(!postgresUp)(withPostgres("Neon driver: the proxy settings stay on this database's clients, not on the global neonConfig"), async () => {
    const db = await createNeonDatabase(TEST_DATABASE_URL, { socket: proxy!.socket });
    try {
      expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
      expect(neonConfig.useSecureWebSocket).toBe(true);
      expect(neonConfig.pipelineConnect).toBe('password');
      expect(neonConfig.webSocketConstructor).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it.skipIf(!postgresUp)(withPostgres('Neon driver: a connection killed mid-transaction is DatabaseUnavailable, and the pool recovers'), async () => {
    const database = await createTestDatabase();
    const before = proxy!.connections;
    const db = await createNeonDatabase(database.url, { socket: proxy!.socket });
    try {
      await killedMidTransaction(db);
      // Both connections really went through the WebSocket proxy.
      expect(proxy!.connections - before).toBeGreaterThanOrEqual(2);
    } finally {
      await db.close();
      await database.drop();
    }
  });
});

// ---------------------------------------------------------------------------
// Choosing and sharing a database

describe('choosing the driver', () => {
  it('uses the Neon driver for Neon hosts only', () => {
    expect(driverFor('postgresql://u:p@ep-cool-darkness-123456-pooler.us-east-2.aws.neon.tech/neondb?sslmode=require')).toBe('neon');
    expect(driverFor('postgres://u:p@ep-x.eu-central-1.aws.neon.build/db')).toBe('neon');
    expect(driverFor('postgres://u:p@EP-X.US-EAST-2.AWS.NEON.TECH/db')).toBe('neon');
    expect(driverFor('postgres://postgres@127.0.0.1:5432/test')).toBe('pg');
    expect(driverFor('postgres://u@db.example.com/neon.tech')).toBe('pg');
    expect(driverFor('postgres://u@notneon.tech/db')).toBe('pg');
    expect(driverFor('postgres://u@neon.tech.example.com/db')).toBe('pg');
  });

  it('describes where the database is without its password', () => {
    expect(describeDatabase({ url: 'postgres://user:secret@db.example.com:6543/app' })).toBe('PostgreSQL at db.example.com:6543/app');
    expect(describeDatabase({ url: 'postgresql://u:secret@ep-1.us-east-2.aws.neon.tech/neondb?sslmode=require' })).toBe(
      'Neon at ep-1.us-east-2.aws.neon.tech/neondb',
    );
    expect(describeDatabase({ pgliteDir: null })).toBe('PGlite in memory');
    expect(describeDatabase({ pgliteDir: join(process.cwd(), '.data', 'pglite') })).toBe(`PGlite at ${join('.data', 'pglite')}`);
  });

  it('createDatabase gives PGlite without a URL and node-postgres for a plain server', async () => {
    const memory = await createDatabase({ pgliteDir: null });
    expect(memory.kind).toBe('pglite');
    await memory.close();
    const server = await createDatabase({ url: TEST_DATABASE_URL });
    expect(server.kind).toBe('pg');
    await server.close(); // never connected: creating a pool does not
  });
});

describe('openMigratedDatabase', () => {
  it('gives each caller of an in-memory PGlite its own migrated database', async () => {
    const a = await openMigratedDatabase({ pgliteDir: null });
    const b = await openMigratedDatabase({ pgliteDir: null });
    try {
      expect(a).not.toBe(b);
      await a.query("INSERT INTO payments (payment_hash) VALUES ('only-in-a')");
      expect(await b.query("SELECT 1 FROM payments WHERE payment_hash = 'only-in-a'")).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it.skipIf(!postgresUp)(withPostgres('shares one migrated database per URL, and forgets it when closed'), async () => {
    const database = await createTestDatabase();
    try {
      const applied: AppliedMigration[][] = [];
      const [a, b] = await Promise.all([
        openMigratedDatabase({ url: database.url }, { onMigrated: (list) => applied.push(list) }),
        openMigratedDatabase({ url: database.url }, { onMigrated: (list) => applied.push(list) }),
      ]);
      expect(a).toBe(b);
      expect(applied.map(files)).toEqual([SHIPPED_MIGRATIONS]);
      expect(await a.query('SELECT count(*)::int AS n FROM schema_migrations')).toEqual([{ n: SHIPPED_MIGRATIONS.length }]);
      await a.close();
      const c = await openMigratedDatabase({ url: database.url }, { onMigrated: (list) => applied.push(list) });
      expect(c).not.toBe(a);
      expect(applied.map(files)).toEqual([SHIPPED_MIGRATIONS, []]);
      await c.close();
    } finally {
      await database.drop();
    }
  });
});
