// mppx 0.11's own server validator, `mppx validate <url>` (its command line,
// as `npx mppx validate` runs it, in a child process, JSON output), against
// the service started by `npm start` with `Accept-Payment: lightning/*`: /llms.txt found,
// every paid operation found through `x-payment-info`, each answering its
// Payment challenges first, and nothing failed, warned, suggested or skipped.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';

let server: ServerProcess;
beforeAll(async () => {
  server = await startServerProcess({ DEMO_STREAM_INTERVAL_MS: '0' }, { viaNpm: true });
});
afterAll(() => server?.stop());
// What `npx mppx` runs: the package's bin (package.json "bin": ./dist/bin.js).
const MPPX_BIN = fileURLToPath(new URL('../../node_modules/mppx/dist/bin.js', import.meta.url));

interface Check {
  label: string;
  severity: 'pass' | 'fail' | 'warn' | 'suggested' | 'skip';
  detail?: string;
}
interface Validation {
  discovery: { found: boolean; checks: Check[] };
  endpoints: { method: string; path: string; challenge: Check[]; errorHandling: Check[]; payment: Check[] }[];
  summary: { passed: number; failed: number; warnings: number; suggested: number; skipped: number };
}

/** `mppx validate <url> --output-json` with extra headers: its exit code and its JSON report. */
function mppxValidate(url: string, headers: string[]): Promise<{ code: number; report: Validation }> {
  const args = [MPPX_BIN, 'validate', url, '--output-json', ...headers.flatMap((header) => ['-H', header])];
  // MPPX_STRIPE_SECRET_KEY set (empty): mppx would otherwise start the Stripe CLI to look for a key.
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, MPPX_STRIPE_SECRET_KEY: '', NO_COLOR: '1' };
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { env, timeout: 60_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
      try {
        resolve({ code, report: JSON.parse(stdout) as Validation });
      } catch {
        reject(new Error(`mppx validate gave no JSON (exit ${code}): ${stdout}\n${stderr}`));
      }
    });
  });
}

describe('mppx validate', () => {
  it('with Accept-Payment: lightning/*: every paid operation through x-payment-info, /llms.txt found, 0 failed, 0 warnings, 0 skipped', async () => {
    const { code, report } = await mppxValidate(server.url, ['Accept-Payment: lightning/*']);
    const checks = [
      ...report.discovery.checks,
      ...report.endpoints.flatMap((endpoint) => [...endpoint.challenge, ...endpoint.errorHandling, ...endpoint.payment]),
    ];
    expect(checks.filter((check) => check.severity !== 'pass')).toEqual([]);
    expect(report.summary).toMatchObject({ failed: 0, warnings: 0, suggested: 0, skipped: 0 });
    expect(code).toBe(0);
    expect(report.discovery.checks).toContainEqual(expect.objectContaining({ label: 'llms.txt found and nonempty', severity: 'pass' }));
    // Found through x-payment-info: exactly the operations the document lists with it.
    const doc = (await (await fetch(`${server.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, { 'x-payment-info'?: unknown }>> };
    const listed = Object.entries(doc.paths)
      .flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })))
      .filter(({ operation }) => operation['x-payment-info'])
      .map(({ method, path }) => `${method} ${path}`)
      .sort();
    expect(listed.length).toBeGreaterThan(0);
    expect(report.endpoints.map(({ method, path }) => `${method} ${path}`).sort()).toEqual(listed);
    for (const endpoint of report.endpoints) {
      expect(endpoint.challenge).toContainEqual(expect.objectContaining({ label: 'WWW-Authenticate header present', severity: 'pass' }));
      expect(endpoint.challenge).toContainEqual(expect.objectContaining({ label: 'Challenge parseable', severity: 'pass' }));
      expect(endpoint.challenge).toContainEqual(expect.objectContaining({ label: 'Realm matches server hostname', severity: 'pass' }));
    }
  });

  it('without Accept-Payment the 402 starts with an L402-family challenge, which mppx skips as not MPP', async () => {
    const { report } = await mppxValidate(server.url, []);
    for (const endpoint of report.endpoints.filter((e) => e.path === '/api/demo/btc-price'))
      expect(endpoint.challenge).toContainEqual(expect.objectContaining({ label: 'Not an MPP endpoint', severity: 'skip' }));
  });
});
