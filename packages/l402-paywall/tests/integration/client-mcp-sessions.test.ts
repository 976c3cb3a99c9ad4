// mcpToolClient pays tools sold by the prepaid session as fetchWithL402 pays
// session routes: against a real toolPaywall (the SDK's McpServer on
// stateless Streamable HTTP, ../support/tool-shop.ts) selling a tool by the
// session on a dev node, twelve calls go through one session (one deposit,
// top-ups when the server refuses for balance), each deposit paid once and
// within the limits, and the close refunds what was not spent, counted back
// in the budget only once the wallet received it; with the in-process
// ledger and with the Lua ledger on the real redis-server. Each paid call
// emits fetchWithL402's audit events once. What must not be paid (a unit
// above maxPriceSats, a deposit above maxDepositSats, a wallet that cannot
// take a refund) is refused before the wallet is asked.
import { describe, expect, it } from 'vitest';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import {
  createBudget,
  createSessions,
  L402ClientError,
  mcpToolClient,
  providerWallet,
  type ClientSessions,
  type McpToolsOptions,
  type Wallet,
} from 'l402-paywall/client';
import { EVENT_TYPES, type L402Event } from 'l402-paywall/events';
import { lightningSessions } from 'l402-paywall/lightning';
import { toolPaywall } from 'l402-paywall/mcp-tools';
import { sessionRedisUp, useSessionStores, type SessionStores } from '../support/session-stores.js';
import { statelessToolServer, TOOL_SHOP_URL } from '../support/tool-shop.js';

const SECRET = 'client-mcp-sessions-secret-0123456789abcdef0123';
const { memory: memoryStores, onRedis: redisStores } = useSessionStores('client-mcp-sessions');

/** A shop selling `quote` (1 sat a call) and `quote_session` (1 sat a unit, by the session only, 5-unit deposits), and the client's wallet on the same fake network. */
function shop(stores: SessionStores = memoryStores(), { unitPriceSats = 1, depositUnits = 5 } = {}) {
  const net = memoryDevNodeStore();
  const node = createDevNode({ store: net });
  const payer = createDevNode({ store: net });
  const served = { quote: 0, quote_session: 0 };
  const tools = toolPaywall({ provider: node, secret: SECRET, replayStore: stores.replayStore() });
  const session = lightningSessions({ unitPriceSats, depositUnits, ledger: stores.ledger(), idleTimeoutSeconds: 600 });
  const register = (server: McpServer) => {
    tools.register(server, 'quote', { description: 'A quote', inputSchema: { symbol: z.string() }, priceSats: 1 }, async ({ symbol }) => {
      served.quote++;
      return { content: [{ type: 'text', text: `${symbol} ${served.quote}` }] };
    });
    tools.register(
      server,
      'quote_session',
      { description: 'A quote, by the session', inputSchema: { symbol: z.string() }, priceSats: unitPriceSats, session, perCall: false },
      async ({ symbol }, extra) => {
        served.quote_session++;
        return { content: [{ type: 'text', text: `${symbol} ${served.quote_session} from session ${extra.payment.session ? 'yes' : 'no'}` }] };
      },
    );
  };
  const paid: string[] = [];
  const base = providerWallet(payer, 'regtest');
  const wallet: Wallet = {
    ...base,
    // The dev node's pay: a wallet with funds (its provider's payInvoice pays only from what it received).
    async payInvoice({ invoice }) {
      paid.push(invoice);
      return payer.pay(invoice);
    },
  };
  return { fetch: statelessToolServer(register), wallet, paid, served, payer };
}

function client(s: ReturnType<typeof shop>, options: Partial<McpToolsOptions> & { sessions?: ClientSessions } = {}) {
  const budget = createBudget({ totalSats: 30 });
  const sessions = createSessions({ refundWaitSeconds: 1 });
  const tools = mcpToolClient(TOOL_SHOP_URL, { wallet: s.wallet, maxPriceSats: 2, budget, sessions, fetch: s.fetch, ...options });
  return { tools, budget, sessions: options.sessions ?? sessions };
}

const text = (result: { content?: unknown[] }) => ((result.content ?? [])[0] as { text: string }).text;

