// The same handler behind every route, with the same timing around it, so the
// only difference is what sits in between: nothing (free), the paywall (paid),
// or a busy loop as long as the paywall's own time in this process (control:
// what that much work costs here).
import { json } from '../../../lib/http/errors.js';
import { withL402 } from 'l402-paywall';
import { createDevNode } from 'l402-paywall/backends';
import { createMemoryStore } from '../../../lib/store/memory.js';

const answer = () => json({ usd: 100_000, source: 'simulated', fetchedAt: new Date().toISOString() });

/**
 * Wall time of a route's requests outside the handler, in ms; in total, and as
 * a moving average over about the last thousand requests.
 */
interface Timing {
  totalMs: number;
  requests: number;
  recentMs: number;
}
const newTiming = (): Timing => ({ totalMs: 0, requests: 0, recentMs: 0 });

/** The paywall's own time in this process (the control route spins for its moving average). */
export const paywallTime = newTiming();

const HANDLER_MS = Symbol('handler ms'); // on the request: requests interleave at every await
type Timed = Request & { [HANDLER_MS]?: number };

function timedAnswer(request: Timed): Response {
  const start = performance.now();
  const response = answer();
  request[HANDLER_MS] = performance.now() - start;
  return response;
}

function timedAround(inner: (request: Timed) => Response | Promise<Response>, into: Timing): (request: Timed) => Promise<Response> {
  return async (request) => {
    const start = performance.now();
    const response = await inner(request);
    const ms = performance.now() - start - (request[HANDLER_MS] ?? 0);
    into.totalMs += ms;
    into.recentMs += (ms - into.recentMs) / Math.min(++into.requests, 1024);
    return response;
  };
}

export const free = timedAround(timedAnswer, newTiming());

// withL402 as a single server runs it: the default in-process replay store.
export const paid = timedAround(
  withL402(timedAnswer, {
    priceSats: 1,
    provider: createDevNode({ store: createMemoryStore(), privateKey: process.env.DEV_NODE_PRIVATE_KEY! }),
    secret: process.env.L402_SECRET!,
    route: '/api/paid',
  }),
  paywallTime,
);

/** The free answer after busy-waiting as long as the paywall has recently taken. */
export const control = timedAround((request) => {
  const end = performance.now() + paywallTime.recentMs;
  while (performance.now() < end);
  return timedAnswer(request);
}, newTiming());
