// Throughput of a paywalled route against the same route unprotected, on the
// local server, measured side by side in alternating rounds.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import autocannon from 'autocannon';
import { Keyring, mintToken } from '../lib/l402/token.js';

const SECRET = bytesToHex(randomBytes(32));
const ROUND_SECONDS = 3;
const ROUNDS = 7;
const CONNECTIONS = 32;
const MAX_RPS = 30_000;

async function startServer(): Promise<{ url: string; stop(): void }> {
  // The server gets core 0 and this process (the load generator) core 1, so
  // neither's threads (GC, compiler) steal from the other; without taskset
  // both float.
  const server = [process.execPath, '--import', 'tsx', new URL('./server.ts', import.meta.url).pathname];
  const pinned = hasTaskset();
  if (pinned) spawnSync('taskset', ['-cp', '1', String(process.pid)], { stdio: 'ignore' });
  const [command, ...args] = pinned ? ['taskset', '-c', '0', ...server] : server;
  const child = spawn(command!, args, {
    env: { ...process.env, L402_SECRET: SECRET, DEV_NODE_PRIVATE_KEY: bytesToHex(randomBytes(32)), NODE_ENV: 'development' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bench server exited with ${code}`)));
  });
  return { url: line.trim(), stop: () => child.kill('SIGTERM') };
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

async function run(url: string, supply: string[]): Promise<{ rps: number; non2xx: number }> {
  let next = 0;
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: ROUND_SECONDS,
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, headers: { ...request.headers, authorization: supply[next++ % supply.length]! } }) }],
  });
  if (next > supply.length) throw new Error(`ran out of credentials (${supply.length}); raise MAX_RPS`);
  return { rps: result.requests.average, non2xx: result.non2xx };
}

export interface HttpBench {
  freeRps: number;
  paidRps: number;
  /** Median over rounds of paid/free measured back to back: robust to a noisy neighbour. */
  ratio: number;
  failures: number;
}

export async function benchHttp(): Promise<HttpBench> {
  const server = await startServer();
  try {
    const fresh = () => credentials(MAX_RPS * ROUND_SECONDS);
    await run(`${server.url}/api/free`, fresh()); // warm-up both paths
    await run(`${server.url}/api/paid`, fresh());
    const rounds: { free: number; paid: number }[] = [];
    let failures = 0;
    for (let i = 0; i < ROUNDS; i++) {
      // Alternate which goes first so drift does not favour one side.
      const order = i % 2 ? (['paid', 'free'] as const) : (['free', 'paid'] as const);
      const round = { free: 0, paid: 0 };
      for (const which of order) {
        const r = await run(`${server.url}/api/${which}`, fresh());
        round[which] = r.rps;
        failures += r.non2xx;
      }
      rounds.push(round);
    }
    const ratios = rounds.map((r) => r.paid / r.free).sort((a, b) => a - b);
    const mean = (k: 'free' | 'paid') => rounds.reduce((sum, r) => sum + r[k], 0) / rounds.length;
    return { freeRps: mean('free'), paidRps: mean('paid'), ratio: ratios[Math.floor(ratios.length / 2)]!, failures };
  } finally {
    server.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchHttp());
