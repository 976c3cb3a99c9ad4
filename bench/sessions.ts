// Prepaid sessions beside the per-request charge, in process, through the
// same withL402 handler (docs/sessions.md): what a `bearer` request costs
// next to a charge (a fresh L402 token + preimage, verified and claimed in the
// replay store), and what metering a stream costs per chunk next to the same
// chunks as a plain SSE stream. Each on the in-process stores and on Redis
// (the Lua ledger and the Redis replay store), the two sides alternating in
// batches; medians of wall time, since a Redis round trip is part of the cost.
// Ratios are the result: absolute times move with the machine's neighbours.
import { randomUUID } from 'node:crypto';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Redis as IORedis } from 'ioredis';
import { Keyring, getPayment, memoryReplayStore, withL402, type L402Options, type SessionUse } from 'l402-paywall';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { lightningSessions, meteredEventStream, memorySessionLedger, scriptedSessionLedger, type SessionLedger } from 'l402-paywall/lightning';
import { redisReplayStore } from 'l402-paywall/redis';
import { SESSION_INTENT, formatSessionCredential, parsePaymentChallenges, readLightningSession } from '../packages/l402-paywall/src/mpp.js';
import { sseEvent } from '../packages/l402-paywall/src/schemes/session/meter.js';
import { NO_REDIS, REDIS_URL, redisAnswers } from '../packages/l402-paywall/tests/support/redis.js';
import { paidAuthorization } from './credentials.js';

const ROUTE = '/api/paid';
const URL_OF_ROUTE = `http://127.0.0.1${ROUTE}`;
export const STREAM_CHUNKS = 2_000;
const WARM_UP_STREAMS = 2;

interface Plan {
  /** Requests per timed batch, and batches per side (alternating); one untimed batch per side first. */
  batch: number;
  rounds: number;
  /** Streams per side (alternating), after WARM_UP_STREAMS untimed pairs. */
  streams: number;
}

// Sized so the whole session bench stays within seconds: a Redis round trip is ~10x an in-process request.
const MEMORY_PLAN: Plan = { batch: 2_000, rounds: 9, streams: 21 };
const REDIS_PLAN: Plan = { batch: 500, rounds: 7, streams: 5 };

export interface SessionsBackendBench {
  chargeMicros: number;
  bearerMicros: number;
  /** Per chunk, reading the whole stream: plain SSE, and metered on the session. */
  plainChunkMicros: number;
  meteredChunkMicros: number;
}

export interface SessionsBench {
  chunks: number;
  memory: SessionsBackendBench;
  redis: SessionsBackendBench | { skipped: string };
}

type Stores = { ledger: SessionLedger; replayStore: NonNullable<L402Options['replayStore']> };

export async function benchSessions(): Promise<SessionsBench> {
  const memory = await benchBackend({ ledger: memorySessionLedger(), replayStore: memoryReplayStore() }, MEMORY_PLAN);
  if (!(await redisAnswers(REDIS_URL))) return { chunks: STREAM_CHUNKS, memory, redis: { skipped: NO_REDIS } };
  const redis = new IORedis(REDIS_URL);
  const prefix = `bench:sessions:${randomUUID()}:`;
  try {
    const stores: Stores = {
      ledger: scriptedSessionLedger((script, keys, args) => redis.eval(script, keys.length, ...keys, ...args), `${prefix}session:`),
      replayStore: redisReplayStore(redis, { prefix: `${prefix}use:` }),
    };
    return { chunks: STREAM_CHUNKS, memory, redis: await benchBackend(stores, REDIS_PLAN) };
  } finally {
    await deleteKeys(redis, prefix);
    redis.disconnect();
  }
}

