// What follows a paid request's handler is one step (src/adapters/serve.ts),
// and every adapter must show it the same: withL402 around a Web handler,
// l402Middleware in a real Express 5 app and in a plain node:http server, and
// the Hono middleware in a real Hono app. Each serves the same routes: /paid,
// and /flaky, which answers as `?fail=` asks (throw, 500, 400; the route, the
// URL path, stays the same). The backend is the embedded dev node, whose
// wallet pays the invoices. The packed tarball is put through the same in
// tests/package/packed.test.ts.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Hono } from 'hono';
import { Challenge as MppChallenge, Credential as MppCredential, Receipt as MppReceipt } from 'mppx';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { getPaidRequest, getPayment, withL402, type L402Options, type Payment } from 'l402-paywall';
import { createDevNode, type DevNode } from 'l402-paywall/backends';
import { l402Middleware } from 'l402-paywall/express';
import { EVENT_TYPES, type L402Event } from 'l402-paywall/events';
import { l402, type L402Variables } from 'l402-paywall/hono';

const SECRET = 'adapters-test-secret-0123456789abcdef0123456789';

interface OnPaidCall {
  payment: Payment;
  path: string;
  status: number;
  /** getPaidRequest on the request onPaid was handed gives the same payment. */
  getterAgrees: boolean;
}

/** What each adapter's app gives the contract: a way to ask it, and what onPaid and onError heard. */
interface App {
  ask(path: string, authorization?: string): Promise<Response>;
  onPaid: OnPaidCall[];
  onError: ReturnType<typeof vi.fn>;
  /** The audit events onEvent was handed. */
  events: L402Event[];
  /** What the handlers saw as the paid request (by the adapter's own way of handing it over). */
  seen: Payment[];
  close(): Promise<void>;
}

type Fail = 'throw' | '500' | '400' | 'proxy' | null;

/** Set by a test: the upstream a `?fail=proxy` handler answers with, as fetch() gives it (immutable headers). */
let upstream = '';

/** The answer every handler gives for `fail`; 'proxy' hands back a fetch() answer whose headers cannot be changed. */
async function flakyAnswer(fail: Fail): Promise<Response> {
  if (fail === 'throw') throw new Error('the handler failed');
  if (fail === '500') return Response.json({ error: 'failed' }, { status: 500 });
  if (fail === '400') return Response.json({ error: 'bad input' }, { status: 400 });
  if (fail === 'proxy') return fetch(upstream);
  return Response.json({ answer: 42 });
}

function recorder(node: DevNode): { options: L402Options; onPaid: OnPaidCall[]; onError: ReturnType<typeof vi.fn>; events: L402Event[] } {
  const onPaid: OnPaidCall[] = [];
  const onError = vi.fn();
  const events: L402Event[] = [];
  const options: L402Options = {
    priceSats: 3,
    provider: node,
    secret: SECRET,
    onError,
    onEvent: (event) => void events.push(event),
    onPaid: (payment, request, response) => {
      onPaid.push({ payment, path: new URL(request.url).pathname, status: response.status, getterAgrees: getPaidRequest(request) === payment });
      if (new URL(request.url).searchParams.has('onpaid-throws')) throw new Error('onPaid broke');
    },
  };
  return { options, onPaid, onError, events };
}

const failOf = (url: string) => new URL(url, 'http://x').searchParams.get('fail') as Fail;

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

function overHttp(base: string): App['ask'] {
  return (path, authorization) => fetch(base + path, authorization ? { headers: { authorization } } : {});
}

async function fetchStyle(node: DevNode): Promise<App> {
  const { options, onPaid, onError, events } = recorder(node);
  const seen: Payment[] = [];
  const handler = withL402(async (request: Request) => {
    seen.push(getPaidRequest(request)!);
    return flakyAnswer(failOf(request.url));
  }, options);
  return {
    // withL402 lets a handler's throw through (after giving the use back): the framework around it answers 500.
    ask: (path, authorization) =>
      handler(new Request(`http://shop.example${path}`, authorization ? { headers: { authorization } } : {})).catch((error: Error) =>
        Response.json({ thrown: error.message }, { status: 500 }),
      ),
    onPaid,
    onError,
    events,
    seen,
    close: async () => {},
  };
}

/** Sends a Web Response through Node's response (Express and node:http handlers). */
async function sendWeb(res: ServerResponse, answer: Response): Promise<void> {
  res.statusCode = answer.status;
  for (const [name, value] of answer.headers) res.setHeader(name, value);
  res.end(Buffer.from(await answer.arrayBuffer()));
}

