// A passing test that logs, as the service does when a test takes a provider,
// a webhook receiver or a database down on purpose. tests/unit/test-output.test.ts
// runs it to check that `npm test` shows such logs only on failure or when asked.
import { expect, it } from 'vitest';

const LOGGED = '[logs-of-passing-tests] a failure the test caused on purpose';

it('logs, and passes', () => {
  console.error(LOGGED);
  console.log(LOGGED);
  expect(LOGGED).toContain('on purpose');
});
