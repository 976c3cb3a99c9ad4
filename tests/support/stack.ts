// The service as production runs it, on this machine: the real local server
// with its key-value store on real Redis (through the Upstash REST stand-in)
// and its database on real PostgreSQL. Rate limits and replay marks are keyed
// by client IP and payment hash, which every test process here shares, so the
// Redis is a throwaway redis-server of this suite's own on a free port (the
// shared one at 6379 is never touched, let alone stopped).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import type { Database } from '../../lib/db/index.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import { databaseBackends } from './postgres.js';
import { HOW_TO_PROVIDE, skipBecause } from '../../packages/l402-paywall/tests/support/services.js';
import { useDevServerOn, type TestServer } from './server.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';

const REDIS_SERVER = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'].find((path) => existsSync(path));

/** Why the full stack cannot run here, if it cannot (the suite is then skipped and says so; in CI it fails: services.ts). */
export async function stackSkipReason(): Promise<string | undefined> {
  const postgres = (await databaseBackends()).find((backend) => backend.name === 'PostgreSQL')!;
  if (postgres.skip) return postgres.skip;
  if (!REDIS_SERVER) return skipBecause(`no redis-server binary to start a private Redis (${HOW_TO_PROVIDE})`);
  return undefined;
}

export interface RunningStack {
  readonly url: string;
  readonly db: Database;
  /** A client of the suite's own Redis, to look at what the service keeps there. */
  readonly redis: Redis;
  /** The local server itself: its service context, fault injection (tests/support/server.ts). */
  readonly server: TestServer;
}

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

/** A redis-server of its own on a free loopback port, persisting nothing. */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await closedPort();
  const child: ChildProcess = spawn(REDIS_SERVER!, ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  for (let attempt = 0; ; attempt++) {
    try {
      await probe.connect();
      await probe.ping();
      break;
    } catch {
      if (attempt > 100) throw new Error(`redis-server did not start on port ${port}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  probe.disconnect();
  return {
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** The local server on real PostgreSQL (a database of its own) and a private real Redis. */
export function useStack(env: () => Record<string, string> = () => ({})): RunningStack {
  let redis: PrivateRedis | undefined;
  let upstash: UpstashRestServer | undefined;
  let client: Redis | undefined;
  beforeAll(async () => {
    redis = await startPrivateRedis();
    upstash = await startUpstashRestServer({ redisUrl: redis.url, token: 'stack-test-token' });
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client?.disconnect();
    await upstash?.close();
    await redis?.stop();
  });
  const postgres: Parameters<typeof useDevServerOn>[0] = {
    name: 'PostgreSQL',
    open: async () => (await databaseBackends()).find((backend) => backend.name === 'PostgreSQL')!.open(),
  };
  const running = useDevServerOn(postgres, () => ({ UPSTASH_REDIS_REST_URL: upstash!.url, UPSTASH_REDIS_REST_TOKEN: upstash!.token, ...env() }));
  return {
    get url() {
      return running.url;
    },
    get db() {
      return running.db;
    },
    server: running,
    get redis() {
      if (!client) throw new Error('Redis starts in beforeAll');
      return client;
    },
  };
}
