// One instance of a metered streaming route as an OS process of its own (node
// --import tsx): what a second server, or a second function instance, is. Its
// prepaid sessions live in the shared Redis (the Lua ledger, the Redis replay
// store) and its dev Lightning node keeps invoices and balances there too, so
// instances started with the same settings serve, top up, close and refund
// one another's sessions. GET /stream streams METERED_CHUNKS one-sat chunks
// metered on the session (a 20-sat deposit).
//
// Settings (environment): REDIS_URL, METERED_PREFIX (the run's keys),
// L402_SECRET, DEV_NODE_KEY (the node key every instance shares: one node, as
// one operator's backend), METERED_CHUNKS. Prints `listening <url>` when ready.
// Exits when its stdin closes, so a parent that ends, however it ends, leaves no process behind.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Redis as IORedis } from 'ioredis';
import { createDevNode } from '../../src/backends.js';
import { getPayment, withL402 } from '../../src/index.js';
import { EVENT_STREAM_HEADERS, lightningSessions, meteredEventStream, scriptedSessionLedger } from '../../src/lightning.js';
import { redisReplayStore } from '../../src/redis.js';
import { redisDevNodeStore } from './redis-dev-node-store.js';

const setting = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`metered-stream-instance: set ${name}`);
  return value;
};
const prefix = setting('METERED_PREFIX');
const chunks = Number(setting('METERED_CHUNKS'));
const redis = new IORedis(setting('REDIS_URL'));
const run = (script: string, keys: string[], args: string[]) => redis.eval(script, keys.length, ...keys, ...args);

const stream = withL402(
  (request) => {
    const session = getPayment(request)!.session!;
    const words = Array.from({ length: chunks }, (_, i) => `token ${i + 1}`);
    return new Response(meteredEventStream(session, words, { topUpTimeoutMs: 15_000, pollMs: 20 }), { headers: EVENT_STREAM_HEADERS });
  },
  {
    priceSats: 50,
    realm: 'llm.example',
    provider: createDevNode({ store: redisDevNodeStore(redis, prefix), privateKey: setting('DEV_NODE_KEY') }),
    secret: setting('L402_SECRET'),
    replayStore: redisReplayStore(redis, { prefix: `${prefix}use:` }),
    session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 600, ledger: scriptedSessionLedger(run, `${prefix}session:`) }),
  },
);

const server = createServer(
  getRequestListener((request) =>
    new URL(request.url).pathname === '/stream' ? stream(request) : Response.json({ error: 'not found', code: 'NOT_FOUND' }, { status: 404 }),
  ),
);
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`listening http://127.0.0.1:${(server.address() as AddressInfo).port}\n`);
});
const exit = () => {
  server.closeAllConnections();
  redis.disconnect();
  process.exit(0);
};
process.stdin.on('end', exit);
process.stdin.on('close', exit);
process.stdin.resume();
process.on('SIGTERM', exit);
