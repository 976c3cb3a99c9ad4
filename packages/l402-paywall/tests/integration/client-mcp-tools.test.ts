// The client pays MCP tools as it pays APIs: against an MCP server we did not
// write (the MCP SDK's server on stateless Streamable HTTP with mppx's MCP
// transport and a Lightning charge method on a dev node,
// ../support/mppx-tool-server.ts), mcpToolClient lists the tools, pays a tool's
// -32042 on first try within the budget, sends the credential mppx verifies,
// and takes mppx's receipt; a free tool costs nothing; what must not be paid
// is refused before the wallet is asked.
import { Challenge } from 'mppx';
import { describe, expect, it } from 'vitest';
import { createBudget, devWallet, L402ClientError, mcpToolClient } from 'l402-paywall/client';
import { MPPX_SECRET } from '../support/mpp-server.js';
import { startMppxToolServer } from '../support/mppx-tool-server.js';
import { useRecordedServer } from '../support/paid-apps.js';

const t = useRecordedServer(startMppxToolServer, (server) => {
  server.credentials.length = 0;
  server.served = 0;
  server.devPayments = 0;
});

describe('mcpToolClient against an mppx MCP server', () => {
  it('lists the tools with their descriptions', async () => {
    const client = mcpToolClient(t.server.url, { wallet: t.wallet, maxPriceSats: 5 });
    const tools = await client.listTools();
    expect(tools.map((tool) => tool.name)).toEqual(['weather', 'dear', 'echo']);
    expect(tools[0]!.description).toContain('2 sats');
  });

  it('pays a tool on first try within the budget, and reads the receipt', async () => {
    const budget = createBudget({ totalSats: 5 });
    const client = mcpToolClient(t.server.url, { wallet: t.wallet, maxPriceSats: 5, budget });
    const { result, receipt } = await client.callTool('weather', { city: 'Lisbon' });
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ tool: 'weather', arguments: { city: 'Lisbon' } }) }]);
    expect(t.wallet.invoices).toHaveLength(1);
    expect(budget.spent().totalSats).toBe(2);
    expect(t.server.served).toBe(1);
    // The unpaid call, then the paid one: its credential echoes mppx's challenge unchanged (mppx verifies its id).
    expect(t.server.credentials).toHaveLength(2);
    expect(t.server.credentials[0]).toBeUndefined();
    const credential = t.server.credentials[1] as { challenge: Challenge.Challenge; payload: { preimage: string } };
    expect(Challenge.verify(credential.challenge, { secretKey: MPPX_SECRET })).toBe(true);
    expect(receipt).toMatchObject({
      tool: 'weather',
      scheme: 'Payment',
      amountMsat: 2000,
      paidByThisCall: true,
      challengeId: credential.challenge.id,
      serverReceipt: { challengeId: credential.challenge.id, reference: receipt!.paymentHash, timestamp: expect.any(String) },
    });
    expect(receipt!.serverReceiptProblem).toBeUndefined();
  });

  it('pays with the dev wallet of a service over HTTP', async () => {
    const client = mcpToolClient(t.server.url, { wallet: devWallet({ serviceUrl: new URL(t.server.url).origin }), maxPriceSats: 5 });
    const { receipt } = await client.callTool('weather');
    expect(receipt?.serverReceipt?.reference).toBe(receipt?.paymentHash);
    expect(t.server.devPayments).toBe(1);
  });

  it('calls a free tool without paying', async () => {
    const client = mcpToolClient(t.server.url, { wallet: t.wallet, maxPriceSats: 5 });
    const { result, receipt } = await client.callTool('echo', { x: 1 });
    expect(receipt).toBeUndefined();
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify({ tool: 'echo', arguments: { x: 1 } }) }]);
    expect(t.wallet.invoices).toEqual([]);
  });

  it('refuses a tool dearer than maxPriceSats before the wallet is asked', async () => {
    const client = mcpToolClient(t.server.url, { wallet: t.wallet, maxPriceSats: 10 });
    const error = await client.callTool('dear').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(L402ClientError);
    expect((error as L402ClientError).code).toBe('PRICE_ABOVE_MAXIMUM');
    expect((error as L402ClientError).refused).toBe(true);
    expect(t.wallet.invoices).toEqual([]);
  });

  it('stops at the budget: the third 2-sat call on a 5-sat budget is refused unpaid', async () => {
    const budget = createBudget({ totalSats: 5 });
    const client = mcpToolClient(t.server.url, { wallet: t.wallet, maxPriceSats: 5, budget });
    await client.callTool('weather');
    await client.callTool('weather');
    const error = await client.callTool('weather').catch((e: unknown) => e);
    expect((error as L402ClientError).code).toBe('BUDGET_EXCEEDED');
    expect(t.wallet.invoices).toHaveLength(2);
    expect(budget.spent().totalSats).toBe(4);
    expect(t.server.served).toBe(2);
  });
});
