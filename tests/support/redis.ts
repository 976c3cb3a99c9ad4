// Real Redis for integration tests: CI starts one (.ci/run); elsewhere the
// suites that need it are skipped with a message saying so.
import { Redis as IORedis } from 'ioredis';

export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function redisReachable(url = REDIS_URL): Promise<boolean> {
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
