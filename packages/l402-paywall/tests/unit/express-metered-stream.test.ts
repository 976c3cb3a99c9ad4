// A metered stream (meteredEventStream) served through the Express adapter
// (l402-paywall/express) by a real Express 5 app on a real port, read by the
// paying client (fetchWithL402 with createSessions) over real HTTP: events
// arrive one by one as they are produced (the first is read while the source
// has not produced the last), the stream pauses with payment-need-topup after
// the 20-sat deposit, the client's top-up resumes it, and a client that hangs
// up mid-stream stops the source (its `return` runs) without an error
// anywhere. The handler pipes the Web stream into Express's response with
// node:stream's pipeline, which also cancels the Web stream when the client goes.
import { Readable, pipeline } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { createBudget, createSessions, fetchWithL402 } from 'l402-paywall/client';
import { l402Middleware } from 'l402-paywall/express';
import { EVENT_STREAM_HEADERS, lightningSessions, meteredEventStream, memorySessionLedger } from 'l402-paywall/lightning';
import type { Payment } from 'l402-paywall';
import { sseEvents } from '../support/sse.js';
import { devNodeWallet } from '../support/dev-wallet.js';
import { listenNode, type Listening } from '../support/listen.js';

const SAT = 1000;
const CHUNKS = 25;
const net = memoryDevNodeStore();
const node = createDevNode({ store: net });
const walletNode = createDevNode({ store: net });
const wallet = devNodeWallet(walletNode);

/** What the route's source did: how many chunks it produced, whether it was stopped, and a gate before its last chunk. */
const source = {
  produced: 0,
  stopped: false,
  releaseLast: () => {},
  pipelineErrors: [] as string[],
};

/** `total` chunks, the last held back until released; `everyMs` apart, as a model generating them would be. */
async function* words(total: number, everyMs: number) {
  try {
    for (let i = 1; i <= total; i++) {
      if (i === total) await new Promise<void>((resolve) => (source.releaseLast = resolve));
      if (everyMs > 0) await new Promise((resolve) => setTimeout(resolve, everyMs));
      source.produced = i;
      yield `token ${i}`;
    }
  } finally {
    source.stopped = true;
  }
}

let http: Listening;
let url = '';
beforeAll(async () => {
  const app = express();
  const session = lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 600, ledger: memorySessionLedger() });
  const paywall = l402Middleware({ priceSats: 50, provider: node, secret: 'express-metered-stream-secret-0123456789abcdef', onError: () => {}, session });
  const serve =
    (total: number, everyMs = 0) =>
    (req: express.Request, res: express.Response) => {
      const paid = (req as express.Request & { l402?: Payment }).l402!.session!;
      res.writeHead(200, EVENT_STREAM_HEADERS);
      const body = meteredEventStream(paid, words(total, everyMs), { topUpTimeoutMs: 10_000, pollMs: 20 });
      pipeline(Readable.fromWeb(body as NodeReadableStream<Uint8Array>), res, (error) => {
        if (error) source.pipelineErrors.push(error.message);
      });
    };
  app.get('/stream', paywall, serve(CHUNKS));
  app.get('/endless', paywall, serve(Number.MAX_SAFE_INTEGER, 20));
  http = await listenNode(app);
  url = `${http.url}`;
});
afterAll(() => http.close());

describe('a metered stream through l402Middleware (Express)', () => {
  it('streams chunk by chunk over HTTP, pauses for a top-up after 20, resumes once topped up, and ends with its receipt', async () => {
    Object.assign(source, { produced: 0, stopped: false, pipelineErrors: [] });
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    const response = await fetchWithL402(`${url}/stream`, undefined, { wallet, maxPriceSats: 1, budget, sessions });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(EVENT_STREAM_HEADERS['content-type']);
    const next = sseEvents(response.body!);

    // The first event is here while the source holds back its last chunk: nothing waits for the end of the body.
    const first = await Promise.race([
      next(),
      new Promise((_, reject) => setTimeout(() => reject(new Error('no event before the last chunk was produced: the body was buffered')), 5_000)),
    ]);
    expect(first).toEqual({ event: 'message', data: 'token 1' });
    expect(source.produced).toBeLessThan(CHUNKS);
    const seen = ['token 1'];
    for (let event = await next(); event && event.data !== `token ${CHUNKS - 1}`; event = await next())
      seen.push(event.event === 'message' ? event.data : event.event);
    seen.push(`token ${CHUNKS - 1}`);
    // Every chunk but the last is out, and the last is not produced yet.
    expect(source.produced).toBe(CHUNKS - 1);
    source.releaseLast();
    for (let event = await next(); event; event = await next()) seen.push(event.event === 'message' ? event.data : event.event);

    const tokens = Array.from({ length: CHUNKS }, (_, i) => `token ${i + 1}`);
    expect(seen).toEqual([...tokens.slice(0, 20), 'payment-need-topup', ...tokens.slice(20), 'payment-receipt', '[DONE]']);
    expect(sessions.list()[0]!.depositedMsat).toBe(40 * SAT);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ status: 200, refundSats: 15, refundStatus: 'succeeded' });
    expect(budget.spent().totalMsat).toBe(25 * SAT);
    expect(source.pipelineErrors).toEqual([]);
  });

  it('a client that hangs up mid-stream stops the source, and the server goes on serving', async () => {
    Object.assign(source, { produced: 0, stopped: false, pipelineErrors: [] });
    const sessions = createSessions();
    const hangUp = new AbortController();
    const response = await fetchWithL402(
      `${url}/endless`,
      { signal: hangUp.signal },
      { wallet, maxPriceSats: 1, budget: createBudget({ totalSats: 100 }), sessions },
    );
    const next = sseEvents(response.body!);
    expect(await next()).toEqual({ event: 'message', data: 'token 1' });
    expect(await next()).toEqual({ event: 'message', data: 'token 2' });
    expect(source.stopped).toBe(false);
    hangUp.abort();
    await expect.poll(() => source.stopped, { timeout: 5_000 }).toBe(true);
    // Stopped while it was producing, not held for a top-up (a chunk every 20 ms stays within the deposit).
    expect(source.produced).toBeLessThan(20);
    // The premature close is pipeline's report to the handler, not an error thrown anywhere.
    expect(source.pipelineErrors).toEqual(['Premature close']);
    const [closed] = await sessions.closeAll();
    expect(closed?.status).toBe(200);
    expect((await fetch(`${url}/stream`)).status).toBe(402);
  });
});
