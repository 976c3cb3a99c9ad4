// What audit events add to a request: the same fresh paid Requests through
// withL402 with onEvent unset and with onEvent set to an httpEventSink posting
// to a local receiver, alternating batches; and the same for 402 challenges.
// The measured part is the request path: the call and every microtask it
// leaves. What withL402 does later, in a task of its own (building the events
// and handing them to the sink), is timed separately, and so is delivery
// (JSON, signature, POST). Measured as this process's CPU time rather than
// wall time: on a shared machine a neighbour then costs us its cache, not its
// whole time slice.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, withL402, type L402Options } from 'l402-paywall';
import { generateEventSecret, httpEventSink } from 'l402-paywall/events';
import { paidAuthorization } from './credentials.js';

export interface EventsBench {
  paidUnsetMicros: number;
  paidSinkMicros: number;
  paidAddedMicros: number;
  challengeUnsetMicros: number;
  challengeSinkMicros: number;
  challengeAddedMicros: number;
  /** CPU per event of building it and handing it to the sink, after the response (off the request path). */
  buildMicros: number;
  /** Events posted, signed, to the local receiver per second, in the background (untimed above). */
  deliveredPerSecond: number;
  delivered: number;
  failed: number;
  dropped: number;
}

const BATCH = 1000;
const ROUNDS = 9;

export async function benchEvents(): Promise<EventsBench> {
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received++;
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/events`;

  const secret = bytesToHex(randomBytes(32));
  const keyring = new Keyring([secret]);
  const answer = () => Response.json({ usd: 100_000, source: 'simulated' });
  let invoiceCount = 0;
  const options: L402Options = {
    priceSats: 1,
    // Challenges need an invoice: a fixed-cost stand-in, the same for both sides.
    provider: { createInvoice: async () => ({ invoice: 'lnbcrt10n1bench', paymentHash: (++invoiceCount).toString(16).padStart(64, '0') }) },
    secret,
    route: '/api/paid',
    onError: (error) => {
      throw error;
    },
  };
  // Room for every event of a batch: the queue never drops here, so the timed path is the normal one.
  const sink = httpEventSink({ url, secret: generateEventSecret(), maxQueue: BATCH * 2, concurrency: 8 });
  const unset = withL402(answer, options);
  const withSink = withL402(answer, { ...options, onEvent: sink, events: { agentId: 'bench' } });

  const paidBatch = () =>
    Array.from({ length: BATCH }, () => new Request('http://127.0.0.1/api/paid', { headers: { authorization: paidAuthorization(keyring) } }));
  const challengeBatch = () => Array.from({ length: BATCH }, () => new Request('http://127.0.0.1/api/paid'));
  // The loop runs each request and its microtasks; the events are built in a later task (build() below), outside it.
  const time = async (handler: (r: Request) => Promise<Response>, requests: Request[], status: number) => {
    const start = process.cpuUsage();
    for (const request of requests) if ((await handler(request)).status !== status) throw new Error(`not ${status}`);
    const used = process.cpuUsage(start);
    return (used.user + used.system) / requests.length;
  };

  let deliveryMs = 0;
  const built: number[] = [];
  // The events of the batch just timed are built in the next turn of the event loop.
  const build = async () => {
    const start = process.cpuUsage();
    await new Promise((resolve) => setImmediate(resolve));
    const used = process.cpuUsage(start);
    built.push((used.user + used.system) / BATCH);
  };
  const drain = async () => {
    const start = performance.now();
    await sink.flush();
    deliveryMs += performance.now() - start;
  };

  // withL402 loads the event builder (its own module) when constructed with
  // onEvent; a loop of resolved promises never lets that import finish, so
  // wait for the first event to be delivered before measuring anything.
  await withSink(new Request('http://127.0.0.1/api/paid'));
  for (let i = 0; i < 500 && sink.stats().delivered === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  if (sink.stats().delivered === 0) throw new Error('no event reached the receiver');

  const measure = async (batch: () => Request[], status: number) => {
    await time(unset, batch(), status);
    await time(withSink, batch(), status);
    await drain();
    const off: number[] = [];
    const on: number[] = [];
    for (let round = 0; round < ROUNDS * 2; round++) {
      // The side that runs right after a drain collects the drain's garbage: take turns.
      if (round % 2 === 0) {
        off.push(await time(unset, batch(), status));
        on.push(await time(withSink, batch(), status));
        await build();
      } else {
        on.push(await time(withSink, batch(), status));
        await build();
        off.push(await time(unset, batch(), status));
      }
      await drain();
    }
    const median = (v: number[]) => v.sort((a, b) => a - b)[Math.floor(v.length / 2)]!;
    return { unset: median(off), sink: median(on) };
  };

  const paid = await measure(paidBatch, 200);
  const challenge = await measure(challengeBatch, 402);
  const stats = sink.stats();
  receiver.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  if (received !== stats.delivered) throw new Error(`receiver counted ${received}, sink ${stats.delivered}`);
  if (stats.delivered !== 1 + 2 * (2 * ROUNDS + 1) * BATCH) throw new Error(`${stats.delivered} events delivered, not one per request`);
  return {
    paidUnsetMicros: paid.unset,
    paidSinkMicros: paid.sink,
    paidAddedMicros: paid.sink - paid.unset,
    challengeUnsetMicros: challenge.unset,
    challengeSinkMicros: challenge.sink,
    challengeAddedMicros: challenge.sink - challenge.unset,
    buildMicros: built.sort((a, b) => a - b)[built.length >> 1]!,
    deliveredPerSecond: stats.delivered / (deliveryMs / 1000),
    delivered: stats.delivered,
    failed: stats.failed,
    dropped: stats.dropped,
  };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchEvents());
