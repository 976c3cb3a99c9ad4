// Paid MCP tools (l402-paywall/mcp-tools) over the Payment scheme's MCP
// transport (draft-payment-transport-mcp-00): a tool's listing states its
// price; an unpaid call is JSON-RPC error -32042 with a Lightning charge
// challenge as a JSON object; a credential in params._meta pays one call,
// whose result carries the receipt, and is refused (-32043, fresh
// challenges) the second time; a tool that fails gives the use back; one
// replay store serves HTTP routes and tools, so a payment opens one or the
// other, once; mppx's McpClient.wrap (a peer implementation) pays on its
// first try; a session-priced tool serves many calls from one deposit and
// refunds the rest on close (the in-process ledger and the Lua one on the real
// redis-server). Real McpServer and Client of the official SDK (in memory, and
// raw JSON-RPC lines on its stdio transport), real dev Lightning nodes.
import { PassThrough } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { Credential, Method } from 'mppx';
import { McpClient } from 'mppx/mcp/client';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { withL402, type PaidRequest } from 'l402-paywall';
import { EVENT_TYPES, type L402Event } from 'l402-paywall/events';
import { createDevNode, memoryDevNodeStore, type DevNode } from 'l402-paywall/backends';
import { decodeInvoice, lightningSessions } from 'l402-paywall/lightning';
import { canonicalJson, formatCredential, parsePaymentChallenges } from 'l402-paywall/mpp';
import {
  CREDENTIAL_META_KEY,
  PAYMENT_REQUIRED_CODE,
  PAYMENT_VERIFICATION_FAILED_CODE,
  PRICE_META_KEY,
  RECEIPT_META_KEY,
  liftRootCredential,
  toolPaywall,
  type JsonChallenge,
  type ToolPaywallOptions,
} from 'l402-paywall/mcp-tools';
import { lightningCharge } from '../support/mpp-server.js';
import { sessionRedisUp, useSessionStores, type SessionStores } from '../support/session-stores.js';

const SECRET = 'mcp-tool-test-secret-0123456789abcdef0123456789';
const { memory: memoryStores, onRedis: redisStores } = useSessionStores('mcp-tool');
const clients: Client[] = [];
afterAll(async () => {
  for (const client of clients) await client.close();
});

interface Shop {
  node: DevNode;
  wallet: DevNode;
  client: Client;
  paid: PaidRequest[];
  calls: () => number;
  errors: string[];
  stores: SessionStores;
}

/** A server selling `price` (1 sat a call) and, with sessions, `price_session` (by the session only, 2 sats a call), and a free `ping`. */
async function shop(options: Partial<ToolPaywallOptions> = {}, stores: SessionStores = memoryStores(), fail?: () => boolean): Promise<Shop> {
  const net = memoryDevNodeStore();
  const node = createDevNode({ store: net });
  const wallet = createDevNode({ store: net });
  const paid: PaidRequest[] = [];
  const errors: string[] = [];
  let calls = 0;
  const tools = toolPaywall({
    provider: node,
    secret: SECRET,
    replayStore: stores.replayStore(),
    onPaid: (payment) => {
      paid.push(payment);
    },
    onError: (error, context) => errors.push(`${context}: ${error instanceof Error ? error.message : String(error)}`),
    ...options,
  });
  const server = new McpServer({ name: 'shop', version: '1.0.0' });
  tools.register(
    server,
    'price',
    { description: 'The price of bitcoin', inputSchema: { currency: z.enum(['usd', 'eur']) }, priceSats: 1 },
    async ({ currency }, extra) => {
      calls++;
      if (fail?.()) throw new Error('the price source is down');
      return { content: [{ type: 'text', text: JSON.stringify({ currency, price: 97_000, paid: extra.payment.amountMsat }) }] };
    },
  );
  const session = lightningSessions({ unitPriceSats: 2, depositUnits: 5, ledger: stores.ledger(), idleTimeoutSeconds: 600 });
  tools.register(server, 'price_session', { description: 'The price, by the session', priceSats: 2, session, perCall: false }, async (extra) => {
    calls++;
    return { content: [{ type: 'text', text: `unit paid by session ${extra.payment.session ? 'yes' : 'no'}` }] };
  });
  server.registerTool('ping', { description: 'Free' }, async () => ({ content: [{ type: 'text', text: 'pong' }] }));
  const [serverSide, clientSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'agent', version: '1.0.0' });
  await client.connect(clientSide);
  clients.push(client);
  return { node, wallet, client, paid, calls: () => calls, errors, stores };
}

