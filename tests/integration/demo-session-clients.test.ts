// The three clients that use prepaid sessions, against the hosted demo itself
// (the local server runs the same api/ files Vercel runs), each within a
// 100-sat budget and paying with the service's own dev wallet:
// fetchWithL402 makes 50 calls to GET /api/demo/btc-price through one session
// (a 20-sat deposit, two 20-sat top-ups) and closes it with a 10-sat refund;
// the command line (the real bin, one request a run) streams 50 chunks of
// GET /api/demo/stream through one session it tops up and closes; the MCP
// server (the l402-mcp package's bin, driven by the MCP SDK's client) serves
// 50 tool calls from one session and refunds it as it stops. Each says what
// was spent, and the service's ledger and the dev node agree to the sat.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { decodeInvoice } from 'l402-paywall/lightning';
import { createBudget, createSessions, devWallet, fetchWithL402, getPaymentReceipt, type Wallet } from 'l402-paywall/client';
import { beforeAll, describe, expect, it } from 'vitest';
import { L402_MCP_BIN, runBin, walletFreeEnv } from '../support/bins.js';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({
  L402_SECRET: 'demo-session-clients-secret-0123456789abcdef012345',
  DEMO_STREAM_INTERVAL_MS: '0',
  // Every test here comes from one address, and each top-up's 402 makes invoices: the file's, not one client's, rate.
  INVOICE_RATE_LIMIT_PER_MINUTE: '100',
}));
// As on Vercel without DATABASE_URL: no payment log. Locally an unset DATABASE_URL means PGlite, whose
// opening (seconds of WebAssembly on a busy machine) would stall the server the clients are timed against.
const deploy = (settings: Record<string, string> = {}) => server.redeploy({ ...server.config(settings), database: undefined });
beforeAll(() => deploy());
const SAT = 1000;
const PRICE = '/api/demo/btc-price';

/** What the dev node says of one of its invoices (GET /api/dev/receive/<hash>): whether it was paid, and how much. */
async function received(paymentHash: string): Promise<{ paid: boolean; amountMsat: number }> {
  const answer = await fetch(`${server.url}/api/dev/receive/${paymentHash}`);
  expect(answer.status).toBe(200);
  return (await answer.json()) as { paid: boolean; amountMsat: number };
}

/** The session the service's ledger holds, with its return invoice's payment hash. */
async function ledgerSession(sessionId: string) {
  const record = await server.ctx.sessions.get(sessionId);
  expect(record).not.toBeNull();
  return { ...record!, returnHash: decodeInvoice(record!.returnInvoice).paymentHash };
}

/**
 * The service's dev wallet behind a door of its own, for a command's --dev:
 * each payment it is asked for (POST /api/dev/pay) and each invoice it is
 * asked to make (POST /api/dev/receive) recorded, then passed on.
 */
