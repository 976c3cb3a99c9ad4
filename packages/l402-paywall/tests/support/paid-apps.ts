// Paid apps that fetchWithL402 must pay on first try: an Express app and a
// Hono app using the library, and a stand-in for servers we do not run here
// (Aperture-style `LSAT macaroon="…", invoice="…"` challenges, scripted
// answers). All sell with an in-process dev node (real BOLT11 on regtest);
// `payer` is a wallet that pays through it and records what it was asked.
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import express from 'express';
import { Hono } from 'hono';
import { serve } from '@hono/node-server';
import { withL402, type L402Options } from 'l402-paywall';
import { l402Middleware } from 'l402-paywall/express';
import { createDevNode, type DevNode } from 'l402-paywall/backends';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { Wallet } from 'l402-paywall/client';

export const APP_SECRET = 'client-test-secret-0123456789abcdef0123456789abcdef';

export interface RecordingWallet extends Wallet {
  invoices: string[];
  /** Set to make the next payments fail (the wallet surely did not pay). */
  failing: boolean;
  /** Answer this preimage instead of the real one. */
  lyingPreimage?: string;
}

/** A test file's server on a dev node of its own, and the wallet that pays it, as the file's hooks keep them. */
export interface RecordedServer<S> {
  readonly node: DevNode;
  /** Started before the file's tests, closed after them. */
  server: S;
  /** A fresh recording wallet on the same node before each test. */
  wallet: RecordingWallet;
}

/** The file's server, started once with `start` and its records cleared with `reset` before each test, and a fresh recording wallet per test. */
export function useRecordedServer<S extends { close(): Promise<void> }>(start: (node: DevNode) => Promise<S>, reset: (server: S) => void): RecordedServer<S> {
  const node = createDevNode();
  const state = { node } as RecordedServer<S>;
  beforeAll(async () => {
    state.server = await start(node);
  });
  afterAll(() => state.server?.close());
  beforeEach(() => {
    state.wallet = recordingWallet(node);
    reset(state.server);
  });
  return state;
}

/** A wallet paying the dev node's invoices, recording every invoice it is asked to pay. */
export function recordingWallet(node: DevNode): RecordingWallet {
  const wallet: RecordingWallet = {
    network: 'regtest',
    invoices: [],
    failing: false,
    async payInvoice({ invoice }) {
      wallet.invoices.push(invoice);
      // Let racing calls pile up while the payment is "in flight".
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (wallet.failing) throw new Error('no route (test)');
      const paid = await node.pay(invoice);
      return { preimage: wallet.lyingPreimage ?? paid.preimage };
    },
  };
  return wallet;
}

export interface Listening {
  url: string;
  close(): Promise<void>;
}

function listening(server: Server): Promise<Listening> {
  return new Promise((resolve) => {
    const ready = () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    };
    if (server.listening) ready();
    else server.once('listening', ready);
  });
}

export function paywallOptions(node: DevNode, extra: Partial<L402Options> = {}): L402Options {
  return { priceSats: 1, provider: node, secret: APP_SECRET, onError: () => {}, ...extra };
}

/** Express 5: GET /paid (2 sats), POST /echo (1 sat, answers the JSON body it got). */
export async function startExpressApp(node: DevNode): Promise<Listening & { served: number }> {
  const app = express();
  const state = { served: 0 };
  app.get('/paid', l402Middleware(paywallOptions(node, { priceSats: 2 })), (_req, res) => {
    state.served++;
    res.json({ app: 'express', ok: true });
  });
  app.post('/echo', l402Middleware(paywallOptions(node)), express.json(), (req, res) => {
    state.served++;
    res.json({ app: 'express', echo: req.body as unknown });
  });
  const server = app.listen(0, '127.0.0.1');
  const up = await listening(server);
  return {
    ...up,
    get served() {
      return state.served;
    },
  };
}

/** What /flaky's handler answers next, in order (then 200), and how many paid requests reached it. */
export interface FlakyScript {
  failures: { status: number; retryAfter?: string }[];
  reached: number;
}

