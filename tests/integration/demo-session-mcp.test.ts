// The MCP server's prepaid sessions against the hosted demo itself (the local
// server runs the same api/ files Vercel runs): the l402-mcp package's bin,
// started and driven by the MCP SDK's client over stdio as an agent's host
// does, with --sessions, a budget and the service's dev wallet. 50
// call_paid_api calls share one session (a 20-sat deposit, two top-ups); when
// the server stops (its stdin closed, or SIGTERM) it closes its sessions, and
// stderr says each refund and what the whole run spent; the service's ledger
// and the dev node agree to the sat. A stream whose top-up is past the budget
// ends the call at once with the reason. The demo's session-priced tool
// (btc_price_session on POST /api/mcp) is paid the same way, by l402-mcp's
// call_paid_tool and by `l402-paywall tool --session`, each closing the
// session and saying its refund when it ends.
import { describe, expect, it } from 'vitest';
import { runBin, startMcp, walletFreeEnv } from '../support/bins.js';
import { useDemoServer, watchedDevWallet } from '../support/demo-sessions.js';

const { server, received, ledgerSession } = useDemoServer('demo-session-mcp-secret-0123456789abcdef0123456789');
const SAT = 1000;
const PRICE = '/api/demo/btc-price';

/**
 * After the MCP server stopped: its stderr says the session's close and what
 * the run spent, and the service's ledger and the dev node agree to the sat.
 */
async function expectRefunded(stderr: string, sessionId: string, { paidSats, spentSats }: { paidSats: number; spentSats: number }) {
  const refundSats = paidSats - spentSats;
  expect(stderr).toContain(
    `l402-mcp: session ${sessionId} at ${server.url} closed: refund ${refundSats} sats (succeeded); the wallet received ${refundSats} sats\nl402-mcp: spent in all ${spentSats} sats (paid ${paidSats} sats, received back ${refundSats} sats)\n`,
  );
  const ledger = await ledgerSession(sessionId);
  expect(ledger).toMatchObject({
    status: 'closed',
    paidMsat: paidSats * SAT,
    spentMsat: spentSats * SAT,
    refund: { state: 'paid', amountMsat: refundSats * SAT },
  });
  expect(await received(ledger.returnHash)).toMatchObject({ paid: true, amountMsat: refundSats * SAT });
}

const sessionOf = (result: Record<string, unknown>) => result.session as { action: string; session_id: string } | undefined;

describe('the MCP server (l402-mcp) on the demo: --sessions', () => {
  it('50 call_paid_api calls share one session (a deposit, two top-ups); stopped, it closes the session with a 10-sat refund and says 50 sats spent', async () => {
    const wallet = await watchedDevWallet(server.url);
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
      // The opening challenge's id binds the session to this client: never in a tool result (a top-up's is shown).
      expect(results[0]).not.toHaveProperty('challenge_id');
      expect(results[0]).toHaveProperty('receipt.payment_hash');
      expect(results[0]).not.toHaveProperty('receipt.challenge_id');
      expect(results[20]).toHaveProperty('challenge_id');
      const sessionIds = new Set(results.flatMap((r) => sessionOf(r)?.session_id ?? []));
      expect(sessionIds.size).toBe(1);
      const [sessionId] = [...sessionIds];
      // While it is open, the deposits count as spent: that is what left the wallet.
      expect(results.at(-1)).toMatchObject({ session_spent_sats: 60, session_budget_left_sats: 40 });
      expect(wallet.paid).toHaveLength(3);
      expect(wallet.made).toBe(1);

      await mcp.client.close();
      await expectRefunded(mcp.stderr(), sessionId!, { paidSats: 60, spentSats: 50 });
      expect([...mcp.stderr().matchAll(/: (deposit|top-up) paid, 20 sats/g)].map((m) => m[1])).toEqual(['deposit', 'top-up', 'top-up']);
    } finally {
      await mcp.client.close().catch(() => {});
      await wallet.close();
    }
  });

  it('a stream whose top-up is past the budget stops at once with BUDGET_EXCEEDED; stopped by SIGTERM, the server still closes both sessions and refunds them', async () => {
    const wallet = await watchedDevWallet(server.url);
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
      expect(mcp.stderr()).toMatch(/closed: refund 17 sats \(succeeded\); the wallet received 17 sats\n/);
      expect(mcp.stderr()).toMatch(/closed: refund 0 sats \(skipped\); the wallet received nothing/);
      expect(mcp.stderr()).toContain('l402-mcp: spent in all 23 sats (paid 40 sats, received back 17 sats)\n');
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

  it('call_paid_tool pays btc_price_session from one deposit for five calls; stopped, it closes the session and says the refund', async () => {
    const wallet = await watchedDevWallet(server.url);
    const mcp = await startMcp(['--dev', wallet.url, '--directory', server.url, '--sessions', '--max-sats', '1', '--budget-sats', '30']);
    try {
      const results: Record<string, unknown>[] = [];
      for (let call = 1; call <= 5; call++) {
        const answer = (await mcp.client.callTool({
          name: 'call_paid_tool',
          arguments: { server: `${server.url}/api/mcp`, tool: 'btc_price_session', arguments: {} },
        })) as { isError?: boolean; content: { text: string }[] };
        expect(answer.isError, `call ${call}: ${answer.content[0]!.text}`).toBeFalsy();
        results.push(JSON.parse(answer.content[0]!.text) as Record<string, unknown>);
      }
      expect(results.map((r) => `${sessionOf(r)?.action}:${r.sats_paid}`)).toEqual(['open:20', 'bearer:0', 'bearer:0', 'bearer:0', 'bearer:0']);
      // Every call on a tool's session echoes its opening challenge: its id is in no result.
      for (const result of results) {
        expect(result).not.toHaveProperty('challenge_id');
        expect(result).not.toHaveProperty('receipt.challenge_id');
      }
      const sessionId = sessionOf(results[0]!)!.session_id;
      expect(wallet.paid).toHaveLength(1);

      await mcp.client.close();
      await expectRefunded(mcp.stderr(), sessionId, { paidSats: 20, spentSats: 5 });
    } finally {
      await mcp.client.close().catch(() => {});
      await wallet.close();
    }
  });

  it('l402-paywall tool --session: one call opens a session on the deposit, and the run closes it with the refund before it ends', async () => {
    const run = await runBin(['tool', `${server.url}/api/mcp`, 'btc_price_session', '--session', '--dev', server.url, '--max-sats', '1'], walletFreeEnv());
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as { usd: number }).usd).toBeGreaterThan(0);
    const opened = /l402-paywall: session ([0-9a-f]{64}): deposit paid, 20 sats/.exec(run.stderr);
    expect(opened).not.toBeNull();
    const sessionId = opened![1]!;
    expect(run.stderr).toContain(
      `the deposit of session ${sessionId}, payment hash ${sessionId}; scheme Payment, challenge id withheld (it binds the session)`,
    );
    expect(run.stderr).toContain(`l402-paywall: session ${sessionId} closed, refund 19 sats (succeeded); the wallet received 19 sats\n`);
    expect(run.stderr).toContain('l402-paywall: spent in all 1 sat (paid 20 sats, received back 19 sats)\n');
    expect(await ledgerSession(sessionId)).toMatchObject({ status: 'closed', paidMsat: 20 * SAT, spentMsat: 1 * SAT });
  });
});
