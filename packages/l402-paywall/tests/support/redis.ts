// Real Redis for integration tests: CI starts one (.ci/run); elsewhere the
// suites that need it are skipped with a message saying so (in CI, failed:
// tests/support/services.ts). Suites share it, each under key prefixes of its
// own; those whose keys cannot be prefixed start a redis-server of their own
// (tests/support/stack.ts, throwaway.ts).
import { Redis as IORedis } from 'ioredis';
import { HOW_TO_PROVIDE, redacted, skipBecause } from './services.js';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Why the suites that need the shared Redis are skipped when it does not answer. */
export const NO_REDIS = `no Redis at ${redacted(REDIS_URL)}; set REDIS_URL (${HOW_TO_PROVIDE})`;

/**
 * Whether a Redis at `url` answers PING. The shared one (REDIS_URL) not
 * answering is an error under L402_TEST_REQUIRE_SERVICES=1, as in CI.
 */
export async function redisReachable(url = REDIS_URL): Promise<boolean> {
  const up = await redisAnswers(url);
  if (!up && url === REDIS_URL) skipBecause(NO_REDIS);
  return up;
}

/** Whether a Redis at `url` answers PING, whatever the mode. */
export async function redisAnswers(url: string): Promise<boolean> {
  const probe = new IORedis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  probe.on('error', () => {});
  try {
    await probe.connect();
    await probe.ping();
    return true;
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}