async function benchBackend({ ledger, replayStore }: Stores, plan: Plan): Promise<SessionsBackendBench> {
  const net = memoryDevNodeStore();
  const wallet = createDevNode({ store: net });
  const secret = bytesToHex(randomBytes(32));
  const keyring = new Keyring([secret]);
  const bearerUnits = (plan.rounds + 1) * plan.batch;
  // Each stream's first chunk is paid by the request that started it (meter.ts).
  const streamUnits = (plan.streams + WARM_UP_STREAMS) * (STREAM_CHUNKS - 1);
  let lastSession: SessionUse | undefined;
  const handler = withL402(
    (request) => {
      lastSession = getPayment(request)?.session;
      return Response.json({ usd: 100_000, source: 'simulated' });
    },
    {
      priceSats: 1,
      provider: createDevNode({ store: net }),
      secret,
      route: ROUTE,
      replayStore,
      // Room for every request and chunk of the run: no top-up is ever needed, so the timed path is the normal one.
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 1 + bearerUnits + streamUnits + 10, ledger }),
      onError: (error) => {
        throw error;
      },
    },
  );
  const request = (authorization: string) => new Request(URL_OF_ROUTE, { headers: { authorization } });

  // Opened as a client does: a 402's session challenge, its deposit paid, an amountless return invoice.
  const offered = await handler(new Request(URL_OF_ROUTE));
  const challenge = parsePaymentChallenges(offered.headers.get('www-authenticate')).challenges.find((c) => c.intent === SESSION_INTENT);
  const read = challenge && readLightningSession(challenge);
  if (!challenge || !read?.ok) throw new Error('the 402 offered no session');
  const { preimage } = await wallet.pay(read.session.depositInvoice);
  const { invoice: returnInvoice } = await wallet.createAmountlessInvoice({ memo: 'bench refund', expirySeconds: 3600 });
  const opened = await handler(request(formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice })));
  if (opened.status !== 200) throw new Error(`open answered ${opened.status}`);
  const sessionId = read.session.paymentHash;
  const bearer = formatSessionCredential(challenge, { action: 'bearer', sessionId, preimage });

  const time = async (requests: Request[]) => {
    const start = performance.now();
    for (const r of requests) if ((await handler(r)).status !== 200) throw new Error('not served');
    return ((performance.now() - start) * 1000) / requests.length;
  };
  const charges = () => Array.from({ length: plan.batch }, () => request(paidAuthorization(keyring, ROUTE)));
  const bearers = () => Array.from({ length: plan.batch }, () => request(bearer));
  await time(charges());
  await time(bearers());
  const charge: number[] = [];
  const bearerTimes: number[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    charge.push(await time(charges()));
    bearerTimes.push(await time(bearers()));
  }
  const session = lastSession;
  if (session?.id !== sessionId) throw new Error('the last request was not served by the session');

  const chunks = Array.from({ length: STREAM_CHUNKS }, (_, i) => `{"token":"chunk ${i}"}`);
  const plainStream = () => plainEventStream(chunks);
  const meteredStream = () => meteredEventStream(session, chunks);
  const expectedPlain = await drain(plainStream());
  const timeStream = async (stream: () => ReadableStream<Uint8Array>, minimumBytes: number) => {
    const spentBefore = (await ledger.get(sessionId))?.spentMsat ?? 0;
    const start = performance.now();
    const bytes = await drain(stream());
    const micros = ((performance.now() - start) * 1000) / STREAM_CHUNKS;
    // Every chunk sent, and (metered) every one but the first paid here: else the stream was cut short and the time means nothing.
    if (bytes < minimumBytes) throw new Error('stream cut short');
    return { micros, spentMsat: ((await ledger.get(sessionId))?.spentMsat ?? 0) - spentBefore };
  };
  const plain: number[] = [];
  const metered: number[] = [];
  for (let i = 0; i < WARM_UP_STREAMS + plan.streams; i++) {
    const p = await timeStream(plainStream, expectedPlain);
    const m = await timeStream(meteredStream, expectedPlain);
    if (p.spentMsat !== 0 || m.spentMsat !== (STREAM_CHUNKS - 1) * 1000) throw new Error(`a stream spent ${p.spentMsat} / ${m.spentMsat} msat`);
    if (i < WARM_UP_STREAMS) continue;
    plain.push(p.micros);
    metered.push(m.micros);
  }
  return { chargeMicros: median(charge), bearerMicros: median(bearerTimes), plainChunkMicros: median(plain), meteredChunkMicros: median(metered) };
}

/** The same chunks as meteredEventStream sends them (sseEvent), one read ahead, without a session. */
function plainEventStream(chunks: Iterable<string>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.iterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) {
        controller.enqueue(sseEvent(undefined, '[DONE]'));
        controller.close();
        return;
      }
      controller.enqueue(sseEvent(undefined, next.value));
    },
  });
}

async function drain(stream: ReadableStream<Uint8Array>): Promise<number> {
  const reader = stream.getReader();
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function deleteKeys(redis: IORedis, prefix: string): Promise<void> {
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }) as AsyncIterable<string[]>) if (keys.length > 0) await redis.del(...keys);
}

export function printSessionsBench(result: SessionsBench, log: (line: string) => void = console.log): void {
  const us = (n: number) => `${n.toFixed(1)} us`.padStart(10);
  const ratio = (n: number) => `${n.toFixed(2)}x`.padStart(7);
  const rows: [string, SessionsBackendBench | { skipped: string }][] = [
    ['memory', result.memory],
    ['Redis', result.redis],
  ];
  log('\nPrepaid sessions through withL402, in process (wall time, medians of alternating batches):');
  log(`  ${'stores'.padEnd(8)} ${'charge'.padStart(10)} ${'bearer'.padStart(10)} ${'bearer/charge'.padStart(14)}`);
  for (const [name, r] of rows) {
    if ('skipped' in r) log(`  ${name.padEnd(8)} not measured: ${r.skipped}`);
    else log(`  ${name.padEnd(8)} ${us(r.chargeMicros)} ${us(r.bearerMicros)} ${ratio(r.bearerMicros / r.chargeMicros).padStart(14)}`);
  }
  log('  (charge: a fresh L402 token + preimage, verified and claimed in the replay store; bearer: one unit spent on the session ledger)');
  log(`\nMetering a stream, per chunk (${result.chunks.toLocaleString('en-US')} small chunks, the stream read to its end):`);
  log(`  ${'stores'.padEnd(8)} ${'plain SSE'.padStart(10)} ${'metered'.padStart(10)} ${'overhead'.padStart(10)} ${'metered/plain'.padStart(14)}`);
  for (const [name, r] of rows) {
    if ('skipped' in r) log(`  ${name.padEnd(8)} not measured: ${r.skipped}`);
    else
      log(
        `  ${name.padEnd(8)} ${us(r.plainChunkMicros)} ${us(r.meteredChunkMicros)} ${us(r.meteredChunkMicros - r.plainChunkMicros)} ${ratio(r.meteredChunkMicros / r.plainChunkMicros).padStart(14)}`,
      );
  }
  log('  (metered: meteredEventStream, one atomic spend on the ledger per chunk before it is sent; plain: the same events, unmetered)');
}

// `npx tsx bench/sessions.ts` runs it alone.
if (import.meta.url === `file://${process.argv[1]}`) printSessionsBench(await benchSessions());