/** The JSON-RPC error a call answers (the SDK client throws it as an McpError). */
async function refusal(client: Client, params: Parameters<Client['callTool']>[0]): Promise<McpError & { data: Record<string, unknown> }> {
  const error = await client.callTool(params).then(
    (result) => {
      throw new Error(`expected a refusal, got ${JSON.stringify(result)}`);
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError & { data: Record<string, unknown> };
}

const challengeOf = (error: { data: Record<string, unknown> }, intent = 'charge') =>
  (error.data.challenges as JsonChallenge[]).find((c) => c.intent === intent)!;

const invoiceOf = (challenge: JsonChallenge) => (challenge.request.methodDetails as { invoice: string }).invoice;

/** Pays the call's charge challenge with the wallet: the MCP credential object. */
async function payCharge(s: Shop, challenge: JsonChallenge): Promise<{ challenge: JsonChallenge; payload: { preimage: string } }> {
  const { preimage } = await s.wallet.pay(invoiceOf(challenge));
  return { challenge, payload: { preimage } };
}

const text = (result: CallToolResult) => (result.content[0] as { text: string }).text;

describe('a paid tool, per call', () => {
  it('states its price in the listing, beside a free tool', async () => {
    const { client } = await shop();
    const { tools } = await client.listTools();
    const price = tools.find((t) => t.name === 'price')!;
    expect(price.description).toMatch(/^The price of bitcoin\n\nPrice: 1 sat per call, paid over Lightning/);
    expect(price._meta?.[PRICE_META_KEY]).toEqual({ method: 'lightning', currency: 'sat', amount: 1, intents: ['charge'] });
    expect(price.inputSchema.properties).toHaveProperty('currency');
    expect(tools.find((t) => t.name === 'price_session')!._meta?.[PRICE_META_KEY]).toEqual({
      method: 'lightning',
      currency: 'sat',
      amount: 2,
      intents: ['session'],
    });
    expect(tools.find((t) => t.name === 'ping')!._meta).toBeUndefined();
    expect(await client.callTool({ name: 'ping' })).toEqual({ content: [{ type: 'text', text: 'pong' }] });
  });

  it('answers an unpaid call -32042 with a Lightning charge challenge for a fresh invoice, and runs nothing', async () => {
    const s = await shop();
    const error = await refusal(s.client, { name: 'price', arguments: { currency: 'usd' } });
    expect(error.code).toBe(PAYMENT_REQUIRED_CODE);
    expect(error.data).toMatchObject({ httpStatus: 402, code: 'PAYMENT_REQUIRED', problem: { status: 402, detail: expect.stringContaining('params._meta') } });
    expect(JSON.stringify(error.data)).not.toContain('Authorization');
    const challenges = error.data.challenges as JsonChallenge[];
    expect(challenges).toHaveLength(1);
    const [challenge] = challenges;
    // No HTTP request on this transport: the default realm is localhost (set `realm` to your host name).
    expect(challenge).toMatchObject({ method: 'lightning', intent: 'charge', realm: 'localhost', request: { amount: '1', currency: 'sat' } });
    expect(decodeInvoice(invoiceOf(challenge!)).amountMsat).toBe(1000);
    expect(s.calls()).toBe(0);
    // Arguments are checked before any invoice is made.
    const invalid = await s.client.callTool({ name: 'price', arguments: { currency: 'yen' } });
    expect(invalid.isError).toBe(true);
  });

  it('serves a paid call once with its receipt; the same credential again is -32043 with a fresh challenge', async () => {
    const s = await shop();
    const challenge = challengeOf(await refusal(s.client, { name: 'price', arguments: { currency: 'eur' } }));
    const credential = await payCharge(s, challenge);
    const result = await s.client.callTool({ name: 'price', arguments: { currency: 'eur' }, _meta: { [CREDENTIAL_META_KEY]: credential } });
    expect(JSON.parse(text(result as CallToolResult))).toEqual({ currency: 'eur', price: 97_000, paid: 1000 });
    const paymentHash = (challenge.request.methodDetails as { paymentHash: string }).paymentHash;
    expect(result._meta?.[RECEIPT_META_KEY]).toEqual({
      method: 'lightning',
      challengeId: challenge.id,
      reference: paymentHash,
      status: 'success',
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
    });
    await vi_waitFor(() => s.paid.length === 1);
    expect(s.paid[0]).toMatchObject({ paymentHash, route: 'mcp:tools/price', amountMsat: 1000, scheme: 'Payment', challengeId: challenge.id });

    const again = await refusal(s.client, { name: 'price', arguments: { currency: 'eur' }, _meta: { [CREDENTIAL_META_KEY]: credential } });
    expect(again.code).toBe(PAYMENT_VERIFICATION_FAILED_CODE);
    expect(again.data).toMatchObject({ httpStatus: 402, code: 'TOKEN_ALREADY_USED', failure: { reason: 'TOKEN_ALREADY_USED' } });
    expect(challengeOf(again).id).not.toBe(challenge.id);
    expect(s.calls()).toBe(1);
  });

  it('refuses a changed, unpaid, foreign or malformed credential with -32043 and a fresh challenge', async () => {
    const s = await shop();
    const challenge = challengeOf(await refusal(s.client, { name: 'price', arguments: { currency: 'usd' } }));
    const { payload } = await payCharge(s, challenge);
    const cheaper = { ...challenge, request: { ...challenge.request, amount: '0' } };
    const cases: [unknown, string][] = [
      [{ challenge: cheaper, payload }, 'UNKNOWN_CHALLENGE'],
      [{ challenge: { ...challenge, id: 'x'.repeat(43) }, payload }, 'UNKNOWN_CHALLENGE'],
      [{ challenge, payload: { preimage: '00'.repeat(32) } }, 'PREIMAGE_MISMATCH'],
      [{ challenge: { ...challenge, method: 'tempo' }, payload }, 'METHOD_UNSUPPORTED'],
      ['Payment abc', 'MALFORMED_CREDENTIAL'],
      [42, 'MALFORMED_CREDENTIAL'],
      [{ challenge: 'nope', payload }, 'MALFORMED_CREDENTIAL'],
      [{ challenge: { ...challenge, request: { a: Array.from({ length: 5000 }, () => 'x'.repeat(10)) } }, payload }, 'MALFORMED_CREDENTIAL'],
    ];
    for (const [credential, code] of cases) {
      const error = await refusal(s.client, { name: 'price', arguments: { currency: 'usd' }, _meta: { [CREDENTIAL_META_KEY]: credential } });
      expect({ code: error.code, reason: error.data.code }).toEqual({ code: PAYMENT_VERIFICATION_FAILED_CODE, reason: code });
      expect(challengeOf(error).intent).toBe('charge');
    }
    expect(s.calls()).toBe(0);
    // The genuine credential is still good: none of the refusals spent it.
    const result = await s.client.callTool({ name: 'price', arguments: { currency: 'usd' }, _meta: { [CREDENTIAL_META_KEY]: { challenge, payload } } });
    expect(result._meta?.[RECEIPT_META_KEY]).toBeDefined();
  });

  it('gives the use back when the tool fails (no receipt), so the same credential pays the retry', async () => {
    let down = true;
    const s = await shop({}, memoryStores(), () => down);
    const credential = await payCharge(s, challengeOf(await refusal(s.client, { name: 'price', arguments: { currency: 'usd' } })));
    const failed = (await s.client.callTool({ name: 'price', arguments: { currency: 'usd' }, _meta: { [CREDENTIAL_META_KEY]: credential } })) as CallToolResult;
    expect(failed.isError).toBe(true);
    expect(failed._meta?.[RECEIPT_META_KEY]).toBeUndefined();
    down = false;
    const retried = await s.client.callTool({ name: 'price', arguments: { currency: 'usd' }, _meta: { [CREDENTIAL_META_KEY]: credential } });
    expect(retried.isError).toBeFalsy();
    expect(retried._meta?.[RECEIPT_META_KEY]).toBeDefined();
    await vi_waitFor(() => s.paid.length === 1);
    expect(s.paid).toHaveLength(1);
  });

  it('is paid on its first try by mppx McpClient.wrap with a lightning/charge method paying from the dev wallet', async () => {
    const s = await shop();
    let payments = 0;
    const method = Method.toClient(lightningCharge, {
      async createCredential({ challenge }) {
        payments++;
        const { preimage } = await s.wallet.pay(challenge.request.methodDetails!.invoice);
        return Credential.serialize({ challenge, payload: { preimage } });
      },
    });
    const wrapped = McpClient.wrap(s.client, { methods: [method] });
    const result = (await wrapped.callTool({ name: 'price', arguments: { currency: 'usd' } })) as CallToolResult & { receipt?: Record<string, unknown> };
    expect(JSON.parse(text(result))).toMatchObject({ currency: 'usd', price: 97_000 });
    expect(result.receipt).toMatchObject({ method: 'lightning', status: 'success' });
    expect(payments).toBe(1);
    expect(s.calls()).toBe(1);
  });

  it('emits the audit events a request would: challenge.issued, request.served, token.rejected, each for the tool', async () => {
    const events: L402Event[] = [];
    const s = await shop({ onEvent: (event) => void events.push(event) });
    const challenge = challengeOf(await refusal(s.client, { name: 'price', arguments: { currency: 'usd' } }));
    const credential = await payCharge(s, challenge);
    await s.client.callTool({ name: 'price', arguments: { currency: 'usd' }, _meta: { [CREDENTIAL_META_KEY]: credential } });
    await refusal(s.client, { name: 'price', arguments: { currency: 'usd' }, _meta: { [CREDENTIAL_META_KEY]: credential } });
    await vi_waitFor(() => events.length >= 4);
    expect(events.map((e) => e.type)).toEqual([
      EVENT_TYPES.challengeIssued,
      EVENT_TYPES.serverRequestServed,
      EVENT_TYPES.tokenRejected,
      EVENT_TYPES.challengeIssued,
    ]);
    expect(events[1]!.data).toMatchObject({ scheme: 'Payment' });
    expect(JSON.stringify(events[1]!.data)).toContain((challenge.request.methodDetails as { paymentHash: string }).paymentHash);
    expect(JSON.stringify(events)).not.toContain(credential.payload.preimage);
  });

  it('refuses to register after a free tool, and a config that cannot sell', () => {
    const tools = toolPaywall({ provider: createDevNode(), secret: SECRET });
    const server = new McpServer({ name: 'x', version: '1' });
    expect(() => tools.register(server, 'bad name!', { priceSats: 1 }, async () => ({ content: [] }))).toThrow(/tool name/);
    expect(() => tools.register(server, 'zero', { priceSats: 0 }, async () => ({ content: [] }))).toThrow(/priceSats/);
    expect(() => tools.register(server, 'none', { priceSats: 1, perCall: false }, async () => ({ content: [] }))).toThrow(/sells nothing/);
    const session = lightningSessions({ unitPriceSats: 3, ledger: memoryStores().ledger() });
    expect(() => tools.register(server, 'liar', { priceSats: 1, session }, async () => ({ content: [] }))).toThrow(/unit price/);
    server.registerTool('free', {}, async () => ({ content: [] }));
    expect(() => tools.register(server, 'late', { priceSats: 1 }, async () => ({ content: [] }))).toThrow(/before any free tool/);
  });
});

describe('one replay store for HTTP routes and tools', () => {
  /** A tool and an HTTP route sold under the same route, secret and store: one payment is good at either door, once. */
  async function bothDoors() {
    const stores = memoryStores();
    const net = memoryDevNodeStore();
    const node = createDevNode({ store: net });
    const wallet = createDevNode({ store: net });
    // The same secret, store and realm as the HTTP route's: what makes one payment good at either door.
    const options = { provider: node, secret: SECRET, replayStore: stores.replayStore(), realm: 'shop.example', onError: () => {} };
    const http = withL402(() => Response.json({ ok: true }), { ...options, priceSats: 1, route: '/api/price' });
    const tools = toolPaywall(options);
    const server = new McpServer({ name: 'both', version: '1' });
    tools.register(server, 'price', { priceSats: 1, route: '/api/price' }, async () => ({ content: [{ type: 'text', text: 'ok' }] }));
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    const client = new Client({ name: 'agent', version: '1' });
    await client.connect(b);
    clients.push(client);
    const get = (authorization?: string) => http(new Request('https://shop.example/api/price', { headers: authorization ? { authorization } : {} }));
    return { client, wallet, get };
  }

  it('a credential used over HTTP is refused as a tool credential', async () => {
    const { client, wallet, get } = await bothDoors();
    const challenged = await get();
    const [header] = parsePaymentChallenges(challenged.headers.get('www-authenticate')).challenges;
    const { preimage } = await wallet.pay((await challenged.json()).invoice);
    expect((await get(formatCredential(header!, preimage))).status).toBe(200);
    // The same challenge and preimage, as the MCP transport carries them.
    const request = JSON.parse(Buffer.from(header!.request, 'base64url').toString());
    const error = await refusal(client, { name: 'price', _meta: { [CREDENTIAL_META_KEY]: { challenge: { ...header, request }, payload: { preimage } } } });
    expect({ code: error.code, reason: error.data.code }).toEqual({ code: PAYMENT_VERIFICATION_FAILED_CODE, reason: 'TOKEN_ALREADY_USED' });
  });

  it('a credential used as a tool credential is refused over HTTP', async () => {
    const { client, wallet, get } = await bothDoors();
    const challenge = challengeOf(await refusal(client, { name: 'price' }));
    const { preimage } = await wallet.pay(invoiceOf(challenge));
    const served = await client.callTool({ name: 'price', _meta: { [CREDENTIAL_META_KEY]: { challenge, payload: { preimage } } } });
    expect(served._meta?.[RECEIPT_META_KEY]).toBeDefined();
    // The same challenge as an HTTP credential: its request as the JCS text its id binds.
    const refused = await get(formatCredential({ ...challenge, request: Buffer.from(canonicalJson(challenge.request)).toString('base64url') }, preimage));
    expect(refused.status).toBe(402);
    expect((await refused.json()).code).toBe('TOKEN_ALREADY_USED');
  });
});

describe('a session-priced tool', () => {
  const cases: [string, () => SessionStores, boolean][] = [
    ['in-process ledger', memoryStores, true],
    ['Lua ledger on the real redis-server', redisStores, sessionRedisUp],
  ];
  for (const [name, stores, up] of cases) {
    it.runIf(up)(`serves many calls from one deposit and refunds the rest on close (${name})`, async () => {
      const s = await shop({}, stores());
      const first = await refusal(s.client, { name: 'price_session' });
      expect(first.code).toBe(PAYMENT_REQUIRED_CODE);
      expect((first.data.challenges as JsonChallenge[]).map((c) => c.intent)).toEqual(['session']);
      const challenge = challengeOf(first, 'session');
      const deposit = (challenge.request as { depositInvoice: string }).depositInvoice;
      expect(decodeInvoice(deposit).amountMsat).toBe(10_000);
      const { preimage } = await s.wallet.pay(deposit);
      const sessionId = (challenge.request as { paymentHash: string }).paymentHash;
      const returned = await s.wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 3600 });
      const call = (payload: Record<string, unknown>) => s.client.callTool({ name: 'price_session', _meta: { [CREDENTIAL_META_KEY]: { challenge, payload } } });

      const opened = await call({ action: 'open', preimage, returnInvoice: returned.invoice });
      expect(text(opened as CallToolResult)).toBe('unit paid by session yes');
      expect(opened._meta?.[RECEIPT_META_KEY]).toMatchObject({ reference: sessionId, status: 'success' });
      for (let i = 0; i < 3; i++) expect((await call({ action: 'bearer', sessionId, preimage })).isError).toBeFalsy();
      expect(s.calls()).toBe(4);

      const closed = (await call({ action: 'close', sessionId, preimage })) as CallToolResult;
      expect(JSON.parse(text(closed))).toMatchObject({ status: 'closed', refundSats: 2, refundStatus: 'succeeded' });
      expect(closed._meta?.[RECEIPT_META_KEY]).toMatchObject({ reference: sessionId, refundSats: 2 });
      expect(await s.wallet.lookupInvoice(returned.paymentHash)).toMatchObject({ settled: true });
      expect(s.calls()).toBe(4);

      const after = await refusal(s.client, {
        name: 'price_session',
        _meta: { [CREDENTIAL_META_KEY]: { challenge, payload: { action: 'bearer', sessionId, preimage } } },
      });
      expect({ code: after.code, reason: after.data.code }).toEqual({ code: PAYMENT_VERIFICATION_FAILED_CODE, reason: 'SESSION_CLOSED' });
      // The deposit never passes as a charge of the per-call tool either.
      const asCharge = await refusal(s.client, {
        name: 'price',
        arguments: { currency: 'usd' },
        _meta: { [CREDENTIAL_META_KEY]: { challenge, payload: { preimage } } },
      });
      expect({ code: asCharge.code, reason: asCharge.data.code }).toEqual({ code: PAYMENT_VERIFICATION_FAILED_CODE, reason: 'METHOD_UNSUPPORTED' });
      expect(challengeOf(asCharge).intent).toBe('charge');
    });
  }

  it('refuses a bearer call past the balance with -32043 and a fresh deposit to top up with', async () => {
    const s = await shop();
    const challenge = challengeOf(await refusal(s.client, { name: 'price_session' }), 'session');
    const { preimage } = await s.wallet.pay((challenge.request as { depositInvoice: string }).depositInvoice);
    const sessionId = (challenge.request as { paymentHash: string }).paymentHash;
    const returned = await s.wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 3600 });
    const call = (payload: Record<string, unknown>) => s.client.callTool({ name: 'price_session', _meta: { [CREDENTIAL_META_KEY]: { challenge, payload } } });
    await call({ action: 'open', preimage, returnInvoice: returned.invoice });
    for (let i = 0; i < 4; i++) await call({ action: 'bearer', sessionId, preimage });
    const short = await refusal(s.client, {
      name: 'price_session',
      _meta: { [CREDENTIAL_META_KEY]: { challenge, payload: { action: 'bearer', sessionId, preimage } } },
    });
    expect(short.code).toBe(PAYMENT_VERIFICATION_FAILED_CODE);
    expect(short.data).toMatchObject({ code: 'INSUFFICIENT_BALANCE', balanceMsat: 0 });
    const topUpChallenge = challengeOf(short, 'session');
    const { preimage: topUpPreimage } = await s.wallet.pay((topUpChallenge.request as { depositInvoice: string }).depositInvoice);
    const topped = (await s.client.callTool({
      name: 'price_session',
      _meta: { [CREDENTIAL_META_KEY]: { challenge: topUpChallenge, payload: { action: 'topUp', sessionId, topUpPreimage } } },
    })) as CallToolResult;
    expect(JSON.parse(text(topped))).toEqual({ status: 'ok' });
    expect((await call({ action: 'bearer', sessionId, preimage })).isError).toBeFalsy();
    expect(s.calls()).toBe(6);
  });
});

