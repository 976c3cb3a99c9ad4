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
import { meterByUsage, openAiUsage } from 'l402-paywall/sessions';
import { redisReplayStore } from 'l402-paywall/redis';
import { NO_REDIS, REDIS_URL, redisAnswers } from '../packages/l402-paywall/tests/support/redis.js';
import { paidAuthorization } from './credentials.js';
import { paymentChallenge, paymentCredential, sseData } from './payment-wire.js';

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
  /** A session request whose handler answers a completion's JSON itself (direct), and the same through meterByUsage (reserve, settle to the usage). */
  directCompletionMicros: number;
  meteredCompletionMicros: number;
  /** Per chunk, reading the whole stream: plain SSE, and metered on the session. */
  plainChunkMicros: number;
  /** Chunks paid ahead in reservations (the default). */
  meteredChunkMicros: number;
  /** One spend on the ledger a chunk (reserveChunks: 1). */
  byChunkMicros: number;
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
  // Two metered streams a round: one paid ahead in reservations, one chunk by chunk.
  const streamUnits = (plan.streams + WARM_UP_STREAMS) * STREAM_CHUNKS * 2;
  // Each metered completion reserves 5 units and settles to the 3 its upstream reports.
  const completionUnits = (plan.rounds + 1) * plan.batch * 3;
  let lastSession: SessionUse | undefined;
  const meter = openAiUsage();
  const handler = withL402(
    (request) => {
      lastSession = getPayment(request)?.session;
      if (request.method !== 'POST') return Response.json({ usd: 100_000, source: 'simulated' });
      if (request.headers.get('x-bench') === 'direct') return completionUpstream(request);
      return meterByUsage(request, completionUpstream, { meter });
    },
    {
      priceSats: 1,
      provider: createDevNode({ store: net }),
      secret,
      route: ROUTE,
      replayStore,
      // Room for every request and chunk of the run: no top-up is ever needed, so the timed path is the normal one.
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 1 + bearerUnits + streamUnits + completionUnits * 2 + 10, ledger }),
      onError: (error) => {
        throw error;
      },
    },
  );
  const request = (authorization: string) => new Request(URL_OF_ROUTE, { headers: { authorization } });

  // Opened as a client does: a 402's session challenge, its deposit paid, an amountless return invoice.
  const offered = await handler(new Request(URL_OF_ROUTE));
  const offer = paymentChallenge(offered.headers.get('www-authenticate'), 'session');
  const { preimage } = await wallet.pay(String(offer.request.depositInvoice));
  const { invoice: returnInvoice } = await wallet.createAmountlessInvoice({ memo: 'bench refund', expirySeconds: 3600 });
  const opened = await handler(request(paymentCredential(offer.echo, { action: 'open', preimage, returnInvoice })));
  if (opened.status !== 200) throw new Error(`open answered ${opened.status}`);
  const sessionId = String(offer.request.paymentHash);
  const bearer = paymentCredential(offer.echo, { action: 'bearer', sessionId, preimage });

  const time = async (requests: Request[]) => {
    const start = performance.now();
    for (const r of requests) if ((await handler(r)).status !== 200) throw new Error('not served');
    return ((performance.now() - start) * 1000) / requests.length;
  };
  const charges = () => Array.from({ length: plan.batch }, () => request(paidAuthorization(keyring, ROUTE)));
  const bearers = () => Array.from({ length: plan.batch }, () => request(bearer));
  await time(charges());
  await time(bearers());
  const completions = (direct: boolean) =>
    Array.from(
      { length: plan.batch },
      () =>
        new Request(URL_OF_ROUTE, {
          method: 'POST',
          headers: { authorization: bearer, 'content-type': 'application/json', ...(direct && { 'x-bench': 'direct' }) },
          body: COMPLETION_BODY,
        }),
    );
  const spentBeforeCompletions = (await ledger.get(sessionId))?.spentMsat ?? 0;
  await time(completions(true));
  await time(completions(false));
  const charge: number[] = [];
  const bearerTimes: number[] = [];
  const direct: number[] = [];
  const meteredCompletions: number[] = [];
  for (let round = 0; round < plan.rounds; round++) {
    charge.push(await time(charges()));
    bearerTimes.push(await time(bearers()));
    direct.push(await time(completions(true)));
    meteredCompletions.push(await time(completions(false)));
  }
  // Every metered completion settled to its 3 units (the direct ones spent their 1): else the timing measured something else.
  const completionsSpent = ((await ledger.get(sessionId))?.spentMsat ?? 0) - spentBeforeCompletions - plan.rounds * plan.batch * 1000;
  if (completionsSpent !== (plan.rounds + 1) * plan.batch * 4 * 1000) throw new Error(`the completions spent ${completionsSpent} msat`);
  const session = lastSession;
  if (session?.id !== sessionId) throw new Error('the last request was not served by the session');

  const chunks = Array.from({ length: STREAM_CHUNKS }, (_, i) => `{"token":"chunk ${i}"}`);
  const plainStream = () => plainEventStream(chunks);
  const meteredStream = () => meteredEventStream(session, chunks);
  const byChunkStream = () => meteredEventStream(session, chunks, { reserveChunks: 1 });
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
  const byChunk: number[] = [];
  for (let i = 0; i < WARM_UP_STREAMS + plan.streams; i++) {
    const p = await timeStream(plainStream, expectedPlain);
    const m = await timeStream(meteredStream, expectedPlain);
    const c = await timeStream(byChunkStream, expectedPlain);
    // Each stream's first chunk counts as paid by the request that started it (meter.ts).
    if (p.spentMsat !== 0 || m.spentMsat !== (STREAM_CHUNKS - 1) * 1000 || c.spentMsat !== (STREAM_CHUNKS - 1) * 1000)
      throw new Error(`a stream spent ${p.spentMsat} / ${m.spentMsat} / ${c.spentMsat} msat`);
    if (i < WARM_UP_STREAMS) continue;
    plain.push(p.micros);
    metered.push(m.micros);
    byChunk.push(c.micros);
  }
  return {
    chargeMicros: median(charge),
    bearerMicros: median(bearerTimes),
    directCompletionMicros: median(direct),
    meteredCompletionMicros: median(meteredCompletions),
    plainChunkMicros: median(plain),
    meteredChunkMicros: median(metered),
    byChunkMicros: median(byChunk),
  };
}

