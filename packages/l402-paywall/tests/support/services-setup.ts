// globalSetup of the library's integration tests (packages/l402-paywall/vitest.config.ts):
// it looks once, before any file runs, for the shared Redis they need, and says
// what is missing and what that skips, at the start of the run and again at
// its end, beside the summary. Under L402_TEST_REQUIRE_SERVICES=1 (.ci/run) a
// missing service stops the run here, before any suite could skip. The
// repository's own globalSetup (tests/support/services-setup.ts) adds the
// service's checks to these and reports them the same way.
import { NO_REDIS, redisReachable } from './redis.js';
import { SERVICES_REQUIRED } from './services.js';

export interface ServiceCheck {
  /** Why it is missing (what is missing, and the setting that names it), or undefined when it is here. */
  missing?: string;
  /** What a missing one skips. */
  skips: string;
}

/** A check's reason: what the probe returned, or (in required mode) the error it threw. */
export async function probe(run: () => Promise<string | undefined> | string | undefined): Promise<string | undefined> {
  try {
    return await run();
  } catch (error) {
    return (error as Error).message;
  }
}

/** What the library's suites need: the shared Redis (its stores, the session ledger, a stream across processes). */
export async function libraryChecks(): Promise<ServiceCheck[]> {
  return [
    {
      missing: await probe(async () => ((await redisReachable()) ? undefined : NO_REDIS)),
      skips: 'every suite on the shared Redis (stores, replay, session ledgers, payment log on Upstash)',
    },
  ];
}

/**
 * Says what is missing now and again when the run ends (the returned
 * teardown); under L402_TEST_REQUIRE_SERVICES=1 throws instead.
 */
export function reportMissing(checks: ServiceCheck[]): () => void {
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

export default async function checkServices(): Promise<() => void> {
  return reportMissing(await libraryChecks());
}
