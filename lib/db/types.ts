// The SQL port: one small interface over Neon (production), PGlite (embedded
// default) and node-postgres (self-hosting, tests against a real server).
// Queries use $1..$n placeholders; rows come back as plain objects.
//
// Values read back the same whichever implementation runs (PGlite's rules):
// int8 (count(*), bigint columns) is a number, or a bigint beyond 2^53;
// numeric stays a string; timestamptz and date are Dates; json is parsed;
// bytea is a Uint8Array. SQL errors keep their SQLSTATE in `code` (23505 is
// a unique violation); a server that cannot be reached is DatabaseUnavailable.

export type Row = Record<string, unknown>;

export interface Queryable {
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

/** What `transaction` hands to its work: queries on one connection, inside BEGIN ... COMMIT. */
export interface Transaction extends Queryable {
  /** Runs a script of several statements (no parameters) inside this transaction. */
  exec(script: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: 'neon' | 'pglite' | 'pg';
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * Do not use `tx` after `work` settles, and do not open a second transaction inside `work`
   * (on a pool it would wait for a connection `work` itself may be holding).
   */
  transaction<R>(work: (tx: Transaction) => Promise<R>): Promise<R>;
  /** Runs a script of several statements (migrations), inside the caller's transaction if given. */
  exec(script: string, tx?: Queryable): Promise<void>;
  close(): Promise<void>;
}

/** The database could not be reached; callers answer 503 or keep the write for later. */
export class DatabaseUnavailable extends Error {
  override readonly name = 'DatabaseUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The SQLSTATE of a failed statement (e.g. '23505'), whichever driver raised it. */
export function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  // The classes Postgres defines; errno codes such as EPIPE are five letters too.
  return typeof code === 'string' && /^([0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/.test(code) ? code : undefined;
}

/** A unique (or primary key) constraint refused the row. */
export function isUniqueViolation(error: unknown): boolean {
  return sqlState(error) === '23505';
}

/** Runs a multi-statement script on `tx`, for transactions that predate `Transaction.exec`. */
export async function execOn(tx: Queryable, script: string): Promise<void> {
  const exec = (tx as Partial<Transaction>).exec;
  if (typeof exec === 'function') await exec.call(tx, script);
  else await tx.query(script);
}
