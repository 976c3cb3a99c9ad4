// A metered stream on an edge runtime: a route selling sessions with a
// metered SSE answer, written against l402-paywall, l402-paywall/lightning and
// l402-paywall/backends, bundled as Vercel bundles an Edge Function (esbuild,
// the browser platform and edge-light conditions: a Node built-in anywhere
// fails the build) and run inside Vercel's edge VM (@edge-runtime/vm, the VM
// behind edge-runtime and packed-runtimes' serve-edge-runtime.js: Web APIs
// only, no require, no process). The paying client (fetchWithL402 with
// createSessions) reaches it through the VM's fetch dispatch: 25 one-sat
// chunks on a 20-sat deposit pause with payment-need-topup, the client's top-up
// resumes them, the stream ends with its receipt and [DONE], and the close
// refunds 15 sats to the client's return invoice. A client that hangs up
// stops the source there too.
import { EdgeVM } from '@edge-runtime/vm';
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { createBudget, createSessions, fetchWithL402, type Fetch, type Wallet } from 'l402-paywall/client';
import { sseEvents } from '../support/sse.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));
const SAT = 1000;

// The edge function: the route, and a dev wallet on the same fake network (what a test would pay with).
const EDGE_FUNCTION = `
import { getPayment, memoryReplayStore, withL402 } from './index.ts';
import { createDevNode, memoryDevNodeStore } from './backends.ts';
import { EVENT_STREAM_HEADERS, lightningSessions, meteredEventStream, memorySessionLedger } from './lightning.ts';

const net = memoryDevNodeStore();
const node = createDevNode({ store: net });
const wallet = createDevNode({ store: net });
const ledger = memorySessionLedger();
self.stopped = 0;
async function* words(total) {
  try {
    for (let i = 1; i <= total; i++) yield 'token ' + i;
  } finally {
    self.stopped++;
  }
}
const paid = (total) => withL402(
  (request) => new Response(meteredEventStream(getPayment(request).session, words(total), { topUpTimeoutMs: 10000, pollMs: 20 }), { headers: EVENT_STREAM_HEADERS }),
  {
    priceSats: 50,
    provider: node,
    secret: 'edge-metered-stream-secret-0123456789abcdef01234',
    replayStore: memoryReplayStore(),
    onError: () => {},
    session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 600, ledger }),
  },
);
const routes = {
  '/stream': paid(25),
  '/endless': paid(Number.MAX_SAFE_INTEGER),
  '/wallet/pay': async (request) => Response.json(await wallet.pay((await request.json()).invoice)),
  '/wallet/return-invoice': async () => Response.json(await wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 3600 })),
  '/wallet/lookup': async (request) => Response.json(await wallet.lookupInvoice(new URL(request.url).searchParams.get('hash'))),
  '/runtime': () => Response.json({ edgeRuntime: typeof EdgeRuntime, process: typeof process, require: typeof globalThis.require, stopped: self.stopped }),
};
addEventListener('fetch', (event) => {
  const route = routes[new URL(event.request.url).pathname];
  event.respondWith(route ? route(event.request) : Response.json({ error: 'not found', code: 'NOT_FOUND' }, { status: 404 }));
});
`;

let vm: EdgeVM;
beforeAll(async () => {
  const bundle = await build({
    stdin: { contents: EDGE_FUNCTION, resolveDir: SRC, loader: 'ts' },
    bundle: true,
    write: false,
    format: 'iife',
    platform: 'browser',
    conditions: ['edge-light', 'worker', 'browser'],
    logLevel: 'silent',
  });
  vm = new EdgeVM({ initialCode: bundle.outputFiles[0]!.text });
});

/**
 * fetch into the VM, as the network between a client and an edge function:
 * the answer's head and body are carried over into this realm's Response,
 * and cancelling its body cancels the VM's (a client hanging up).
 */
const edgeFetch: Fetch = async (input, init) => {
  const request = new Request(input, init);
  const answer = await vm.dispatchFetch(request.url, {
    method: request.method,
    headers: Object.fromEntries(request.headers),
    ...(request.body && { body: await request.text() }),
  });
  const reader = answer.body?.getReader();
  const body =
    reader &&
    new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(new Uint8Array(value));
      },
      cancel: (reason) => reader.cancel(reason),
    });
  return new Response(body, { status: answer.status, headers: Object.fromEntries(answer.headers) });
};
const edgeJson = async (path: string, body?: unknown) =>
  (await edgeFetch(`https://edge.example${path}`, body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) })).json();
const returnInvoices: string[] = [];
const wallet: Wallet = {
  network: 'regtest',
  payInvoice: ({ invoice }) => edgeJson('/wallet/pay', { invoice }),
  async createInvoice() {
    const made = (await edgeJson('/wallet/return-invoice')) as { invoice: string; paymentHash: string };
    returnInvoices.push(made.paymentHash);
    return made;
  },
  async lookupInvoice(hash) {
    const status = (await edgeJson(`/wallet/lookup?hash=${hash}`)) as { settled: boolean; amountMsat: number } | null;
    return status && (status.settled ? { settled: true, amountReceivedMsat: status.amountMsat } : { settled: false });
  },
};

describe('a metered stream in the edge VM', () => {
  it('runs with Web APIs only: no process, no require', async () => {
    expect(await edgeJson('/runtime')).toMatchObject({ edgeRuntime: 'string', process: 'undefined', require: 'undefined' });
  });

  it('25 one-sat chunks on a 20-sat deposit: paused for a top-up, resumed, ended with its receipt; the close refunds 15 sats', async () => {
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    const response = await fetchWithL402('https://edge.example/stream', undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch: edgeFetch });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/event-stream');
    const next = sseEvents(response.body!);
    const seen: string[] = [];
    for (let event = await next(); event; event = await next()) seen.push(event.event === 'message' ? event.data : event.event);
    const tokens = Array.from({ length: 25 }, (_, i) => `token ${i + 1}`);
    expect(seen).toEqual([...tokens.slice(0, 20), 'payment-need-topup', ...tokens.slice(20), 'payment-receipt', '[DONE]']);

    expect(sessions.list()[0]!.depositedMsat).toBe(40 * SAT);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ status: 200, refundSats: 15, refundStatus: 'succeeded', creditedMsat: 15 * SAT });
    expect(budget.spent().totalMsat).toBe(25 * SAT);
    const returned = returnInvoices.at(-1)!;
    expect(await edgeJson(`/wallet/lookup?hash=${returned}`)).toMatchObject({ settled: true, amountMsat: 15 * SAT });
  });

  it('a client that hangs up stops the source', async () => {
    const before = ((await edgeJson('/runtime')) as { stopped: number }).stopped;
    const sessions = createSessions();
    const budget = createBudget({ totalSats: 100 });
    const response = await fetchWithL402('https://edge.example/endless', undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch: edgeFetch });
    const next = sseEvents(response.body!);
    expect(await next()).toEqual({ event: 'message', data: 'token 1' });
    await next.cancel();
    await expect.poll(async () => ((await edgeJson('/runtime')) as { stopped: number }).stopped, { timeout: 5_000 }).toBe(before + 1);
    await sessions.closeAll();
  });
});
