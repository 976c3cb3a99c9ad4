// `npm test` stays readable: what a passing test logs (the service's logs of
// the outages tests cause on purpose, over a thousand lines) is not printed,
// so the summary is not buried; L402_TEST_LOGS=1 prints it
// (docs/contributing.md). Checked by running vitest itself, with the project's
// configuration, on a passing test that logs.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/** What tests/unit/logs-of-passing-tests.test.ts logs (not imported: importing a test file would run its test here too). */
const LOGGED = '[logs-of-passing-tests] a failure the test caused on purpose';
const root = fileURLToPath(new URL('../../', import.meta.url));
const VITEST = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));

/** `vitest run --project unit tests/unit/logs-of-passing-tests.test.ts` as npm test runs it, with `env` over this environment. */
function runLoggingTest(env: Record<string, string | undefined>): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [VITEST, 'run', '--project', 'unit', 'tests/unit/logs-of-passing-tests.test.ts'],
      { cwd: root, env: { ...process.env, L402_TEST_LOGS: undefined, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? ((error as { code?: number }).code ?? -1) : 0, output: stdout + stderr }),
    );
  });
}

describe('the logs of passing tests', () => {
  it('are not printed by default, and are with L402_TEST_LOGS=1', { timeout: 120_000 }, async () => {
    const [quiet, loud] = await Promise.all([runLoggingTest({}), runLoggingTest({ L402_TEST_LOGS: '1' })]);
    expect(quiet.code, quiet.output).toBe(0);
    expect(quiet.output).toMatch(/1 passed/);
    expect(quiet.output).not.toContain(LOGGED);
    expect(loud.code, loud.output).toBe(0);
    expect(loud.output.split(LOGGED).length - 1).toBe(2);
  });
});
