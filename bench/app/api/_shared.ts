// The same handler behind both routes, so the only difference is the paywall.
import { json } from '../../../lib/http/errors.js';
import { withL402 } from '../../../lib/l402/index.js';
import { createDevNode } from '../../../lib/lightning/providers/dev.js';
import { createMemoryStore } from '../../../lib/store/memory.js';
import { kvReplayStore } from '../../../lib/store/replay.js';

export const answer = () => json({ usd: 100_000, source: 'simulated', fetchedAt: new Date().toISOString() });

const store = createMemoryStore();
export const paid = withL402(answer, {
  priceSats: 1,
  provider: createDevNode({ store, privateKey: process.env.DEV_NODE_PRIVATE_KEY! }),
  secret: process.env.L402_SECRET!,
  replayStore: kvReplayStore(store),
  route: '/api/paid',
});
