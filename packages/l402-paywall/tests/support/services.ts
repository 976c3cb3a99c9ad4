// What the integration suites need beyond Node: a PostgreSQL server, a Redis
// server, and the redis-server and PostgreSQL binaries (the outage suites and
// the full-stack suites start servers of their own). On a developer's machine
// a missing one skips the suites that need it, each saying why; CI
// (.ci/run) always provides them and sets L402_TEST_REQUIRE_SERVICES=1, so
// there a missing one fails the run instead of turning it green with less
// tested.

/** Set by .ci/run: a missing service is an error, not a reason to skip. */
export const SERVICES_REQUIRED = process.env.L402_TEST_REQUIRE_SERVICES === '1';

/** Where a developer reads how to provide what is missing. */
export const HOW_TO_PROVIDE = 'docs/contributing.md says how to provide it';

/**
 * The reason a suite is skipped, handed back to skip with; under
 * L402_TEST_REQUIRE_SERVICES=1 an error instead, so CI fails.
 */
export function skipBecause(reason: string): string {
  if (SERVICES_REQUIRED) {
    throw new Error(`${reason}. L402_TEST_REQUIRE_SERVICES=1 (set by .ci/run) makes a missing service a failure, not a skip.`);
  }
  return reason;
}

/** A URL without its password, for messages. */
export function redacted(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//');
}