const COMPLETION_BODY = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });

/** An OpenAI-compatible upstream in process: a completion reporting 3 tokens. */
const completionUpstream = async (request: Request) => {
  await request.arrayBuffer();
  return Response.json({
    id: 'cmpl',
    object: 'chat.completion',
    choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }],
    usage: { total_tokens: 3 },
  });
};

/** The same chunks as meteredEventStream sends them, one read ahead, without a session. */
function plainEventStream(chunks: Iterable<string>): ReadableStream<Uint8Array> {
  const iterator = chunks[Symbol.iterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await iterator.next();
      if (next.done) {
        controller.enqueue(sseData('[DONE]'));
        controller.close();
        return;
      }
      controller.enqueue(sseData(next.value));
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
  log('\nMetering by reported usage, per request (a session request answering a completion in process, same run):');
  log(`  ${'stores'.padEnd(8)} ${'direct'.padStart(10)} ${'metered'.padStart(10)} ${'overhead'.padStart(10)} ${'metered/direct'.padStart(15)}`);
  for (const [name, r] of rows) {
    if ('skipped' in r) log(`  ${name.padEnd(8)} not measured: ${r.skipped}`);
    else
      log(
        `  ${name.padEnd(8)} ${us(r.directCompletionMicros)} ${us(r.meteredCompletionMicros)} ${us(r.meteredCompletionMicros - r.directCompletionMicros)} ${ratio(r.meteredCompletionMicros / r.directCompletionMicros).padStart(15)}`,
      );
  }
  log(
    '  (metered: meterByUsage with openAiUsage, the body read for max_tokens, a reservation and its settle on the ledger; direct: the handler answers the same JSON itself)',
  );
  log(`\nMetering a stream, per chunk (${result.chunks.toLocaleString('en-US')} small chunks, the stream read to its end):`);
  log(
    `  ${'stores'.padEnd(8)} ${'plain SSE'.padStart(10)} ${'metered'.padStart(10)} ${'overhead'.padStart(10)} ${'metered/plain'.padStart(14)} ${'by chunk'.padStart(10)} ${'overhead'.padStart(10)}`,
  );
  for (const [name, r] of rows) {
    if ('skipped' in r) log(`  ${name.padEnd(8)} not measured: ${r.skipped}`);
    else
      log(
        `  ${name.padEnd(8)} ${us(r.plainChunkMicros)} ${us(r.meteredChunkMicros)} ${us(r.meteredChunkMicros - r.plainChunkMicros)} ${ratio(r.meteredChunkMicros / r.plainChunkMicros).padStart(14)} ${us(r.byChunkMicros)} ${us(r.byChunkMicros - r.plainChunkMicros)}`,
      );
  }
  log(
    '  (metered: meteredEventStream, chunks paid ahead in reservations of 4, 8, then 16 chunks; by chunk: reserveChunks 1, one atomic spend on the ledger per chunk; plain: the same events, unmetered)',
  );
}

// `npx tsx bench/sessions.ts` runs it alone.
if (import.meta.url === `file://${process.argv[1]}`) printSessionsBench(await benchSessions());
