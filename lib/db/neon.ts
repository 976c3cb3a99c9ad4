// Neon in production: @neondatabase/serverless is node-postgres speaking the
// Postgres protocol through a WebSocket (Neon's proxy turns it into TCP), so
// it works where raw TCP is slow to open or unavailable and still supports
// interactive transactions.
import { Client, Pool, types, type NeonConfig } from '@neondatabase/serverless';
import { attachDatabasePool } from '@vercel/functions';
import ws from 'ws';
import { POOL_DEFAULTS, pgliteCompatibleTypes, poolDatabase, type PoolLike, type PoolOptions } from './pool.js';
import type { Database } from './types.js';

/**
 * Per-connection WebSocket settings (see the driver's CONFIG.md). Against Neon
 * the defaults are right; tests set them to reach a local proxy in front of
 * an ordinary Postgres (tests/support/neon-proxy.ts).
 */
export type NeonSocketOptions = Partial<
  Pick<NeonConfig, 'wsProxy' | 'useSecureWebSocket' | 'pipelineConnect' | 'pipelineTLS' | 'forceDisablePgSSL' | 'coalesceWrites' | 'webSocketConstructor'>
>;

export interface NeonDatabaseOptions extends PoolOptions {
  socket?: NeonSocketOptions;
}

export async function createNeonDatabase(url: string, options: NeonDatabaseOptions = {}): Promise<Database> {
  const { socket, ...poolOptions } = options;
  // Node 20 has no global WebSocket; `ws` works on every Node version.
  // Set on each client rather than on the global neonConfig, so nothing else in
  // the process is changed.
  const settings: NeonSocketOptions = { webSocketConstructor: ws as unknown as NeonConfig['webSocketConstructor'], ...socket };
  class ConfiguredClient extends Client {
    constructor(config?: ConstructorParameters<typeof Client>[0]) {
      super(config);
      Object.assign(this.neonConfig, settings);
    }
  }
  const pool = new Pool({
    connectionString: url,
    ...POOL_DEFAULTS,
    ...poolOptions,
    allowExitOnIdle: true,
    types: pgliteCompatibleTypes(types),
  });
  // The pool makes its clients with `new pool.Client(...)`.
  pool.Client = ConfiguredClient;
  attachDatabasePool(pool);
  return poolDatabase('neon', pool as unknown as PoolLike);
}
