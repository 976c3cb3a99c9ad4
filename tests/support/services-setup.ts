// globalSetup of the projects whose suites need PostgreSQL, Redis or their
// server binaries (vitest.config.ts). It looks once, before any file runs, and
// says what is missing and what that skips, at the start of the run and again
// at its end, beside the summary. Under L402_TEST_REQUIRE_SERVICES=1 (.ci/run)
// a missing service stops the run here, before any suite could skip. The
// library's own checks (the shared Redis) and the report are the library's
// tests' (packages/l402-paywall/tests/support/services-setup.ts): these projects
// run its suites too.
import { libraryChecks, probe, reportMissing } from '../../packages/l402-paywall/tests/support/services-setup.js';
import { NO_POSTGRES, postgresReachable } from './postgres.js';
import { postgresServerMissing, redisServerMissing } from './throwaway.js';

export default async function checkServices(): Promise<() => void> {
  return reportMissing([
    {
      missing: await probe(async () => ((await postgresReachable()) ? undefined : NO_POSTGRES)),
      skips: 'the PostgreSQL half of every database suite, and the full-stack suites (tests/support/stack.ts)',
    },
    ...(await libraryChecks()),
    { missing: await probe(redisServerMissing), skips: 'the suites that start Redis servers of their own (outages, full stack)' },
    { missing: await probe(postgresServerMissing), skips: 'the database outage suite' },
  ]);
}
