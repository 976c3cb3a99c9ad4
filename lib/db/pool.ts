// node-postgres and Neon's driver share one Pool API (Neon's driver is
// node-postgres over a WebSocket), so both implementations are this file
// with a different pool. Each query borrows a client and gives it back; a
// transaction keeps one client from BEGIN to COMMIT or ROLLBACK.
import { DatabaseUnavailable, execOn, sqlState, type Database, type Queryable, type Row, type Transaction } from './types.js';

export interface PoolOptions {
  /** Connections kept at most (default 5: a function instance serves one request at a time). */
  max?: number;
  /** How long to wait for a connection before DatabaseUnavailable (default 5 s). */
  connectionTimeoutMillis?: number;
  /** Idle connections are closed after this long (default 10 s). */
  idleTimeoutMillis?: number;
}

/** Both drivers' pool settings (here, not in pg.ts, so the Neon driver does not load node-postgres). */
export const POOL_DEFAULTS = { max: 5, connectionTimeoutMillis: 5_000, idleTimeoutMillis: 10_000 } satisfies Required<PoolOptions>;

export interface PoolClientLike {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  /** A truthy argument destroys the connection instead of returning it to the pool. */
  release(destroy?: Error | boolean): void;
  on(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
}

export interface PoolLike {
  connect(): Promise<PoolClientLike>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

export function poolDatabase(kind: 'pg' | 'neon', pool: PoolLike): Database {
  // Idle connections die when the server restarts or a serverless instance is
  // frozen; the pool drops them by itself, but an 'error' event nobody listens
  // to would end the process.
  pool.on('error', () => {});

  /** A client for one query or transaction; `done(lost)` gives it back, or closes it when lost. */
  async function borrow(): Promise<{ client: PoolClientLike; done(lost?: Error): void }> {
    let client: PoolClientLike;
    try {
      client = await pool.connect();
    } catch (error) {
      throw toDatabaseError(error, 'connect');
    }
    // The pool listens for errors only on idle clients. A borrowed one whose
    // server goes away between two statements (a restart, a killed backend)
    // emits 'error' with nobody listening, which would end the process. The
    // next statement on it fails anyway, as DatabaseUnavailable.
    let dropped: Error | undefined;
    const onError = (error: Error) => {
      dropped = error;
    };
    client.on('error', onError);
    return {
      client,
      done(lost) {
        client.off('error', onError);
        client.release(lost ?? dropped);
      },
    };
  }

  async function run<T extends Row>(client: PoolClientLike, text: string, params: readonly unknown[]): Promise<T[]> {
    try {
      // Copied: node-postgres keeps the array it is given on the query object.
      return (await client.query(text, [...params])).rows as T[];
    } catch (error) {
      throw toDatabaseError(error, 'query');
    }
  }

  async function query<T extends Row = Row>(text: string, params: readonly unknown[] = []): Promise<T[]> {
    const { client, done } = await borrow();
    let lost: DatabaseUnavailable | undefined;
    try {
      return await run<T>(client, text, params);
    } catch (error) {
      if (error instanceof DatabaseUnavailable) lost = error;
      throw error;
    } finally {
      done(lost);
    }
  }

  return {
    kind,
    query,

    async transaction(work) {
      const { client, done } = await borrow();
      let finished = false;
      // Set when the connection can no longer be trusted: it is closed, not reused.
      let broken: Error | undefined;
      const open = () => {
        // After release the client may belong to another caller: a late query
        // would run inside someone else's transaction.
        if (finished) throw new Error('This transaction has finished; run queries inside its callback and await them');
      };
      const tx: Transaction = {
        query: async <T extends Row = Row>(text: string, params: readonly unknown[] = []) => {
          open();
          return run<T>(client, text, params);
        },
        exec: async (script: string) => {
          open();
          await run(client, script, []);
        },
      };
      try {
        await run(client, 'BEGIN', []);
        const result = await work(tx);
        await run(client, 'COMMIT', []);
        return result;
      } catch (error) {
        if (error instanceof DatabaseUnavailable) {
          broken = error;
        } else {
          try {
            await client.query('ROLLBACK');
          } catch (rollbackError) {
            broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
          }
        }
        throw error;
      } finally {
        finished = true;
        done(broken);
      }
    },

    async exec(script: string, tx?: Queryable) {
      // No parameters: node-postgres then uses the simple protocol, which runs several statements.
      if (tx) await execOn(tx, script);
      else await query(script);
    },

    async close() {
      await pool.end();
    },
  };
}

// Errors that mean "the server is not there (now)", whatever else went wrong.
// 08: connection exception (but 08P01 is a protocol bug); 53300: too many
// connections; 57P01-03: shut down, crashed, starting up.
function unavailableState(state: string): boolean {
  return (state.startsWith('08') && state !== '08P01') || state === '53300' || /^57P0[123]$/.test(state);
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EADDRNOTAVAIL',
]);
// node-postgres and pg-pool report a lost or timed-out connection with these messages and no code.
const NETWORK_MESSAGE = /connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|connection ended|socket hang up/i;

function networkFailure(error: unknown, depth = 0): boolean {
  if (depth > 3 || error === null || typeof error !== 'object') return false;
  const e = error as { code?: unknown; message?: unknown; error?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return true;
  if (typeof e.message === 'string' && NETWORK_MESSAGE.test(e.message)) return true;
  // A WebSocket ErrorEvent carries the socket's error; Node's happy-eyeballs connect an AggregateError.
  const inner = [e.error, e.cause, ...(Array.isArray(e.errors) ? e.errors : [])];
  return inner.some((cause) => networkFailure(cause, depth + 1));
}

/** The most telling message of a driver error (pg, Neon and PGlite nest it differently). */
function driverMessage(error: unknown): string {
  const e = error as { message?: unknown; error?: { message?: unknown }; code?: unknown } | null;
  const message = [e?.message, e?.error?.message, e?.code].find((m) => typeof m === 'string' && m.length > 0);
  return typeof message === 'string' ? message : String(error);
}

/**
 * SQL errors pass through unchanged (callers read `code`); failures to reach
 * the server become DatabaseUnavailable. While connecting, anything without a
 * SQLSTATE (refused, timed out, DNS, TLS, a WebSocket proxy that hung up) means
 * there is no usable server.
 */
export function toDatabaseError(error: unknown, phase: 'connect' | 'query'): unknown {
  if (error instanceof DatabaseUnavailable) return error;
  const state = sqlState(error);
  const unavailable = state ? unavailableState(state) : phase === 'connect' || networkFailure(error);
  return unavailable ? new DatabaseUnavailable(`Database unavailable: ${driverMessage(error)}`, { cause: error }) : error;
}

type TypeParser = (text: string) => unknown;

/**
 * The type parsers of a node-postgres-compatible driver, changed so values read
 * back as PGlite returns them (see types.ts): int8 as a number, or a bigint when
 * it does not fit one. node-postgres alone would give strings.
 */
export function pgliteCompatibleTypes(types: { getTypeParser(oid: number, format?: 'text' | 'binary'): TypeParser }) {
  const INT8 = 20;
  const INT8_ARRAY = 1016;
  const int8 = (text: string): number | bigint => {
    const value = BigInt(text);
    return value < BigInt(Number.MIN_SAFE_INTEGER) || value > BigInt(Number.MAX_SAFE_INTEGER) ? value : Number(value);
  };
  const int8Array = types.getTypeParser(INT8_ARRAY, 'text');
  const each = (value: unknown): unknown => (Array.isArray(value) ? value.map(each) : typeof value === 'string' ? int8(value) : value);
  return {
    getTypeParser(oid: number, format: 'text' | 'binary' = 'text'): TypeParser {
      if (format === 'text' && oid === INT8) return int8;
      if (format === 'text' && oid === INT8_ARRAY) return (text) => each(int8Array(text));
      return types.getTypeParser(oid, format);
    },
  };
}
