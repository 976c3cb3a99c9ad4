// Agents pay the hosted service's paid MCP tools (POST /api/mcp, the demo sold
// as a tool) as they pay its API: the client entry's mcpToolClient, with the
// service's dev wallet, against
// the local server: the listing states the demo tool's price, a call is paid
// once within the budget, the service's receipt names the payment, and a tool
// sold only by the prepaid session is refused unpaid (this client pays MCP
// tools per call).
import { describe, expect, it } from 'vitest';
import { createBudget, createSessions, devWallet, fetchWithL402, L402ClientError, mcpToolClient } from 'l402-paywall/client';
import { useDevServer } from '../support/server.js';

const DEMO_PRICE_SATS = 2;
const server = useDevServer(() => ({ DEMO_PRICE_SATS: String(DEMO_PRICE_SATS) }));

async function demoTools() {
  const budget = createBudget({ totalSats: 10 });
  const client = mcpToolClient(`${server.url}/api/mcp`, { wallet: devWallet({ serviceUrl: server.url }), maxPriceSats: 5, budget });
  const tools = await client.listTools();
  const perCall = tools.find((tool) => tool.price?.intents.includes('charge'));
  const sessionOnly = tools.find((tool) => tool.price && !tool.price.intents.includes('charge'));
  return { budget, client, tools, perCall, sessionOnly };
}

describe('mcpToolClient against POST /api/mcp', () => {
  it('lists the demo tool with its price, pays it once with the dev wallet, and takes the receipt', async () => {
    const { budget, client, perCall } = await demoTools();
    expect(perCall?.price).toMatchObject({ sats: DEMO_PRICE_SATS, method: 'lightning' });
    expect(perCall?.description).toContain(`${DEMO_PRICE_SATS} sats`);
    const { result, receipt } = await client.callTool(perCall!.name, {});
    const text = (result.content as { type: string; text: string }[])[0]!;
    expect(JSON.parse(text.text)).toMatchObject({ usd: expect.any(Number), source: expect.any(String) });
    expect(receipt).toMatchObject({ tool: perCall!.name, amountMsat: DEMO_PRICE_SATS * 1000, paidByThisCall: true, scheme: 'Payment' });
    expect(receipt?.serverReceipt).toEqual({ challengeId: receipt!.challengeId, reference: receipt!.paymentHash, timestamp: expect.any(String) });
    expect(budget.spent().totalSats).toBe(DEMO_PRICE_SATS);
    await client.close();
  });

  it('a tool sold only by the prepaid session is refused unpaid without a sessions store', async () => {
    const { budget, client, sessionOnly } = await demoTools();
    // The dev node refunds prepaid sessions, so the service sells its session variant too.
    expect(sessionOnly?.price).toMatchObject({ sats: DEMO_PRICE_SATS, intents: ['session'] });
    const error = await client.callTool(sessionOnly!.name, {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(L402ClientError);
    expect((error as L402ClientError).code).toBe('UNSUPPORTED_CHALLENGE');
    expect(budget.spent().totalMsat).toBe(0);
  });

  it('btc_price_session with a sessions store: four calls from one deposit, the rest refunded on close', async () => {
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions({ refundWaitSeconds: 2 });
    const client = mcpToolClient(`${server.url}/api/mcp`, { wallet: devWallet({ serviceUrl: server.url }), maxPriceSats: 5, budget, sessions });
    const actions: string[] = [];
    for (let call = 0; call < 4; call++) {
      const { result, receipt } = await client.callTool('btc_price_session', {});
      expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toMatchObject({ usd: expect.any(Number) });
      expect(receipt?.serverReceipt?.reference).toBe(receipt?.session?.sessionId);
      actions.push(receipt!.session!.action);
    }
    expect(actions).toEqual(['open', 'bearer', 'bearer', 'bearer']);
    const [held] = sessions.list();
    const depositSats = held!.depositedMsat / 1000;
    expect(budget.spent().totalSats).toBe(depositSats);

    await client.close();
    expect(sessions.list()).toEqual([]);
    expect(budget.spent().totalMsat).toBe(4 * DEMO_PRICE_SATS * 1000);
    const record = await server.ctx.sessions.get(held!.sessionId);
    expect(record).toMatchObject({ status: 'closed', paidMsat: depositSats * 1000, spentMsat: 4 * DEMO_PRICE_SATS * 1000 });
  });

  it('one store: a session fetchWithL402 opened on GET /api/demo/btc-price serves btc_price_session (the same route), no second deposit', async () => {
    const wallet = devWallet({ serviceUrl: server.url });
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions({ refundWaitSeconds: 2 });
    const response = await fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, { wallet, maxPriceSats: 5, budget, sessions });
    expect(response.status).toBe(200);
    const [held] = sessions.list();
    const spent = budget.spent().totalMsat;
    const client = mcpToolClient(`${server.url}/api/mcp`, { wallet, maxPriceSats: 5, budget, sessions });
    const { receipt } = await client.callTool('btc_price_session', {});
    expect(receipt?.session).toEqual({ action: 'bearer', sessionId: held!.sessionId });
    expect(budget.spent().totalMsat).toBe(spent);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ sessionId: held!.sessionId, status: 200, refundSeen: true });
    expect(await server.ctx.sessions.get(held!.sessionId)).toMatchObject({ status: 'closed', spentMsat: 2 * DEMO_PRICE_SATS * 1000 });
  });
});