describe('on the stdio transport, as raw JSON-RPC lines', () => {
  it('answers -32042 on the wire, and takes a credential from params._meta or (lifted) from the root _meta', async () => {
    const net = memoryDevNodeStore();
    const node = createDevNode({ store: net });
    const wallet = createDevNode({ store: net });
    const tools = toolPaywall({ provider: node, secret: SECRET, onError: () => {} });
    const server = new McpServer({ name: 'stdio-shop', version: '1' });
    tools.register(server, 'price', { priceSats: 1 }, async () => ({ content: [{ type: 'text', text: 'paid' }] }));
    const input = new PassThrough();
    const output = new PassThrough();
    await server.connect(new StdioServerTransport(input, output));
    const lines: Record<string, unknown>[] = [];
    let buffered = '';
    output.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      let end: number;
      while ((end = buffered.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buffered.slice(0, end)));
        buffered = buffered.slice(end + 1);
      }
    });
    const send = async (message: Record<string, unknown>) => {
      input.write(`${JSON.stringify(message)}\n`);
      await vi_waitFor(() => lines.some((line) => line.id === message.id));
      return lines.find((line) => line.id === message.id)! as {
        result?: Record<string, unknown>;
        error?: { code: number; message: string; data: Record<string, unknown> };
      };
    };
    await send({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    input.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
    const unpaid = await send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'price', arguments: {} } });
    expect(unpaid.error).toMatchObject({ code: -32042, message: 'Payment Required', data: { httpStatus: 402 } });
    const challenge = (unpaid.error!.data.challenges as JsonChallenge[])[0]!;
    const { preimage } = await wallet.pay(invoiceOf(challenge));
    // A generic JSON-RPC client puts the credential at the root: lifted into params._meta before the SDK reads the message.
    const lifted = liftRootCredential({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'price', arguments: {} },
      _meta: { [CREDENTIAL_META_KEY]: { challenge, payload: { preimage } } },
    }) as Record<string, unknown>;
    expect(lifted).not.toHaveProperty('_meta');
    const paid = await send(lifted);
    expect(paid.result).toMatchObject({ content: [{ type: 'text', text: 'paid' }], _meta: { [RECEIPT_META_KEY]: { challengeId: challenge.id } } });
    const again = await send({ ...lifted, id: 4 });
    expect(again.error).toMatchObject({ code: -32043, message: 'Payment Verification Failed', data: { code: 'TOKEN_ALREADY_USED' } });
    await server.close();
  });
});

async function vi_waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const started = Date.now();
  while (!condition()) {
    if (Date.now() - started > timeoutMs) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