describe('a session-priced tool, paid by mcpToolClient', () => {
  const cases: [string, () => SessionStores, boolean][] = [
    ['in-process ledger', memoryStores, true],
    ['Lua ledger on the real redis-server', redisStores, sessionRedisUp],
  ];
  for (const [name, stores, up] of cases) {
    it.runIf(up)(`serves twelve calls from one session (a deposit, two top-ups) and refunds the rest on close (${name})`, async () => {
      const s = shop(stores());
      const { tools, budget, sessions } = client(s);
      const receipts = [];
      for (let i = 1; i <= 12; i++) {
        const { result, receipt } = await tools.callTool('quote_session', { symbol: 'BTC' });
        expect(text(result)).toBe(`BTC ${i} from session yes`);
        receipts.push(receipt!);
      }
      // 12 units from 5-unit deposits: the opening one, then a top-up at calls 6 and 11, each paid once.
      expect(receipts.map((r) => r.session?.action)).toEqual([
        'open',
        'bearer',
        'bearer',
        'bearer',
        'bearer',
        'topUp',
        'bearer',
        'bearer',
        'bearer',
        'bearer',
        'topUp',
        'bearer',
      ]);
      const sessionId = receipts[0]!.session!.sessionId;
      expect(new Set(receipts.map((r) => r.session!.sessionId))).toEqual(new Set([sessionId]));
      expect(s.paid).toHaveLength(3);
      expect(new Set(s.paid).size).toBe(3);
      expect(receipts[0]).toMatchObject({ amountMsat: 5000, paidByThisCall: true, paymentHash: sessionId });
      expect(receipts[1]).toMatchObject({ amountMsat: 0, paidByThisCall: false });
      // The server's session receipts name the session and the challenge it was opened with.
      for (const receipt of receipts) expect(receipt.serverReceipt).toMatchObject({ reference: sessionId, challengeId: receipts[0]!.challengeId });
      expect(s.served.quote_session).toBe(12);
      expect(budget.spent().totalSats).toBe(15);

      const [closed, ...others] = await sessions.closeAll();
      expect(others).toEqual([]);
      expect(closed).toMatchObject({
        sessionId,
        status: 200,
        refundSats: 3,
        refundStatus: 'succeeded',
        refundSeen: true,
        receivedMsat: 3000,
        creditedMsat: 3000,
      });
      expect(budget.spent().totalSats).toBe(12);
      expect(s.served.quote_session).toBe(12);
      // Closed: the next call is a new session, never a bearer on the closed one.
      const again = await tools.callTool('quote_session', { symbol: 'ETH' });
      expect(again.receipt?.session).toMatchObject({ action: 'open' });
      expect(again.receipt?.session?.sessionId).not.toBe(sessionId);
      await tools.close();
      expect(sessions.list()).toEqual([]);
    });
  }

  it("closes the sessions it opened on the client's close, their refunds credited", async () => {
    const s = shop();
    const { tools, budget } = client(s);
    await tools.callTool('quote_session', { symbol: 'BTC' });
    await tools.callTool('quote_session', { symbol: 'BTC' });
    expect(budget.spent().totalSats).toBe(5);
    await tools.close();
    expect(budget.spent().totalSats).toBe(2);
  });

  it('shares one session between concurrent first calls: one deposit', async () => {
    const s = shop();
    const { tools, sessions } = client(s);
    const calls = await Promise.all([1, 2, 3].map(() => tools.callTool('quote_session', { symbol: 'BTC' })));
    expect(s.paid).toHaveLength(1);
    expect(calls.map((c) => c.receipt?.session?.action).sort()).toEqual(['bearer', 'bearer', 'open']);
    await sessions.closeAll();
  });

  it('refuses unpaid a unit above maxPriceSats, a deposit above maxDepositSats, and a wallet that cannot take the refund', async () => {
    const dear = shop(memoryStores(), { unitPriceSats: 3 });
    const tooDear = await client(dear)
      .tools.callTool('quote_session', { symbol: 'BTC' })
      .catch((e: unknown) => e);
    expect((tooDear as L402ClientError).code).toBe('PRICE_ABOVE_MAXIMUM');
    expect(dear.paid).toEqual([]);

    const s = shop();
    const small = createSessions({ maxDepositSats: 4 });
    const tooBig = await client(s, { sessions: small })
      .tools.callTool('quote_session', { symbol: 'BTC' })
      .catch((e: unknown) => e);
    expect((tooBig as L402ClientError).code).toBe('PRICE_ABOVE_MAXIMUM');
    expect((tooBig as L402ClientError).refused).toBe(true);

    const { createInvoice: _cannotReceive, ...payOnly } = s.wallet;
    const noRefund = await client(s, { wallet: payOnly })
      .tools.callTool('quote_session', { symbol: 'BTC' })
      .catch((e: unknown) => e);
    expect((noRefund as L402ClientError).code).toBe('UNSUPPORTED_CHALLENGE');
    expect((noRefund as L402ClientError).message).toContain('no createInvoice');
    expect(s.paid).toEqual([]);
  });

  it('without a sessions store, refuses a session-only tool unpaid and still pays a per-call one', async () => {
    const s = shop();
    const tools = mcpToolClient(TOOL_SHOP_URL, { wallet: s.wallet, maxPriceSats: 2, budget: createBudget({ totalSats: 5 }), fetch: s.fetch });
    const error = await tools.callTool('quote_session', { symbol: 'BTC' }).catch((e: unknown) => e);
    expect((error as L402ClientError).code).toBe('UNSUPPORTED_CHALLENGE');
    expect((error as L402ClientError).message).toContain('lightning/session');
    expect((await tools.callTool('quote', { symbol: 'BTC' })).receipt).toMatchObject({ amountMsat: 1000, paidByThisCall: true });
    expect(s.paid).toHaveLength(1);
  });
});

/** A JSON-RPC message as a hostile server edits it: any member, at any depth. */
interface Json {
  [member: string]: Json | Json[] | string | number | undefined;
}

