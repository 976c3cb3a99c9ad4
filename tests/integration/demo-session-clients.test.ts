// The clients that use prepaid sessions, against the hosted demo itself (the
// local server runs the same api/ files Vercel runs), paying with the
// service's own dev wallet: fetchWithL402 makes 50 calls to GET
// /api/demo/btc-price within a 100-sat budget through one session (a 20-sat
// deposit, two 20-sat top-ups) and closes it with a 10-sat refund; the
// command line (the real bin), which makes one request a run, streams 50
// chunks of GET /api/demo/stream through one session it tops up and closes,
// stops at a top-up it may not pay, and refuses a deposit too dear. Each says
// what was spent, and the service's ledger and the dev node agree to the sat.
// The MCP server's part is demo-session-mcp.test.ts.
import { createBudget, createSessions, devWallet, fetchWithL402, getPaymentReceipt } from 'l402-paywall/client';
import { describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { runBin, startBin } from '../support/bins.js';
import { useDemoServer, watchedDevWallet } from '../support/demo-sessions.js';

const { server, deploy, received, ledgerSession } = useDemoServer('demo-session-clients-secret-0123456789abcdef012345');
const SAT = 1000;
const PRICE = '/api/demo/btc-price';

describe('fetchWithL402 on the demo', () => {
  it('50 calls to GET /api/demo/btc-price within a 100-sat budget: one session, a deposit and two top-ups, closed with a 10-sat refund', async () => {
    const watched = await watchedDevWallet(server.url);
    const wallet = devWallet({ serviceUrl: watched.url });
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions({ maxDepositSats: 20 });
    try {
      const deposits: string[] = [];
      for (let call = 1; call <= 50; call++) {
        const response = await fetchWithL402(`${server.url}${PRICE}`, undefined, { wallet, maxPriceSats: 1, budget, sessions });
        expect(response.status, `call ${call}`).toBe(200);
        const price = (await response.json()) as { usd: number; source: string };
        expect(price.usd, `call ${call}`).toBeGreaterThan(0);
        const receipt = getPaymentReceipt(response);
        // Only a deposit is ever paid: no charge (a receipt without a session would be one).
        if (receipt) deposits.push(`${call}:${receipt.session?.action}:${receipt.amountMsat / SAT}`);
      }
      expect(deposits).toEqual(['1:open:20', '21:topUp:20', '41:topUp:20']);
      expect(watched.paid).toHaveLength(3);
      expect(watched.made).toBe(1);
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
      expect(await received(ledger.returnHash)).toMatchObject({ paid: true, amountMsat: 10 * SAT });
      // The deposit is the session: its payment hash is the session's id.
      expect(watched.paid[0]).toBe(held!.sessionId);
    } finally {
      await sessions.closeAll();
      await watched.close();
    }
  });
});

describe('the command line on the demo: --session', () => {
  it('one run streams 50 chunks of GET /api/demo/stream through one session within --budget-sats 100: two top-ups, closed with a 10-sat refund, 50 sats spent in all', async () => {
    const wallet = await watchedDevWallet(server.url);
    try {
      const run = await runBin([`${server.url}/api/demo/stream?chunks=50`, '--dev', wallet.url, '--session', '--max-sats', '1', '--budget-sats', '100']);
      expect(run.stderr).toMatch(/paid 20 sats .* scheme Payment/);
      // The opening challenge's id binds the session to this client: not printed.
      expect(run.stderr).toContain('challenge id withheld (it binds the session); Payment-Receipt: challenge withheld (it binds the session),');
      expect(run.code).toBe(0);
      const chunks = run.stdout
        .split('\n\n')
        .filter((event) => event.startsWith('data: {'))
        .map((event) => (JSON.parse(event.slice('data: '.length)) as { chunk: number }).chunk);
      expect(chunks).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
      expect(run.stdout.match(/event: payment-need-topup/g)).toHaveLength(2);
      expect(run.stdout.trimEnd().endsWith('data: [DONE]')).toBe(true);
      const closed = /session ([0-9a-f]{64}) closed, refund 10 sats \(succeeded\); the wallet received 10 sats\n/.exec(run.stderr);
      expect(closed, run.stderr).not.toBeNull();
      const sessionId = closed![1]!;
      // Each deposit said as it was paid, and what the wallet paid minus what it received.
      expect([...run.stderr.matchAll(/session ([0-9a-f]{64}): (deposit|top-up) paid, 20 sats/g)].map((m) => `${m[1] === sessionId}:${m[2]}`)).toEqual([
        'true:deposit',
        'true:top-up',
        'true:top-up',
      ]);
      expect(run.stderr).toContain('l402-paywall: spent in all 50 sats (paid 60 sats, received back 10 sats)\n');
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
    const wallet = await watchedDevWallet(server.url);
    try {
      // The demo holds a stream a minute for its top-up: the command does not wait for that (runBin gives it 30 s).
      const run = await runBin([`${server.url}/api/demo/stream?chunks=50`, '--dev', wallet.url, '--session', '--max-sats', '1', '--budget-sats', '50']);
      expect(run.stderr).toContain(
        'the stream stopped at a top-up: Not paid: 20 sats would take the budget past its 50 sats (40 spent or in flight) [BUDGET_EXCEEDED]',
      );
      expect(run.code).toBe(3);
      expect(run.stdout).toContain('data: {"chunk":40,');
      expect(run.stdout).not.toContain('"chunk":41,');
      const closed = /session ([0-9a-f]{64}) closed, refund 0 sats \(skipped\); the wallet received nothing\n/.exec(run.stderr);
      expect(run.stderr).toContain('l402-paywall: spent in all 40 sats (paid 40 sats, received back 0 sats)\n');
      expect(closed, run.stderr).not.toBeNull();
      expect(wallet.paid).toHaveLength(2);
      expect(await server.ctx.sessions.get(closed![1]!)).toMatchObject({ status: 'closed', paidMsat: 40 * SAT, spentMsat: 40 * SAT });
    } finally {
      await wallet.close();
    }
  });

  it('a deposit above --max-deposit-sats or past --budget-sats is refused unpaid: exit 3, nothing on stdout', async () => {
    const wallet = await watchedDevWallet(server.url);
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
      expect(run.stderr).toMatch(/session [0-9a-f]{64} closed, refund 0 sats \(skipped\); the wallet received nothing\n/);
      expect(run.stderr).toContain('l402-paywall: spent in all 20 sats (paid 20 sats, received back 0 sats)\n');
    } finally {
      deploy();
    }
  });

  it('Ctrl-C mid-stream: the command closes the session before it exits (130), and the refund is what the stream did not spend', async () => {
    // A chunk every 100 ms: the 200 chunks would take 20 s.
    deploy({ DEMO_STREAM_INTERVAL_MS: '100' });
    try {
      const child = startBin([`${server.url}/api/demo/stream?chunks=200`, '--dev', server.url, '--session', '--max-sats', '1', '--budget-sats', '100']);
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
      await new Promise<void>((resolve) =>
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('"chunk":5,')) resolve();
        }),
      );
      child.kill('SIGINT');
      const [code] = await exited;
      expect(stderr).toContain('l402-paywall: interrupted (SIGINT); closing the session\n');
      expect(code).toBe(130);
      const closed =
        /session ([0-9a-f]{64}) closed, refund (\d+) sats \(succeeded\); the wallet received \2 sats\nl402-paywall: spent in all (\d+) sats \(paid 20 sats, received back \2 sats\)\n/.exec(
          stderr,
        );
      expect(closed, stderr).not.toBeNull();
      const [, sessionId, refund, spent] = closed!.map(String);
      expect(Number(refund) + Number(spent)).toBe(20);
      expect(Number(spent)).toBeGreaterThanOrEqual(5);
      const ledger = await ledgerSession(sessionId!);
      expect(ledger).toMatchObject({
        status: 'closed',
        paidMsat: 20 * SAT,
        spentMsat: Number(spent) * SAT,
        refund: { state: 'paid', amountMsat: Number(refund) * SAT },
      });
      expect(await received(ledger.returnHash)).toMatchObject({ paid: true, amountMsat: Number(refund) * SAT });
    } finally {
      deploy();
    }
  });
});
