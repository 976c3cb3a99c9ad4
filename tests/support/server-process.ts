// The service as a separate process (a second function instance, as on
// Vercel), with the environment the test gives it, on a free port: its dev
// server started by node, or, with `viaNpm`, by `npm start` as a user runs it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

export interface ServerProcess {
  url: string;
  /** Everything it printed, stdout and stderr. */
  readonly output: string;
  stop(): Promise<void>;
}

export async function startServerProcess(env: Record<string, string>, { viaNpm = false } = {}): Promise<ServerProcess> {
  const port = await closedPort();
  const dataDir = mkdtempSync(join(tmpdir(), 'l402-process-'));
  const [command, args] = viaNpm ? ['npm', ['start']] : [process.execPath, ['--import', 'tsx', 'scripts/dev-server.ts']];
  const child: ChildProcess = spawn(command, args, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      ...(viaNpm && { HOME: process.env.HOME ?? tmpdir() }),
      NODE_ENV: 'test',
      BTC_PRICE_SOURCES: 'none',
      DATA_DIR: dataDir,
      DATABASE_URL: 'pglite://memory',
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const ready = new Promise<string>((resolvePromise, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /^L402 .+? on (http:\/\/\S+)/m.exec(output)?.[1];
      if (url) resolvePromise(url);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the server process exited (${code}) before it was ready:\n${output}`)));
  });
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  let url: string;
  try {
    url = await ready;
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url,
    get output() {
      return output;
    },
    stop,
  };
}