async function watchedDevWallet(): Promise<{ url: string; paid: string[]; made: number; close(): Promise<void> }> {
  const seen = { paid: [] as string[], made: 0 };
  const door = createServer(
    getRequestListener(async (request) => {
      const { pathname } = new URL(request.url);
      const body = request.method === 'POST' ? await request.text() : undefined;
      if (pathname === '/api/dev/pay') seen.paid.push(decodeInvoice((JSON.parse(body!) as { invoice: string }).invoice).paymentHash);
      if (pathname === '/api/dev/receive' && body !== undefined) seen.made++;
      const answer = await fetch(`${server.url}${pathname}`, { method: request.method, headers: { 'content-type': 'application/json' }, body });
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

describe('fetchWithL402 on the demo', () => {
  it('50 calls to GET /api/demo/btc-price within a 100-sat budget: one session, a deposit and two top-ups, closed with a 10-sat refund', async () => {
    const dev = devWallet({ serviceUrl: server.url });
    const paid: string[] = [];
    const returnHashes: string[] = [];
    const wallet: Wallet = {
      network: dev.network,
      async payInvoice(args) {
        paid.push(decodeInvoice(args.invoice).paymentHash);
        return dev.payInvoice(args);
      },
      async createInvoice(request) {
        const made = await dev.createInvoice!(request);
        returnHashes.push(made.paymentHash);
        return made;
      },
    };
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions({ maxDepositSats: 20 });
    try {
      const deposits: string[] = [];
      for (let call = 1; call <= 50; call++) {
        const response = await fetchWithL402(`${server.url}${PRICE}`, undefined, { wallet, maxPriceSats: 1, budget, sessions, tokens: false });
        expect(response.status, `call ${call}`).toBe(200);
        const price = (await response.json()) as { usd: number; source: string };
        expect(price.usd, `call ${call}`).toBeGreaterThan(0);
        const receipt = getPaymentReceipt(response);
        // Only a deposit is ever paid: no charge (a receipt without a session would be one).
        if (receipt) deposits.push(`${call}:${receipt.session?.action}:${receipt.amountMsat / SAT}`);
      }
      expect(deposits).toEqual(['1:open:20', '21:topUp:20', '41:topUp:20']);
      expect(paid).toHaveLength(3);
      expect(returnHashes).toHaveLength(1);
      expect(budget.spent().totalMsat).toBe(60 * SAT);
      const [held] = sessions.list();
      expect(sessions.list()).toHaveLength(1);
      expect(held).toMatchObject({ depositedMsat: 60 * SAT, unitPriceSats: 1 });

      const closed = await sessions.closeAll();
      expect(closed).toEqual([
        expect.objectContaining({ sessionId: held!.sessionId, status: 200, refundSats: 10, refundStatus: 'succeeded', creditedMsat: 10 * SAT }),
      ]);
      expect(budget.spent().totalMsat).toBe(50 * SAT);
      expect(budget.remainingMsat()).toBe(50 * SAT);

      const ledger = await ledgerSession(held!.sessionId);
      expect(ledger).toMatchObject({
        status: 'closed',
        closedBecause: 'client',
        paidMsat: 60 * SAT,
        spentMsat: 50 * SAT,
        refund: { state: 'paid', amountMsat: 10 * SAT },
      });
      expect(ledger.returnHash).toBe(returnHashes[0]);
      expect(await received(returnHashes[0]!)).toMatchObject({ paid: true, amountMsat: 10 * SAT });
      // The deposit is the session: its payment hash is the session's id.
      expect(paid[0]).toBe(held!.sessionId);
    } finally {
      await sessions.closeAll();
    }
  });
});

describe('the command line on the demo: --session', () => {
  it('one run streams 50 chunks of GET /api/demo/stream through one session within --budget-sats 100: two top-ups, closed with a 10-sat refund, 50 sats spent in all', async () => {
    const wallet = await watchedDevWallet();
    try {
      const run = await runBin([`${server.url}/api/demo/stream?chunks=50`, '--dev', wallet.url, '--session', '--max-sats', '1', '--budget-sats', '100']);
      expect(run.stderr).toMatch(/paid 20 sats .* scheme Payment/);
      expect(run.code).toBe(0);
      const chunks = run.stdout
        .split('\n\n')
        .filter((event) => event.startsWith('data: {'))
        .map((event) => (JSON.parse(event.slice('data: '.length)) as { chunk: number }).chunk);
      expect(chunks).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(run.stdout.match(/event: payment-need-topup/g)).toHaveLength(2);
      expect(run.stdout.trimEnd().endsWith('data: [DONE]')).toBe(true);
      const closed = /session ([0-9a-f]{64}) closed, refund 10 sats \(succeeded\); spent in all 50 sats\n/.exec(run.stderr);
      expect(closed, run.stderr).not.toBeNull();
      const sessionId = closed![1]!;
      // The deposit and two top-ups, and one return invoice: nothing else was paid.
      expect(wallet.paid).toHaveLength(3);
      expect(wallet.paid[0]).toBe(sessionId);
      expect(wallet.made).toBe(1);
      const ledger = await ledgerSession(sessionId);
      expect(ledger).toMatchObject({ status: 'closed', paidMsat: 60 * SAT, spentMsat: 50 * SAT, refund: { state: 'paid', amountMsat: 10 * SAT } });
      expect(await received(ledger.returnHash)).toMatchObject({ paid: true, amountMsat: 10 * SAT });
    } finally {
      await wallet.close();
    }
  });

  it('a top-up past --budget-sats is not paid: the stream stops at once after the 40 chunks paid for, exit 3, the session closed, 40 sats spent in all', async () => {
    const wallet = await watchedDevWallet();
    try {
      // The demo holds a stream a minute for its top-up: the command does not wait for that (runBin gives it 30 s).
      const run = await runBin([`${server.url}/api/demo/stream?chunks=50`, '--dev', wallet.url, '--session', '--max-sats', '1', '--budget-sats', '50']);
      expect(run.stderr).toContain(
        'the stream stopped at a top-up: Not paid: 20 sats would take the budget past its 50 sats (40 spent or in flight) [BUDGET_EXCEEDED]',
      );
      expect(run.code).toBe(3);
      expect(run.stdout).toContain('data: {"chunk":40,');
      expect(run.stdout).not.toContain('"chunk":41,');
      const closed = /session ([0-9a-f]{64}) closed, refund 0 sats \(skipped\); spent in all 40 sats\n/.exec(run.stderr);
      expect(closed, run.stderr).not.toBeNull();
      expect(wallet.paid).toHaveLength(2);
      expect(await server.ctx.sessions.get(closed![1]!)).toMatchObject({ status: 'closed', paidMsat: 40 * SAT, spentMsat: 40 * SAT });
    } finally {
      await wallet.close();
    }
  });

  it('a deposit above --max-deposit-sats or past --budget-sats is refused unpaid: exit 3, nothing on stdout', async () => {
    const wallet = await watchedDevWallet();
    try {
      const stream = `${server.url}/api/demo/stream?chunks=5`;
      const dear = await runBin([stream, '--dev', wallet.url, '--session', '--max-sats', '1', '--max-deposit-sats', '19']);
      expect(dear).toMatchObject({ code: 3, stdout: '' });
      expect(dear.stderr).toContain('the session deposit asks 20 sats, above the maximum of 19 [PRICE_ABOVE_MAXIMUM]');
      const poor = await runBin([stream, '--dev', wallet.url, '--session', '--max-sats', '1', '--budget-sats', '19']);
      expect(poor).toMatchObject({ code: 3, stdout: '' });
      expect(poor.stderr).toContain('[BUDGET_EXCEEDED]');
      expect(wallet.paid).toEqual([]);
    } finally {
      await wallet.close();
    }
  });

  it('with the default budget (one deposit), a top-up the demo will not offer (its invoice rate limit reached) stops the stream at once, saying so: exit 1', async () => {
    // One invoice a minute from this address: the deposit's 402 takes it, and the top-up's 402 is a 429.
    // No --budget-sats: with --session its default lets one deposit through (--max-deposit-sats, 20 x --max-sats).
    deploy({ INVOICE_RATE_LIMIT_PER_MINUTE: '1' });
    try {
      const run = await runBin([`${server.url}/api/demo/stream?chunks=30`, '--dev', server.url, '--session', '--max-sats', '1']);
      expect(run.stderr).toContain('the stream stopped at a top-up: no session deposit offered to top up with (HTTP 429)\n');
      expect(run.code).toBe(1);
      expect(run.stdout).toContain('data: {"chunk":20,');
      expect(run.stdout).not.toContain('"chunk":21,');
      expect(run.stderr).toMatch(/session [0-9a-f]{64} closed, refund 0 sats \(skipped\); spent in all 20 sats\n/);
    } finally {
      deploy();
    }
  });
});

/** The l402-mcp package's bin, started by the MCP SDK's client over stdio (as an agent's host starts it), its stderr kept. */
async function startMcp(args: string[]) {
  const client = new Client({ name: 'demo-session-agent', version: '1.0.0' });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ['--import', 'tsx', L402_MCP_BIN, ...args],
    env: walletFreeEnv(),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  await client.connect(transport);
  const call = async (url: string): Promise<Record<string, unknown> & { isError: boolean }> => {
    const result = (await client.callTool({ name: 'call_paid_api', arguments: { url } })) as { isError?: boolean; content: { text: string }[] };
    return { isError: result.isError === true, ...(JSON.parse(result.content[0]!.text) as Record<string, unknown>) };
  };
  return { client, transport, call, stderr: () => stderr };
}

const sessionOf = (result: Record<string, unknown>) => result.session as { action: string; session_id: string } | undefined;

describe('the MCP server (l402-mcp) on the demo: --sessions', () => {
  it('50 call_paid_api calls share one session (a deposit, two top-ups); stopped, it closes the session with a 10-sat refund and says 50 sats spent', async () => {
    const wallet = await watchedDevWallet();
    const mcp = await startMcp(['--dev', wallet.url, '--directory', server.url, '--sessions', '--max-sats', '1', '--budget-sats', '100']);
    try {
      const results: Record<string, unknown>[] = [];
      for (let call = 1; call <= 50; call++) {
        const result = await mcp.call(`${server.url}${PRICE}`);
        expect(result.isError, `call ${call}: ${JSON.stringify(result)}`).toBe(false);
        results.push(result);
      }
      expect(results.every((r) => r.status === 200 && (JSON.parse(r.body as string) as { usd: number }).usd > 0)).toBe(true);
      const deposits = results.flatMap((r, i) => (r.sats_paid === 0 ? [] : [`${i + 1}:${sessionOf(r)?.action}:${r.sats_paid}`]));
      expect(deposits).toEqual(['1:open:20', '21:topUp:20', '41:topUp:20']);
      const sessionIds = new Set(results.flatMap((r) => sessionOf(r)?.session_id ?? []));
      expect(sessionIds.size).toBe(1);
      const [sessionId] = [...sessionIds];
      // While it is open, the deposits count as spent: that is what left the wallet.
      expect(results.at(-1)).toMatchObject({ session_spent_sats: 60, session_budget_left_sats: 40 });
      expect(wallet.paid).toHaveLength(3);
      expect(wallet.made).toBe(1);

      await mcp.client.close();
      expect(mcp.stderr()).toContain(`l402-mcp: session ${sessionId} at ${server.url} closed: refund 10 sats (succeeded)\nl402-mcp: spent in all 50 sats\n`);
      const ledger = await ledgerSession(sessionId!);
      expect(ledger).toMatchObject({ status: 'closed', paidMsat: 60 * SAT, spentMsat: 50 * SAT, refund: { state: 'paid', amountMsat: 10 * SAT } });
      expect(await received(ledger.returnHash)).toMatchObject({ paid: true, amountMsat: 10 * SAT });
    } finally {
      await mcp.client.close().catch(() => {});
      await wallet.close();
    }
  });

  it('a stream whose top-up is past the budget stops at once with BUDGET_EXCEEDED; stopped by SIGTERM, the server still closes both sessions and refunds them', async () => {
    const wallet = await watchedDevWallet();
    const mcp = await startMcp(['--dev', wallet.url, '--directory', server.url, '--sessions', '--max-sats', '1', '--budget-sats', '50']);
    try {
      for (let call = 0; call < 3; call++) expect(await mcp.call(`${server.url}${PRICE}`)).toMatchObject({ isError: false, status: 200 });
      // A session of its own (another route): 20 chunks on its deposit, then a top-up that would take the budget to 60.
      const stream = await mcp.call(`${server.url}/api/demo/stream?chunks=50`);
      expect(stream).toMatchObject({
        isError: true,
        code: 'BUDGET_EXCEEDED',
        refused: true,
        status: 200,
        sats_paid: 20,
        session_spent_sats: 40,
        session_budget_left_sats: 10,
      });
      expect(stream.error).toMatch(/^The stream stopped at a top-up: Not paid: 20 sats would take the budget past its 50 sats/);
      expect(wallet.paid).toHaveLength(2);

      // As a host that stops its server with a signal rather than by closing its stdin.
      process.kill(mcp.transport.pid!, 'SIGTERM');
      for (let i = 0; i < 200 && !/spent in all/.test(mcp.stderr()); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(mcp.stderr()).toMatch(/closed: refund 17 sats \(succeeded\)\n/);
      expect(mcp.stderr()).toMatch(/closed: refund 0 sats \(skipped\)\n/);
      expect(mcp.stderr()).toContain('l402-mcp: spent in all 23 sats\n');
      const ids = [...mcp.stderr().matchAll(/session ([0-9a-f]{64}) at /g)].map((m) => m[1]!);
      expect(ids).toHaveLength(2);
      const records = await Promise.all(ids.map((id) => ledgerSession(id)));
      expect(records.map((r) => [r.status, r.paidMsat / SAT, r.spentMsat / SAT, (r.refund?.amountMsat ?? 0) / SAT]).sort()).toEqual([
        ['closed', 20, 20, 0],
        ['closed', 20, 3, 17],
      ]);
    } finally {
      await mcp.client.close().catch(() => {});
      await wallet.close();
    }
  });
});
