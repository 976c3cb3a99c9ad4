// What the tests of the session clients against the hosted demo share: the
// local server as the demo runs, the dev node's and the ledger's word on a
// session, and the dev wallet behind a door that counts what it is asked.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { decodeInvoice } from 'l402-paywall/lightning';
import { beforeAll, expect } from 'vitest';
import { useDevServer, type Settings, type TestServer } from './server.js';

export interface DemoServer {
  server: TestServer;
  /** Deploys the demo again with `settings` over the file's (a fresh context: its own ledger and rate limits). */
  deploy(settings?: Settings): void;
  /** What the dev node says of one of its invoices (GET /api/dev/receive/<hash>): whether it was paid, and how much. */
  received(paymentHash: string): Promise<{ paid: boolean; amountMsat: number }>;
  /** The session the service's ledger holds, with its return invoice's payment hash. */
  ledgerSession(sessionId: string): Promise<NonNullable<Awaited<ReturnType<TestServer['ctx']['sessions']['get']>>> & { returnHash: string }>;
}

/** The local server running the demo's api/ files, its stream unpaced, for a test file. */
export function useDemoServer(secret: string): DemoServer {
  const server = useDevServer(() => ({
    L402_SECRET: secret,
    DEMO_STREAM_INTERVAL_MS: '0',
    // Every test of a file comes from one address, and each top-up's 402 makes invoices: the file's, not one client's, rate.
    INVOICE_RATE_LIMIT_PER_MINUTE: '100',
  }));
  // As on Vercel without DATABASE_URL: no payment log. Locally an unset DATABASE_URL means PGlite, whose
  // opening (seconds of WebAssembly on a busy machine) would stall the server the clients are timed against.
  const deploy = (settings: Settings = {}) => server.redeploy({ ...server.config(settings), database: undefined });
  beforeAll(() => deploy());
  return {
    server,
    deploy,
    async received(paymentHash) {
      const answer = await fetch(`${server.url}/api/dev/receive/${paymentHash}`);
      expect(answer.status).toBe(200);
      return (await answer.json()) as { paid: boolean; amountMsat: number };
    },
    async ledgerSession(sessionId) {
      const record = await server.ctx.sessions.get(sessionId);
      expect(record).not.toBeNull();
      return { ...record!, returnHash: decodeInvoice(record!.returnInvoice).paymentHash };
    },
  };
}

export interface WatchedDevWallet {
  /** For a command's --dev. */
  url: string;
  /** The payment hash of each invoice the wallet was asked to pay, in order. */
  readonly paid: string[];
  /** How many invoices it was asked to make (return invoices). */
  readonly made: number;
  close(): Promise<void>;
}

/**
 * The dev wallet of the service at `serviceUrl` behind a door of its own:
 * each payment it is asked for (POST /api/dev/pay) and each invoice it is
 * asked to make (POST /api/dev/receive) recorded, then passed on.
 */
export async function watchedDevWallet(serviceUrl: string): Promise<WatchedDevWallet> {
  const seen = { paid: [] as string[], made: 0 };
  const door = createServer(
    getRequestListener(async (request) => {
      const { pathname } = new URL(request.url);
      const body = request.method === 'POST' ? await request.text() : undefined;
      if (pathname === '/api/dev/pay') seen.paid.push(decodeInvoice((JSON.parse(body!) as { invoice: string }).invoice).paymentHash);
      if (pathname === '/api/dev/receive' && body !== undefined) seen.made++;
      const answer = await fetch(`${serviceUrl}${pathname}`, { method: request.method, headers: { 'content-type': 'application/json' }, body });
      return new Response(await answer.text(), { status: answer.status, headers: { 'content-type': 'application/json' } });
    }),
  );
  await new Promise<void>((resolve) => door.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(door.address() as AddressInfo).port}`,
    get paid() {
      return seen.paid;
    },
    get made() {
      return seen.made;
    },
    close: () => new Promise<void>((resolve) => door.close(() => resolve())),
  };
}
