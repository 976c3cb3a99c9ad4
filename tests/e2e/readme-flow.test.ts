// The README's copy-paste paid flow, run with bash and curl against a live
// server: if the README lies, this fails.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resetServiceContext } from '../../lib/service/context.js';
import { startDevServer, type DevServer } from '../../scripts/dev-server.js';

let server: DevServer;
const saved = { ...process.env };

beforeAll(async () => {
  Object.assign(process.env, { L402_SECRET: 'readme-test-secret-0123456789abcdef0123456789abcdef', BTC_PRICE_SOURCES: 'none', DATA_DIR: mkdtempSync(join(tmpdir(), 'l402-readme-')) });
  resetServiceContext();
  server = await startDevServer({ port: 0 });
});
afterAll(async () => {
  await server?.close();
  process.env = saved;
  resetServiceContext();
});

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
