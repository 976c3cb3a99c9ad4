// globalSetup of the projects whose suites need PostgreSQL, Redis or their
// server binaries (vitest.config.ts). It looks once, before any file runs, and
// says what is missing and what that skips, at the start of the run and again
// at its end, beside the summary. Under L402_TEST_REQUIRE_SERVICES=1 (.ci/run)
// a missing service stops the run here, before any suite could skip.
import { NO_POSTGRES, postgresReachable } from './postgres.js';
import { NO_REDIS, redisReachable } from './redis.js';
import { SERVICES_REQUIRED } from './services.js';
import { postgresServerMissing, redisServerMissing } from './throwaway.js';

interface Check {
  /** Why it is missing (what is missing, and the setting that names it), or undefined when it is here. */
  missing?: string;
  /** What a missing one skips. */
  skips: string;
}

/** A check's reason: what the probe returned, or (in required mode) the error it threw. */
async function probe(run: () => Promise<string | undefined> | string | undefined): Promise<string | undefined> {
  try {
    return await run();
  } catch (error) {
    return (error as Error).message;
  }
}

export default async function checkServices(): Promise<() => void> {
  const checks: Check[] = [
    {
      missing: await probe(async () => ((await postgresReachable()) ? undefined : NO_POSTGRES)),
      skips: 'the PostgreSQL half of every database suite, and the full-stack suites (tests/support/stack.ts)',
    },
    {
      missing: await probe(async () => ((await redisReachable()) ? undefined : NO_REDIS)),
      skips: 'every suite on the shared Redis (stores, replay, payment log on Upstash)',
    },
    { missing: await probe(redisServerMissing), skips: 'the suites that start Redis servers of their own (outages, full stack)' },
    { missing: await probe(postgresServerMissing), skips: 'the database outage suite' },
  ];
  const missing = checks.filter((check) => check.missing);
  if (missing.length === 0) return () => {};
  if (SERVICES_REQUIRED) {
    const lines = missing.map((check) => `  - ${check.missing}\n    needed by: ${check.skips}`);
    throw new Error(`the tests need what is missing here:\n${lines.join('\n')}`);
  }
  const lines = missing.map((check) => `  - ${check.missing}\n    skipped without it: ${check.skips}`);
  const report = [
    'Missing here, so the suites that need it are SKIPPED (each says why; the summary counts them as skipped):',
    ...lines,
    'To run them, provide what is missing: docs/contributing.md ("What the tests need"). .ci/run installs and starts all of it.',
  ].join('\n');
  console.warn(`\n${report}\n`);
  return () => console.warn(`\n${report}\n`);
}
