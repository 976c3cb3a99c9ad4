// Throughput of a paywalled route against the same route unprotected, on the
// local server, in short slices that take turns. A third route does the free
// route's work plus a busy loop as long as the paywall takes in that server:
// how much that much work costs on this machine, paywall or not.
//
// Each route's throughput is its best slice. A neighbour on a shared machine
// only ever takes time away, and it comes and goes within seconds: measured
// on one machine in one afternoon, the median of back-to-back paid/free pairs
// in a process ranged from 0.63 to 1.19, best against best from 0.79 to 0.92.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import autocannon from 'autocannon';
import { Keyring } from 'l402-paywall';
import { paidAuthorization } from './credentials.js';

const SECRET = bytesToHex(randomBytes(32));
const SLICE_SECONDS = 0.5;
const CYCLES_PER_SERVER = 10; // each route once per cycle, the order rotating
// Several server processes: one process's JIT and memory layout can still
// move its ratio a little, which more slices in that process cannot cancel.
const SERVERS = 5;
const CONNECTIONS = 32;
const MAX_RPS = 30_000;

// The server gets core 0 and this process (the load generator) core 1, so
// neither's threads (GC, compiler) steal from the other; without taskset both
// float. Decided once: after pinning, this process sees a single core.
let pinned: boolean | undefined;

async function startServer(): Promise<{ url: string; stop(): Promise<void> }> {
  const server = [process.execPath, '--import', 'tsx', new URL('./server.ts', import.meta.url).pathname];
  if (pinned === undefined) {
    pinned = hasTaskset();
    if (pinned) spawnSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  }
  const [command, ...args] = pinned ? ['taskset', '-c', '0', ...server] : server;
  const child = spawn(command!, args, {
    env: { ...process.env, L402_SECRET: SECRET, DEV_NODE_PRIVATE_KEY: bytesToHex(randomBytes(32)), NODE_ENV: 'development' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    url: line.trim(),
    stop: () => {
      child.kill('SIGTERM');
      return exited; // before the next server starts on the same core
    },
  };
}

function hasTaskset(): boolean {
  return availableParallelism() >= 2 && spawnSync('taskset', ['-c', '0', 'true']).status === 0;
}

/**
 * Paid credentials minted as the server would after payment, one per request,
 * made before the slice so the load generator only sends. Every route gets
 * the same headers: the only difference measured is the paywall's work. What
 * a slice did not send is still unused and goes to the next one.
 */
const keyring = new Keyring([SECRET]);
let unsent: string[] = [];

function credentials(count: number): string[] {
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  while (unsent.length < count) unsent.push(paidAuthorization(keyring, '/api/paid', expiresAt));
  return unsent;
}

interface ServerCounters {
  /** CPU time so far, microseconds. */
  micros: number;
  /** The paywall's own time so far (ms) and over how many paid requests. */
  paywallMs: number;
  paidRequests: number;
}

async function counters(base: string): Promise<ServerCounters> {
  return (await (await fetch(`${base}/api/cpu`)).json()) as ServerCounters;
}

interface Run {
  rps: number;
  cpuPerRequest: number;
  /** Paywall time per paid request inside the server, microseconds (0 on other routes). */
  paywallMicros: number;
  non2xx: number;
}

async function run(url: string, seconds: number): Promise<Run> {
  const supply = credentials(Math.ceil(MAX_RPS * (seconds + 0.2)));
  let next = 0;
  const origin = new URL(url).origin;
  const before = await counters(origin);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: seconds,
    sampleInt: 100, // the run ends on a sample tick: this keeps it near `seconds`
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: supply[next++]! } }) }],
  });
  if (next > supply.length) throw new Error(`ran out of credentials (${supply.length}); raise MAX_RPS`);
  unsent = supply.slice(next);
  const after = await counters(origin);
  const paid = after.paidRequests - before.paidRequests;
  const total = result.requests.total;
  return {
    rps: total / ((result.finish.getTime() - result.start.getTime()) / 1000),
    cpuPerRequest: (after.micros - before.micros) / total,
    paywallMicros: paid ? ((after.paywallMs - before.paywallMs) * 1000) / paid : 0,
    non2xx: result.non2xx,
  };
}

export interface HttpBench {
  /** Best slice of each route, median over server processes. */
  freeRps: number;
  paidRps: number;
  /** Median over server processes of best paid / best free. */
  ratio: number;
  /** That ratio in each server process, to show how far they spread. */
  ratioPerServer: number[];
  /** Least server CPU time per request seen in a slice, microseconds, median over processes. */
  freeCpuMicros: number;
  paidCpuMicros: number;
  /** Median over processes of least free / least paid CPU per request: the throughput ratio a CPU-bound server would see. */
  cpuRatio: number;
  /** Median paywall time per paid request inside the server (wall time outside the handler), microseconds. */
  paywallMicros: number;
  /** Median over processes of best control / best free: the free route plus a busy loop as long as the paywall's time. */
  controlRatio: number;
  failures: number;
  /** Server and load generator each had a core of their own (taskset); otherwise they shared, and the ratio reads high. */
  pinned: boolean;
}

const ROUTES = ['free', 'paid', 'control'] as const;
type Route = (typeof ROUTES)[number];

interface ServerResult {
  best: Record<Route, number>;
  leastCpu: Record<Route, number>;
  paywallMicros: number[];
  failures: number;
}

async function slicesOnOneServer(): Promise<ServerResult> {
  const server = await startServer();
  try {
    for (const route of ROUTES) await run(`${server.url}/api/${route}`, 1); // warm-up
    const runs = { free: [] as Run[], paid: [] as Run[], control: [] as Run[] };
    for (let i = 0; i < CYCLES_PER_SERVER; i++) {
      // Rotate which goes first so drift does not favour one route.
      const order = [...ROUTES.slice(i % ROUTES.length), ...ROUTES.slice(0, i % ROUTES.length)];
      for (const route of order) runs[route].push(await run(`${server.url}/api/${route}`, SLICE_SECONDS));
    }
    const of = <T>(f: (runs: Run[]) => T) => ({ free: f(runs.free), paid: f(runs.paid), control: f(runs.control) });
    return {
      best: of((r) => Math.max(...r.map((x) => x.rps))),
      leastCpu: of((r) => Math.min(...r.map((x) => x.cpuPerRequest))),
      paywallMicros: runs.paid.map((r) => r.paywallMicros),
      failures: ROUTES.reduce((sum, route) => sum + runs[route].reduce((n, r) => n + r.non2xx, 0), 0),
    };
  } finally {
    await server.stop();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function benchHttp(): Promise<HttpBench> {
  const servers: ServerResult[] = [];
  for (let i = 0; i < SERVERS; i++) servers.push(await slicesOnOneServer());
  const across = (f: (s: ServerResult) => number) => median(servers.map(f));
  const ratioPerServer = servers.map((s) => s.best.paid / s.best.free);
  return {
    freeRps: across((s) => s.best.free),
    paidRps: across((s) => s.best.paid),
    ratio: median(ratioPerServer),
    ratioPerServer,
    freeCpuMicros: across((s) => s.leastCpu.free),
    paidCpuMicros: across((s) => s.leastCpu.paid),
    cpuRatio: across((s) => s.leastCpu.free / s.leastCpu.paid),
    paywallMicros: median(servers.flatMap((s) => s.paywallMicros)),
    controlRatio: across((s) => s.best.control / s.best.free),
    failures: servers.reduce((sum, s) => sum + s.failures, 0),
    pinned: pinned === true,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchHttp());