async function expressApp(node: DevNode): Promise<App> {
  const { options, onPaid, onError, events } = recorder(node);
  const seen: Payment[] = [];
  const app = express();
  const paywall = l402Middleware(options);
  app.get(['/paid', '/flaky'], paywall, async (req, res, next) => {
    seen.push((req as { l402?: Payment }).l402!);
    try {
      await sendWeb(res, await flakyAnswer(failOf(req.originalUrl)));
    } catch (error) {
      next(error);
    }
  });
  app.use((_error: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
    res.status(500).json({ error: 'internal error' });
  });
  const server = createServer(app);
  const base = await listen(server);
  return { ask: overHttp(base), onPaid, onError, events, seen, close: () => closeServer(server) };
}

/** l402Middleware as plain Connect-style middleware, its `next` the handler; a throw escapes from `next` itself. */
async function nodeHttpApp(node: DevNode): Promise<App> {
  const { options, onPaid, onError, events } = recorder(node);
  const seen: Payment[] = [];
  const paywall = l402Middleware(options);
  const server = createServer((req: IncomingMessage & { l402?: Payment }, res) => {
    paywall(req, res, (error) => {
      if (error) {
        res.statusCode = 500;
        res.end();
        return;
      }
      seen.push(req.l402!);
      const fail = failOf(req.url!);
      if (fail === 'throw') throw new Error('the handler failed');
      flakyAnswer(fail).then(
        (answer) => sendWeb(res, answer),
        () => {
          res.statusCode = 500;
          res.end();
        },
      );
    });
  });
  const base = await listen(server);
  return { ask: overHttp(base), onPaid, onError, events, seen, close: () => closeServer(server) };
}

async function honoApp(node: DevNode): Promise<App> {
  const { options, onPaid, onError, events } = recorder(node);
  const seen: Payment[] = [];
  const app = new Hono<{ Variables: L402Variables }>();
  app.onError((_error, c) => c.json({ error: 'internal error' }, 500));
  const paywall = l402(options);
  for (const path of ['/paid', '/flaky']) {
    app.get(path, paywall, async (c) => {
      // The same payment both ways: the context's variable and the getter on the Web Request.
      expect(getPaidRequest(c.req.raw)).toBe(c.get('l402'));
      seen.push(c.get('l402'));
      return flakyAnswer(failOf(c.req.url));
    });
  }
  return {
    ask: async (path, authorization) => app.request(`http://shop.example${path}`, authorization ? { headers: { authorization } } : {}),
    onPaid,
    onError,
    events,
    seen,
    close: async () => {},
  };
}

/** Each adapter, and whether it holds the handler's Response (Node's adapters see an answer Node writes itself). */
const ADAPTERS: [string, (node: DevNode) => Promise<App>, { holdsResponse: boolean }][] = [
  ['withL402 (a Web handler)', fetchStyle, { holdsResponse: true }],
  ['l402Middleware in Express', expressApp, { holdsResponse: false }],
  ['l402Middleware on node:http', nodeHttpApp, { holdsResponse: false }],
  ['the Hono middleware', honoApp, { holdsResponse: true }],
];

let upstreamServer: Server;
beforeAll(async () => {
  upstreamServer = createServer((_req, res) => {
    res.setHeader('Cache-Control', 'max-age=60');
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify({ proxied: true }));
  });
  upstream = await listen(upstreamServer);
});
afterAll(() => closeServer(upstreamServer));