/** The shop's answers to tools/call, changed by `edit` (given the answer and the call's params) as a hostile server would send them. */
function tampered(s: ReturnType<typeof shop>, edit: (answer: Json, params: Json) => Json | undefined) {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = new Request(input, init);
    const message = request.method === 'POST' ? ((await request.clone().json()) as Json) : {};
    const response = await s.fetch(request);
    if (message.method !== 'tools/call' || !response.headers.get('content-type')?.startsWith('application/json')) return response;
    const answer = (await response.json()) as Json;
    return Response.json(edit(answer, (message.params ?? {}) as Json) ?? answer, { status: response.status });
  };
}

describe('a hostile session seller', () => {
  it('a deposit whose stated amount disagrees with its invoice is refused before the wallet is asked', async () => {
    const s = shop();
    const fetch = tampered(s, (answer) => {
      const challenges = ((answer.error as Json | undefined)?.data as Json | undefined)?.challenges as Json[] | undefined;
      for (const challenge of challenges ?? []) (challenge.request as Json).depositAmount = '1';
      return answer;
    });
    const error = await client(s, { fetch })
      .tools.callTool('quote_session', { symbol: 'BTC' })
      .catch((e: unknown) => e);
    expect((error as L402ClientError).code).toBe('CHALLENGE_INVOICE_MISMATCH');
    expect(s.paid).toEqual([]);
  });

  it('a session refused for a reason other than its balance fails the call (SESSION_REFUSED), and no new deposit is ever paid for it', async () => {
    const s = shop();
    const fetch = tampered(s, (answer, params) =>
      (((params._meta as Json | undefined)?.['org.paymentauth/credential'] as Json | undefined)?.payload as Json | undefined)?.action === 'bearer'
        ? { jsonrpc: '2.0', id: answer.id, error: { code: -32043, message: 'Payment Verification Failed', data: { code: 'WRONG_ROUTE', challenges: [] } } }
        : undefined,
    );
    const { tools, sessions } = client(s, { fetch });
    expect((await tools.callTool('quote_session', { symbol: 'BTC' })).receipt?.session?.action).toBe('open');
    for (let i = 0; i < 3; i++) {
      const error = await tools.callTool('quote_session', { symbol: 'BTC' }).catch((e: unknown) => e);
      expect((error as L402ClientError).code).toBe('SESSION_REFUSED');
      expect((error as L402ClientError).details).toMatchObject({ serverCode: 'WRONG_ROUTE' });
    }
    // One deposit, the opening one (the honest shop behind the tampering served the bearer calls it was sent, then refused them).
    expect(s.paid).toHaveLength(1);
    expect(sessions.list()).toHaveLength(1);
    await sessions.closeAll();
  });
});

describe("mcpToolClient's audit events", () => {
  const byType = (events: L402Event[], type: string) => events.filter((event) => event.type === type);

  it('emits challenge.received, payment.sent and request.served once per paid call, as fetchWithL402 does', async () => {
    const s = shop();
    const events: L402Event[] = [];
    const { tools, sessions } = client(s, { onEvent: (event) => events.push(event), events: { agentId: 'agent-7' } });
    for (let i = 0; i < 3; i++) await tools.callTool('quote', { symbol: 'BTC' });
    for (const type of [EVENT_TYPES.challengeReceived, EVENT_TYPES.paymentSent, EVENT_TYPES.clientRequestServed]) expect(byType(events, type)).toHaveLength(3);
    const sent = byType(events, EVENT_TYPES.paymentSent);
    expect(new Set(sent.map((event) => event.data.payment?.paymentHash)).size).toBe(3);
    const served = byType(events, EVENT_TYPES.clientRequestServed)[0]!;
    expect(served).toMatchObject({ subject: TOOL_SHOP_URL, data: { agent: { id: 'agent-7' }, context: { status: 200 }, payment: { amountMsat: 1000 } } });
    expect(served.data.causation?.causationId).toBe(sent[0]!.id);

    // By the session: one of each per deposit (the opening one and the top-up), none for calls on the session.
    events.length = 0;
    for (let i = 0; i < 6; i++) await tools.callTool('quote_session', { symbol: 'BTC' });
    for (const type of [EVENT_TYPES.challengeReceived, EVENT_TYPES.paymentSent, EVENT_TYPES.clientRequestServed]) expect(byType(events, type)).toHaveLength(2);
    expect(byType(events, EVENT_TYPES.paymentSent).map((event) => event.data.payment?.amountMsat)).toEqual([5000, 5000]);
    await sessions.closeAll();
  });

  it('emits invoice.refused once for a call refused unpaid', async () => {
    const s = shop(memoryStores(), { unitPriceSats: 3 });
    const events: L402Event[] = [];
    const { tools } = client(s, { onEvent: (event) => events.push(event) });
    await expect(tools.callTool('quote_session', { symbol: 'BTC' })).rejects.toThrow(L402ClientError);
    expect(byType(events, EVENT_TYPES.invoiceRefused)).toHaveLength(1);
    expect(byType(events, EVENT_TYPES.invoiceRefused)[0]!.data.reason).toBe('PRICE_ABOVE_MAXIMUM');
    expect(byType(events, EVENT_TYPES.paymentSent)).toEqual([]);
  });
});
