// The README's copy-paste paid flow, run with bash and curl against a live
// server, and its session command: if the README lies, this fails.
import { expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({ DEMO_STREAM_INTERVAL_MS: '0' }));

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

it('the README session command streams 25 chunks on a 20-sat deposit, tops up once and is refunded 15 sats', async () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const block = /<!-- session-flow -->\s*```sh\n([\s\S]*?)```/.exec(readme)?.[1];
  expect(block, 'README has a session-flow block').toBeTruthy();
  const command = block!.replaceAll('http://127.0.0.1:3000', server.url);
  const { stdout, stderr } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', command], {
    cwd: new URL('../..', import.meta.url),
    timeout: 80_000,
  });
  const chunks = stdout.split('\n\n').filter((event) => event.startsWith('data: {"chunk"'));
  expect(chunks).toHaveLength(25);
  expect(stdout).toContain('event: payment-need-topup');
  expect(stdout.trimEnd().endsWith('data: [DONE]')).toBe(true);
  expect(stderr).toMatch(/closed, refund 15 sats \(succeeded\); the wallet received 15 sats\n/);
  expect(stderr).toContain('spent in all 25 sats (paid 40 sats, received back 15 sats)\n');
}, 90_000);
