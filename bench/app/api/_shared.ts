// The same handler behind every route, so the only difference is what wraps it:
// nothing (free), the paywall (paid), or a busy loop as long as the paywall's
// own time in this process (control: what that much work costs here).
import { json } from '../../../lib/http/errors.js';
import { withL402 } from '../../../lib/l402/index.js';
import { createDevNode } from '../../../lib/lightning/providers/dev.js';
import { createMemoryStore } from '../../../lib/store/memory.js';
import { kvReplayStore } from '../../../lib/store/replay.js';

export const answer = () => json({ usd: 100_000, source: 'simulated', fetchedAt: new Date().toISOString() });

/**
 * The paywall's own time in this process: wall time of a paid request outside
 * the handler, in ms; in total, and as a moving average over about the last
 * thousand paid requests (which the control route spins for).
 */
export const paywallTime = { totalMs: 0, requests: 0, recentMs: 0 };
const HANDLER_MS = Symbol('handler ms'); // on the request: requests interleave at every await

const store = createMemoryStore();
const paywalled = withL402(
  (request) => {
    const start = performance.now();
    const response = answer();
    (request as { [HANDLER_MS]?: number })[HANDLER_MS] = performance.now() - start;
    return response;
  },
  {
    priceSats: 1,
    provider: createDevNode({ store, privateKey: process.env.DEV_NODE_PRIVATE_KEY! }),
    secret: process.env.L402_SECRET!,
    replayStore: kvReplayStore(store),
    route: '/api/paid',
  },
);

export async function paid(request: Request): Promise<Response> {
  const start = performance.now();
  const response = await paywalled(request);
  const ms = performance.now() - start - ((request as { [HANDLER_MS]?: number })[HANDLER_MS] ?? 0);
  paywallTime.totalMs += ms;
  paywallTime.recentMs += (ms - paywallTime.recentMs) / Math.min(++paywallTime.requests, 1024);
  return response;
}

/** The free answer after busy-waiting as long as the paywall has recently taken. */
export function control(): Response {
  const end = performance.now() + paywallTime.recentMs;
  while (performance.now() < end);
  return answer();
}
