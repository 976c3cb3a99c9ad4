// The README's copy-paste paid flow, run with bash and curl against a live
// server: if the README lies, this fails.
import { expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { useDevServer } from '../support/server.js';

const server = useDevServer();

it('the README paid flow answers 200 with the BTC price', async () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const block = /<!-- paid-flow -->\s*```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block, 'README has a paid-flow block').toBeTruthy();
  // Async: the server answers from this same process.
  const { stdout: output } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', block!], { env: { ...process.env, B: server.url }, timeout: 15_000 });
  const body = JSON.parse(output) as { usd: number; source: string; fetchedAt: string };
  expect(body).toMatchObject({ usd: expect.any(Number), source: 'simulated' });
  expect(Date.parse(body.fetchedAt)).not.toBeNaN();
});
