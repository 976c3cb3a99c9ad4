// The command line (the real bin, a child process) against hostile servers:
// an answer that trickles or never comes ends at --timeout-seconds with exit
// 5, and a huge answer goes to stdout as it arrives, never whole in memory
// (a 402 without a challenge header included, whose body the client reads
// only up to 64 KiB for a challenge).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIB, startHostileServer, type HostileServer } from '../support/hostile-server.js';

const BIN = fileURLToPath(new URL('../../src/bin.ts', import.meta.url));

interface Run {
  code: number | null;
  stdoutBytes: number;
  stderr: string;
  ms: number;
  /** The process's peak resident memory as last seen while it ran, bytes. */
  peakRss: number;
}

/** Runs the bin, counting (not keeping) what it writes to stdout and watching its memory. */
function runBin(args: string[]): Promise<Run> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(NWC_URL|LNBITS_|PHOENIXD_|LND_|CLN_|BLINK_|LIGHTNING_NETWORK)/.test(k)) env[k] = v;
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdoutBytes = 0;
    let stderr = '';
    let peakRss = 0;
    const watch = setInterval(() => {
      try {
        peakRss = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) * 1024;
      } catch {
        // gone already
      }
    }, 20);
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.stdout.on('data', (chunk: Buffer) => (stdoutBytes += chunk.length));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
    child.on('close', (code) => {
      clearInterval(watch);
      clearTimeout(killer);
      resolve({ code, stdoutBytes, stderr, ms: Date.now() - started, peakRss });
    });
  });
}

let hostile: HostileServer;
beforeAll(async () => {
  hostile = await startHostileServer();
});
afterAll(async () => {
  await hostile?.close();
});

describe('l402-paywall <url> against hostile servers', () => {
  it('ends an answer that trickles, or never comes, after --timeout-seconds: exit 5, saying so', async () => {
    for (const path of ['/trickle', '/silent']) {
      const run = await runBin([`${hostile.url}${path}`, '--timeout-seconds', '1']);
      expect(run.code, run.stderr).toBe(5);
      expect(run.stderr).toContain(`no complete answer from ${hostile.url} within 1 s`);
      expect(run.ms).toBeLessThan(15_000);
    }
    const bad = await runBin([`${hostile.url}/secret`, '--timeout-seconds', '0']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--timeout-seconds must be a whole number of seconds above 0');
  });

  it('streams a 128 MiB answer to stdout without holding it, a 402 without challenge header too', async () => {
    const small = await runBin([`${hostile.url}/secret`]);
    expect(small.code).toBe(0);
    for (const [path, code] of [
      ['/stream?mib=128', 0],
      ['/stream?mib=128&status=402&json=1', 1],
    ] as const) {
      const run = await runBin([`${hostile.url}${path}`]);
      expect(run.code, run.stderr).toBe(code);
      expect(run.stdoutBytes).toBe(128 * MIB);
      expect(run.peakRss - small.peakRss, `peak memory over a small answer's, ${path}`).toBeLessThan(64 * MIB);
    }
  });
});