/** Hono on Node: /paid (1 sat), /multi (1 sat buys 3 requests), /dear (50 sats), /flaky (1 sat; its handler answers `flaky.failures` first). */
export async function startHonoApp(node: DevNode): Promise<Listening & { flaky: FlakyScript }> {
  const app = new Hono();
  const answer = (request: Request) => Response.json({ app: 'hono', path: new URL(request.url).pathname });
  const flaky: FlakyScript = { failures: [], reached: 0 };
  const paid = withL402(answer, paywallOptions(node));
  const multi = withL402(answer, paywallOptions(node, { uses: 3 }));
  const dear = withL402(answer, paywallOptions(node, { priceSats: 50 }));
  const flakyRoute = withL402((request) => {
    flaky.reached++;
    const failure = flaky.failures.shift();
    if (!failure) return answer(request);
    return Response.json(
      { error: 'not now', code: 'UPSTREAM_DOWN' },
      { status: failure.status, headers: failure.retryAfter ? { 'Retry-After': failure.retryAfter } : {} },
    );
  }, paywallOptions(node));
  app.get('/paid', (c) => paid(c.req.raw));
  app.get('/multi', (c) => multi(c.req.raw));
  app.get('/dear', (c) => dear(c.req.raw));
  app.get('/flaky', (c) => flakyRoute(c.req.raw));
  return { ...(await listening(serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }) as Server)), flaky };
}

export interface ScriptedAnswer {
  status: number;
  headers?: [string, string][];
  body?: string;
}

export interface StandIn extends Listening {
  requests: IncomingMessage[];
  /** How the next requests are answered; set by each test. */
  respond: (request: IncomingMessage) => ScriptedAnswer | Promise<ScriptedAnswer>;
}

/** A plain Node server whose answers each test scripts; every request is recorded. */
export async function startStandIn(): Promise<StandIn> {
  const requests: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    requests.push(req);
    req.resume();
    req.on('end', async () => {
      const answer = await standIn.respond(req);
      const grouped = new Map<string, string[]>();
      for (const [k, v] of answer.headers ?? []) grouped.set(k, [...(grouped.get(k) ?? []), v]);
      res.statusCode = answer.status;
      for (const [k, v] of grouped) res.setHeader(k, v);
      res.end(answer.body ?? '');
    });
  });
  server.listen(0, '127.0.0.1');
  const standIn: StandIn = { ...(await listening(server)), requests, respond: () => ({ status: 200, body: 'free' }) };
  return standIn;
}

/**
 * Aperture's behaviour: `LSAT macaroon="…", invoice="…"` and the same in L402
 * as two WWW-Authenticate fields, an opaque macaroon (standard base64), and a
 * credential that stays valid (Aperture tokens are not single-use).
 */
export function apertureStandIn(node: DevNode, priceSats = 3) {
  const macaroons = new Map<string, string>(); // macaroon -> payment hash
  let served = 0;
  return {
    get served() {
      return served;
    },
    async respond(req: IncomingMessage): Promise<ScriptedAnswer> {
      const credential = /^(?:LSAT|L402) ([A-Za-z0-9+/=]+):([0-9a-f]{64})$/i.exec(req.headers.authorization ?? '');
      if (credential) {
        const hash = macaroons.get(credential[1]!);
        if (hash && createHash('sha256').update(Buffer.from(credential[2]!, 'hex')).digest('hex') === hash) {
          served++;
          return { status: 200, headers: [['content-type', 'text/plain']], body: 'aperture served' };
        }
      }
      const invoice = await node.createInvoice({ amountMsat: priceSats * 1000, memo: 'aperture stand-in' });
      const macaroon = randomBytes(40).toString('base64'); // +, / and = padding, as real macaroons have
      macaroons.set(macaroon, invoice.paymentHash);
      return {
        status: 402,
        headers: [
          ['WWW-Authenticate', `LSAT macaroon="${macaroon}", invoice="${invoice.invoice}"`],
          ['WWW-Authenticate', `L402 macaroon="${macaroon}", invoice="${invoice.invoice}"`],
        ],
        body: 'payment required',
      };
    },
  };
}
