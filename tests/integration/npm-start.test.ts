// `npm start` as a user runs it: the real npm, a real port, a data directory
// kept across restarts. What the banner says, what survives a restart (the
// managed-mode walkthrough of docs/managed-mode.md, run as written), and that
// signalling npm stops the whole process tree.
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { ENV_KEYS } from '../../lib/config.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const offlineFetch = pathToFileURL(join(projectRoot, 'tests/support/offline-fetch.mjs')).href;
const TIMEOUT = { timeout: 120_000 };

/** The environment of a shell with none of the service's settings, plus `env`. */
function cleanEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base: NodeJS.ProcessEnv = { ...process.env };
  for (const key of ENV_KEYS) delete base[key];
  for (const key of ['VERCEL', 'NODE_ENV', 'KV_REST_API_URL', 'KV_REST_API_TOKEN']) delete base[key];
  // No test reaches the internet: the server's fetches to other hosts fail as offline.
  return { ...base, NODE_OPTIONS: `--import=${offlineFetch}`, HOST: '127.0.0.1', ...env };
}

interface Started {
  child: ChildProcess;
  url: string;
  exited: Promise<number | null>;
  output(): { stdout: string; stderr: string };
}

const running: Started[] = [];

async function npmStart(env: Record<string, string>): Promise<Started> {
  const port = await closedPort();
  const child = spawn('npm', ['start'], { cwd: projectRoot, env: cleanEnv({ PORT: String(port), ...env }), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  const started: Started = { child, url: `http://127.0.0.1:${port}`, exited, output: () => ({ stdout, stderr }) };
  running.push(started);
  // The banner's last line is the database's: everything before it is printed by then.
  await vi.waitFor(
    () => {
      if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}: ${stderr}`);
      expect(stdout).toMatch(/\n {2}database: .*\n/);
    },
    { timeout: 60_000, interval: 100 },
  );
  return started;
}

async function stop(server: Started, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  server.child.kill(signal);
  await server.exited;
}

/** Every process below `pid` (from /proc), so a test can tell whether any outlives the signal. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // gone meanwhile
    }
  }
  const found: number[] = [];
  const visit = (parent: number) => {
    for (const child of children.get(parent) ?? []) {
      found.push(child);
      visit(child);
    }
  };
  visit(pid);
  return found;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

let dataDir = '';
beforeAll(() => {
  dataDir = mkdtempSync(join(tmpdir(), 'l402-npm-start-'));
});
afterEach(async () => {
  // A failed test must not leave a server behind.
  for (const server of running.splice(0)) {
    if (server.child.exitCode === null && server.child.signalCode === null) await stop(server);
  }
});
afterAll(() => {
  rmSync(dataDir, { recursive: true, force: true });
});

describe('npm start', () => {
  it.each(['SIGTERM', 'SIGINT'] as const)('stops its whole process tree, port included, when npm gets %s', TIMEOUT, async (signal) => {
    const server = await npmStart({ DATA_DIR: join(dataDir, `signal-${signal}`), BTC_PRICE_SOURCES: 'none' });
    const tree = descendants(server.child.pid!);
    expect(tree.length).toBeGreaterThan(0);
    server.child.kill(signal); // npm only, as a process manager or `kill <pid>` does
    expect(await server.exited).not.toBeNull();
    await vi.waitFor(() => expect(tree.filter(alive)).toEqual([]), { timeout: 15_000, interval: 100 });
    await expect(fetch(`${server.url}/api/health`)).rejects.toThrow();
  });

  it('in production with nothing set, names every missing setting and how to set it, and claims no embedded default', TIMEOUT, async () => {
    const server = await npmStart({ NODE_ENV: 'production', DATA_DIR: join(dataDir, 'production'), BTC_PRICE_SOURCES: 'none' });
    const { stdout } = server.output();
    expect(stdout).toContain('NOT CONFIGURED for production');
    expect(stdout).toMatch(/- UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN .*: create an Upstash Redis database/);
    expect(stdout).toMatch(/- L402_SECRET: a random string of at least 32 characters/);
    expect(stdout).toMatch(/- LIGHTNING_PROVIDER .*: your Lightning backend/);
    expect(stdout).not.toContain('key-value store: in memory');
    expect(stdout).not.toContain('Lightning: embedded dev node');
    // What the banner says is what the routes answer.
    const paid = await fetch(`${server.url}/api/demo/btc-price`);
    expect(paid.status).toBe(503);
    const body = (await paid.json()) as { code: string; missing: string[] };
    expect(body.code).toBe('NOT_CONFIGURED');
    expect(body.missing).toHaveLength(3);
    await stop(server);
  });

  it('offline, prints that the BTC price is simulated', TIMEOUT, async () => {
    // Default sources; the preload makes every outside fetch fail, as offline.
    const server = await npmStart({ DATA_DIR: join(dataDir, 'offline') });
    expect(server.output().stdout).toContain('  BTC price: simulated (no source answered: coinbase, kraken, coingecko; offline?)');
    await stop(server);
  });

  it(
    'lists its own demo in its directory on a fresh start, marked demo: true, and after a restart on another port at its new address, once',
    TIMEOUT,
    async () => {
      const dir = join(dataDir, 'directory');
      const listed = async (base: string) => (await (await fetch(`${base}/api/apis.json`)).json()) as { count: number; apis: Record<string, unknown>[] };
      // Started one after the other (PGlite is single-process), each on a port of its own.
      for (let start = 0; start < 2; start++) {
        const server = await npmStart({ DATA_DIR: dir, BTC_PRICE_SOURCES: 'none' });
        const demo = `${server.url}/api/demo/btc-price`;
        const stream = `${server.url}/api/demo/stream`; // the dev node refunds, so the demo sells sessions and its stream
        await vi.waitFor(() => expect(server.output().stdout).toContain(`  directory: lists the demo at ${demo} and ${stream}\n`));
        const listing = await listed(server.url);
        expect(listing.count).toBe(2);
        expect(listing.apis).toEqual(
          expect.arrayContaining([
            expect.objectContaining({ url: demo, price_sats: 1, category: 'finance', demo: true }),
            expect.objectContaining({ url: stream, price_sats: 1, category: 'data', demo: true }),
          ]),
        );
        await stop(server);
      }
    },
  );

  it('docs/managed-mode.md "Trying it locally" works as written on any port, across the restart that adds SPLIT_SECRET', TIMEOUT, async () => {
    const doc = readFileSync(join(projectRoot, 'docs/managed-mode.md'), 'utf8');
    const block = (name: string) => {
      const found = new RegExp(`<!-- ${name} -->\\s*\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(doc)?.[1];
      expect(found, `docs/managed-mode.md has a ${name} block`).toBeTruthy();
      return found!;
    };
    const sh = async (script: string, env: Record<string, string>) =>
      (await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], { env: { ...process.env, ...env }, timeout: 60_000 })).stdout;
    const dir = join(dataDir, 'walkthrough');

    // A fresh server: nothing on the dev node's balance before this payment.
    const first = await npmStart({ DATA_DIR: dir, BTC_PRICE_SOURCES: 'none' });
    const out = await sh(`${block('managed-walkthrough')}\nprintf '\\nHASH=%s\\nOWNER=%s\\n' "$HASH" "$OWNER"`, { B: first.url });
    const lines = out.trim().split('\n');
    const vars = Object.fromEntries(lines.filter((line) => /^(HASH|OWNER)=/.test(line)).map((line) => line.split('=', 2) as [string, string]));
    expect(vars.OWNER).toBe(`alice@${first.url.slice('http://'.length)}`);
    const [paid, inbox] = lines.filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(paid).toMatchObject({ paymentHash: vars.HASH, amountMsat: 2_000_000 });
    // The payout reached alice's address: 1994 sats (99.7% of 2000).
    expect(inbox).toMatchObject({ address: vars.OWNER, received: [{ amountMsat: 1_994_000 }] });
    // Each step is logged.
    await vi.waitFor(() => {
      const { stdout } = first.output();
      expect(stdout).toContain(`[managed] payment ${vars.HASH} of 2000000 msat confirmed (webhook): 1994000 msat owed to ${vars.OWNER}`);
      expect(stdout).toMatch(new RegExp(`\\[payouts\\] payout [0-9a-f-]+: 1994000 msat paid to ${vars.OWNER!.replace(/\./g, '\\.')}`));
      expect(stdout).toContain(`[webhook] payment ${vars.HASH} of 2000000 msat confirmed`);
    });
    await stop(first);

    // The restart that adds SPLIT_SECRET, on another port: the payment is still known, and already split and paid.
    const splitSecret = 'walkthrough-split-secret-0123456789';
    const second = await npmStart({ DATA_DIR: dir, BTC_PRICE_SOURCES: 'none', SPLIT_SECRET: splitSecret });
    const split = JSON.parse(await sh(block('managed-walkthrough-split'), { B: second.url, OWNER: vars.OWNER!, HASH: vars.HASH!, SPLIT_SECRET: splitSecret }));
    expect(split).toEqual({ ok: true, ownerSats: 1994, ownerMsat: 1_994_000, ledgerKey: vars.HASH, duplicate: true, state: 'paid' });
    await stop(second);
  });

  it('a dev-node invoice made before a restart is paid after it (POST /api/dev/pay), and the paid token then works', TIMEOUT, async () => {
    const dir = join(dataDir, 'restart');
    const first = await npmStart({ DATA_DIR: dir, BTC_PRICE_SOURCES: 'none' });
    const challenge = (await (await fetch(`${first.url}/api/demo/btc-price`)).json()) as { invoice: string; macaroon: string; paymentHash: string };
    await stop(first);

    const second = await npmStart({ DATA_DIR: dir, BTC_PRICE_SOURCES: 'none' });
    const paid = await fetch(`${second.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: challenge.invoice }),
    });
    expect(paid.status).toBe(200);
    const { preimage } = (await paid.json()) as { preimage: string };
    const price = await fetch(`${second.url}/api/demo/btc-price`, { headers: { authorization: `L402 ${challenge.macaroon}:${preimage}` } });
    expect(price.status).toBe(200);
    expect(await price.json()).toMatchObject({ source: 'simulated' });
    // Paid once, even across restarts.
    await stop(second);
    const third = await npmStart({ DATA_DIR: dir, BTC_PRICE_SOURCES: 'none' });
    const again = await fetch(`${third.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: challenge.invoice }),
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe('ALREADY_PAID');
    await stop(third);
  });
});
