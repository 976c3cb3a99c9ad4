// The SQL port: one small interface over Neon (production), PGlite (embedded
// default) and node-postgres (self-hosting, tests against a real server).
// Queries use $1..$n placeholders; rows come back as plain objects.

export type Row = Record<string, unknown>;

export interface Queryable {
  query<T extends Row = Row>(text: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface Database extends Queryable {
  readonly kind: 'neon' | 'pglite' | 'pg';
  /** Runs `work` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<R>(work: (tx: Queryable) => Promise<R>): Promise<R>;
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
