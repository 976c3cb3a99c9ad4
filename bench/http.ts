// Throughput of a paywalled route against the same route unprotected, on the
// local server, measured side by side in rotating rounds. A third route does
// the free route's work plus a busy loop as long as the paywall takes in that
// server: how much that much work costs on this machine, paywall or not.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import autocannon from 'autocannon';
import { Keyring, mintToken } from '../lib/l402/token.js';

const SECRET = bytesToHex(randomBytes(32));
const ROUND_SECONDS = 2;
// Several server processes, a few rounds each: one process's JIT and memory
// layout can move its free/paid ratio by 0.1 either way (0.81 and 1.05 in one
// run), which rotating rounds inside that process cannot cancel, so the time
// goes to more processes rather than more rounds in each.
const SERVERS = 5;
const ROUNDS_PER_SERVER = 3; // each route first, second and third once
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
 * made before the round so the load generator only sends. Both routes get the
 * same headers: the only difference measured is the paywall's work.
 */
function credentials(count: number): string[] {
  const keyring = new Keyring([SECRET]);
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  return Array.from({ length: count }, () => {
    const preimage = randomBytes(32);
    const token = mintToken(keyring, { paymentHash: bytesToHex(sha256(preimage)), expiresAt, caveats: { route: '/api/paid', price_msat: 1000 } });
    return `L402 ${token}:${bytesToHex(preimage)}`;
  });
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

async function run(url: string, supply: string[]): Promise<Run> {
  let next = 0;
  const origin = new URL(url).origin;
  const before = await counters(origin);
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: ROUND_SECONDS,
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: supply[next++ % supply.length]! } }) }],
  });
  if (next > supply.length) throw new Error(`ran out of credentials (${supply.length}); raise MAX_RPS`);
  const after = await counters(origin);
  const paid = after.paidRequests - before.paidRequests;
  return {
    rps: result.requests.average,
    cpuPerRequest: (after.micros - before.micros) / result.requests.total,
    paywallMicros: paid ? ((after.paywallMs - before.paywallMs) * 1000) / paid : 0,
    non2xx: result.non2xx,
  };
}

export interface HttpBench {
  freeRps: number;
  paidRps: number;
  /** Median over all rounds of paid/free measured back to back: robust to a noisy neighbour. */
  ratio: number;
  /** The same median for each server process, to show how far they spread. */
  ratioPerServer: number[];
  /** Server CPU time per request, microseconds. */
  freeCpuMicros: number;
  paidCpuMicros: number;
  /** Median over rounds of free/paid CPU per request: the throughput ratio a CPU-bound server would see. */
  cpuRatio: number;
  /** Median paywall time per paid request inside the server (wall time outside the handler), microseconds. */
  paywallMicros: number;
  /** Median over rounds of control/free: the free route plus a busy loop as long as the paywall's time. */
  controlRatio: number;
  failures: number;
}

const ROUTES = ['free', 'paid', 'control'] as const;
type Route = (typeof ROUTES)[number];
type Round = Record<Route, Run>;

async function roundsOnOneServer(): Promise<{ rounds: Round[]; failures: number }> {
  const server = await startServer();
  try {
    const fresh = () => credentials(MAX_RPS * ROUND_SECONDS);
    for (const route of ROUTES) await run(`${server.url}/api/${route}`, fresh()); // warm-up
    const rounds: Round[] = [];
    let failures = 0;
    for (let i = 0; i < ROUNDS_PER_SERVER; i++) {
      // Rotate which goes first so drift does not favour one route.
      const order = [...ROUTES.slice(i % ROUTES.length), ...ROUTES.slice(0, i % ROUTES.length)];
      const round = {} as Round;
      for (const route of order) {
        round[route] = await run(`${server.url}/api/${route}`, fresh());
        failures += round[route].non2xx;
      }
      rounds.push(round);
    }
    return { rounds, failures };
  } finally {
    await server.stop();
  }
}

const paidOverFree = (r: Round) => r.paid.rps / r.free.rps;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function benchHttp(): Promise<HttpBench> {
  const rounds: Round[] = [];
  const ratioPerServer: number[] = [];
  let failures = 0;
  for (let i = 0; i < SERVERS; i++) {
    const one = await roundsOnOneServer();
    rounds.push(...one.rounds);
    ratioPerServer.push(median(one.rounds.map(paidOverFree)));
    failures += one.failures;
  }
  const mean = (route: Route, key: 'rps' | 'cpuPerRequest') => rounds.reduce((sum, r) => sum + r[route][key], 0) / rounds.length;
  return {
    freeRps: mean('free', 'rps'),
    paidRps: mean('paid', 'rps'),
    ratio: median(rounds.map(paidOverFree)),
    ratioPerServer,
    freeCpuMicros: mean('free', 'cpuPerRequest'),
    paidCpuMicros: mean('paid', 'cpuPerRequest'),
    cpuRatio: median(rounds.map((r) => r.free.cpuPerRequest / r.paid.cpuPerRequest)),
    paywallMicros: median(rounds.map((r) => r.paid.paywallMicros)),
    controlRatio: median(rounds.map((r) => r.control.rps / r.free.rps)),
    failures,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchHttp());