for (const [name, make, { holdsResponse }] of ADAPTERS) {
  describe(`after the handler, through ${name}`, () => {
    const node = createDevNode();
    let app: App;
    beforeAll(async () => {
      app = await make(node);
    });
    afterAll(() => app.close());

    async function buy(path: string, scheme: 'L402' | 'Payment' = 'L402'): Promise<{ authorization: string; paymentHash: string }> {
      const challenge = await app.ask(path);
      expect(challenge.status).toBe(402);
      expect(challenge.headers.get('cache-control')).toBe('no-store');
      const body = (await challenge.clone().json()) as { macaroon: string; invoice: string; paymentHash: string };
      const { preimage } = await node.pay(body.invoice);
      if (scheme === 'L402') return { authorization: `L402 ${body.macaroon}:${preimage}`, paymentHash: body.paymentHash };
      const mpp = MppChallenge.fromResponse(challenge);
      return { authorization: MppCredential.serialize(MppCredential.from({ challenge: mpp, payload: { preimage } })), paymentHash: body.paymentHash };
    }

    const callsFor = (paymentHash: string) => app.onPaid.filter((call) => call.payment.paymentHash === paymentHash);

    it('a paid answer: no-store, the handler sees the payment, onPaid runs once with it, the request and the answer', async () => {
      const { authorization, paymentHash } = await buy('/paid');
      const paid = await app.ask('/paid', authorization);
      expect(paid.status).toBe(200);
      expect(paid.headers.get('cache-control')).toBe('no-store');
      expect(paid.headers.get('payment-receipt')).toBeNull();
      expect(await paid.json()).toEqual({ answer: 42 });
      expect(app.seen.at(-1)).toMatchObject({ paymentHash, route: '/paid', amountMsat: 3000, scheme: 'L402' });
      await vi.waitFor(() => expect(callsFor(paymentHash)).toHaveLength(1));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(callsFor(paymentHash)).toEqual([
        { payment: expect.objectContaining({ paymentHash, route: '/paid' }), path: '/paid', status: 200, getterAgrees: true },
      ]);
      expect((await app.ask('/paid', authorization)).status).toBe(402);
    });

    for (const fail of ['throw', '500'] as const) {
      it(`a handler that fails (${fail === 'throw' ? 'throws' : 'answers 500'}) gives the use back: the same credential is served once more; onPaid only for the answer that went out`, async () => {
        const { authorization, paymentHash } = await buy('/flaky');
        const failed = await app.ask(`/flaky?fail=${fail}`, authorization);
        expect(failed.status).toBe(500);
        await failed.body?.cancel();
        // Node gives the use back on the answer's 'finish', which may come a moment after the client has it.
        await vi.waitFor(async () => {
          const retry = await app.ask('/flaky', authorization);
          expect(retry.status).toBe(200);
        });
        expect((await app.ask('/flaky', authorization)).status).toBe(402);
        await vi.waitFor(() => expect(callsFor(paymentHash)).toHaveLength(1));
        expect(callsFor(paymentHash)[0]).toMatchObject({ path: '/flaky', status: 200 });
      });
    }

    it("a Payment credential's answer carries its receipt below 400 and not on a 400; both are paid answers for onPaid", async () => {
      const good = await buy('/flaky', 'Payment');
      const served = await app.ask('/flaky', good.authorization);
      expect(served.status).toBe(200);
      expect(MppReceipt.fromResponse(served)).toMatchObject({ method: 'lightning', status: 'success', reference: good.paymentHash });
      expect(served.headers.get('cache-control')).toBe('no-store');

      const refused = await buy('/flaky', 'Payment');
      const badInput = await app.ask('/flaky?fail=400', refused.authorization);
      expect(badInput.status).toBe(400);
      expect(badInput.headers.get('payment-receipt')).toBeNull();
      expect(badInput.headers.get('cache-control')).toBe('no-store');
      await vi.waitFor(() => expect(callsFor(refused.paymentHash)).toHaveLength(1));
      expect(callsFor(refused.paymentHash)[0]).toMatchObject({ status: 400 });
      expect(callsFor(good.paymentHash)).toHaveLength(1);
      // Not given back: a 400 is an answer.
      expect((await app.ask('/flaky', refused.authorization)).status).toBe(402);
    });

    // Node's adapters set the paid headers before the handler, which then writes what it likes.
    if (holdsResponse)
      it("an answer whose headers cannot be changed (fetch()'s, with its own Cache-Control) still goes out no-store, with its receipt", async () => {
        const { authorization, paymentHash } = await buy('/flaky', 'Payment');
        const proxied = await app.ask('/flaky?fail=proxy', authorization);
        expect(proxied.status).toBe(200);
        expect(await proxied.json()).toEqual({ proxied: true });
        expect(proxied.headers.get('cache-control')).toBe('no-store');
        expect(MppReceipt.fromResponse(proxied)).toMatchObject({ reference: paymentHash });
      });

    it('the audit events: the challenge issued, and the paid answer served with its status; none for a failed one', async () => {
      const { authorization, paymentHash } = await buy('/flaky');
      const failed = await app.ask('/flaky?fail=500', authorization);
      expect(failed.status).toBe(500);
      await vi.waitFor(async () => expect((await app.ask('/flaky?fail=400', authorization)).status).toBe(400));
      const about = (type: string) => app.events.filter((event) => event.type === type && event.data.payment?.paymentHash === paymentHash);
      await vi.waitFor(() => expect(about(EVENT_TYPES.serverRequestServed)).toHaveLength(1));
      expect(about(EVENT_TYPES.challengeIssued)).toHaveLength(1);
      const [served] = about(EVENT_TYPES.serverRequestServed);
      expect(served).toMatchObject({ subject: '/flaky', data: { scheme: 'L402', payment: { amountMsat: 3000 }, context: { method: 'GET', status: 400 } } });
    });

    it('onPaid is not awaited and its throw goes to onError, the answer unharmed', async () => {
      const { authorization, paymentHash } = await buy('/paid');
      const paid = await app.ask('/paid?onpaid-throws', authorization);
      expect(paid.status).toBe(200);
      await vi.waitFor(() => expect(app.onError).toHaveBeenCalledWith(expect.objectContaining({ message: 'onPaid broke' }), 'onPaid failed'));
      expect(callsFor(paymentHash)).toHaveLength(1);
    });
  });
}

describe('getPayment', () => {
  it('is getPaidRequest by its former name', () => {
    expect(getPayment).toBe(getPaidRequest);
    expect(getPaidRequest(new Request('http://shop.example/'))).toBeUndefined();
  });
});
