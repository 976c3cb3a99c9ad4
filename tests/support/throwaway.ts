// Throwaway Redis and PostgreSQL servers of a test's own, on free ports, that
// the test may stop and start again mid-run (outages for real). The shared
// servers on 6379 and 5432 are never touched: other suites use them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis as IORedis } from 'ioredis';
import { sleep } from '../../lib/util/async.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';
import { postgresReachable } from './postgres.js';
import { HOW_TO_PROVIDE, skipBecause } from '../../packages/l402-paywall/tests/support/services.js';

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await sleep(50);
  }
}

export interface ThrowawayServer {
  readonly url: string;
  readonly port: number;
  /** Stops the server the hard way (as a crash would); its data is kept. */
  stop(): Promise<void>;
  /** Starts it again on the same port, with the data it had. */
  start(): Promise<void>;
  /** Stops it for good and removes its files. */
  destroy(): Promise<void>;
}

/** Why a throwaway server cannot run here, or undefined when it can. */
export function redisServerMissing(): string | undefined {
  return spawnSync('redis-server', ['--version']).error ? skipBecause(`redis-server is not installed (${HOW_TO_PROVIDE})`) : undefined;
}

async function redisAnswers(url: string): Promise<boolean> {
  const probe = new IORedis(url, { lazyConnect: true, connectTimeout: 500, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** A redis-server of this test's own on a free loopback port; every write is on disk before it answers (appendfsync always), so a kill loses nothing, as with Upstash. */
export async function startThrowawayRedis(): Promise<ThrowawayServer> {
  const port = await closedPort();
  const dir = mkdtempSync(join(tmpdir(), 'l402-redis-'));
  const url = `redis://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', dir],
      { stdio: 'ignore' },
    );
    await until(`redis-server on port ${port}`, () => redisAnswers(url));
  };
  const stop = async () => {
    const running = child;
    child = undefined;
    if (!running || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  return started({ url, port, dir, start, stop });
}

/** Starts a throwaway server and hands it out; destroying it stops it and removes its directory. */
async function started(server: { url: string; port: number; dir: string; start(): Promise<void>; stop(): Promise<void> }): Promise<ThrowawayServer> {
  const { url, port, dir, start, stop } = server;
  await start();
  return {
    url,
    port,
    start,
    stop,
    async destroy() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The newest PostgreSQL server binaries on this machine (Debian layout), if any. */
function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(a) - Number(b));
  return versions.length ? join(root, versions.at(-1)!, 'bin') : undefined;
}

export function postgresServerMissing(): string | undefined {
  if (!postgresBin()) return skipBecause(`no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (${HOW_TO_PROVIDE})`);
  if (process.getuid?.() === 0 && spawnSync('id', ['-u', 'postgres']).status !== 0) {
    return skipBecause(`running as root without a postgres user to run PostgreSQL as (${HOW_TO_PROVIDE})`);
  }
  return undefined;
}

/**
 * A PostgreSQL cluster of this test's own (initdb, trust auth on loopback), on
 * a free port. PostgreSQL refuses to run as root: as root it
 * runs as the package's postgres user, as .ci/run does.
 */
export async function startThrowawayPostgres(): Promise<ThrowawayServer> {
  const bin = postgresBin();
  if (!bin) throw new Error(postgresServerMissing());
  const port = await closedPort();
  const dir = mkdtempSync(join(tmpdir(), 'l402-postgres-'));
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString());
    const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const run = (command: string, args: string[]) => {
    const [file, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', join(bin, command), ...args]] : [join(bin, command), args];
    const result = spawnSync(file, argv, { cwd: dir, encoding: 'utf8', timeout: 60_000 });
    if (result.status !== 0) throw new Error(`${command} failed: ${result.stderr || result.stdout || result.error?.message}`);
  };
  const data = join(dir, 'data');
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--no-locale']);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  // fsync off costs nothing here: a killed server's writes are still in the OS cache. synchronous_commit
  // stays on: with it off, a commit acknowledged before the crash could be lost, which no real server does.
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c fsync=off -c full_page_writes=off`;
  const start = async () => {
    run('pg_ctl', ['-D', data, '-l', join(dir, 'postgres.log'), '-w', '-s', '-o', options, 'start']);
    await until(`PostgreSQL on port ${port}`, () => postgresReachable(url, 1_000));
  };
  // Immediate: every connection is cut at once, as when the server crashes or the network goes.
  const stop = async () => {
    if (existsSync(join(data, 'postmaster.pid'))) run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', '-s', 'stop']);
  };
  return started({ url, port, dir, start, stop });
}
