// POST /api/mcp: the demo sold as MCP tools on stateless Streamable HTTP, over
// the real local server. Its listing states each tool's price; an unpaid call
// is -32042 with a Lightning charge challenge for a dev-node invoice; mppx's
// McpClient.wrap (a peer implementation) with a lightning/charge method
// paying from the dev wallet (POST /api/dev/pay) pays it on its first try and
// reads content and receipt; a credential is good once, and one shown over
// HTTP (GET /api/demo/btc-price) is refused as a tool credential and the other
// way round (one replay store); the session-priced tool serves calls from one
// deposit and refunds the rest on close; a credential at the message's root
// is read too; what the transport refuses is {error, code}; invoices are rate
// limited per client as for the other demo routes.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { McpClient } from 'mppx/mcp/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeInvoice } from 'l402-paywall/lightning';
import { canonicalJson, formatCredential, parsePaymentChallenges } from 'l402-paywall/mpp';
import type { JsonChallenge } from 'l402-paywall/mcp-tools';
import { createRateLimiter } from '../../lib/store/index.js';
import { mppxLightningCharge } from '../support/mppx-lightning.js';
import { useDevServer } from '../support/server.js';

const server = useDevServer();
const clients: Client[] = [];
// Opened and migrated before the first paid call logs its payment: PGlite's migration would hold the event loop mid-test.
beforeAll(() => server.ctx.database(), 60_000);
afterAll(async () => {
  for (const client of clients) await client.close();
});

const CREDENTIAL = 'org.paymentauth/credential';
const RECEIPT = 'org.paymentauth/receipt';

async function connect(): Promise<Client> {
  const client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/api/mcp`)));
  clients.push(client);
  return client;
}

async function devPay(invoice: string): Promise<string> {
  const paid = await fetch(`${server.url}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice }) });
  expect(paid.status).toBe(200);
  return ((await paid.json()) as { preimage: string }).preimage;
}

async function refusal(client: Client, params: Parameters<Client['callTool']>[0]): Promise<McpError & { data: Record<string, unknown> }> {
  const error = await client.callTool(params).then(
    (result) => new Error(`expected a refusal, got ${JSON.stringify(result)}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  return error as McpError & { data: Record<string, unknown> };
}

const challengeOf = (error: { data: Record<string, unknown> }, intent = 'charge') =>
  (error.data.challenges as JsonChallenge[]).find((c) => c.intent === intent)!;
const invoiceOf = (challenge: JsonChallenge, member = 'invoice') =>
  member === 'invoice' ? (challenge.request.methodDetails as { invoice: string }).invoice : (challenge.request[member] as string);
const text = (result: unknown) => ((result as CallToolResult).content[0] as { text: string }).text;

describe('POST /api/mcp', () => {
  it('lists the paid demo tools, each stating its price, and advertises the Lightning payment method', async () => {
    const client = await connect();
    expect(client.getServerCapabilities()?.experimental).toEqual({ payment: { methods: { lightning: { intents: ['charge', 'session'] } } } });
    const { tools } = await client.listTools();
    const price = tools.find((t) => t.name === 'btc_price')!;
    expect(price.description).toMatch(/Price: 1 sat per call, paid over Lightning/);
    expect(price._meta?.['dev.l402paywall/price']).toEqual({ method: 'lightning', currency: 'sat', amount: 1, intents: ['charge'] });
    const session = tools.find((t) => t.name === 'btc_price_session')!;
    expect(session._meta?.['dev.l402paywall/price']).toMatchObject({ amount: 1, intents: ['session'] });
  });

  it('answers an unpaid call -32042 with a lightning/charge challenge for a dev-node invoice', async () => {
    const client = await connect();
    const error = await refusal(client, { name: 'btc_price' });
    expect(error.code).toBe(-32042);
    expect(error.data).toMatchObject({ httpStatus: 402, code: 'PAYMENT_REQUIRED' });
    const challenge = challengeOf(error);
    expect(challenge).toMatchObject({
      method: 'lightning',
      intent: 'charge',
      request: { amount: '1', currency: 'sat', methodDetails: { network: 'regtest' } },
    });
    const invoice = decodeInvoice(invoiceOf(challenge));
    expect(invoice.amountMsat).toBe(1000);
    expect(invoice.paymentHash).toBe((challenge.request.methodDetails as { paymentHash: string }).paymentHash);
  });

  it('is paid on its first try by mppx McpClient.wrap with a dev-wallet lightning/charge method: content and receipt', async () => {
    const counter = { payments: 0 };
    const client = McpClient.wrap(await connect(), { methods: [mppxLightningCharge(devPay, counter)] });
    const result = (await client.callTool({ name: 'btc_price' })) as CallToolResult & { receipt?: Record<string, unknown> };
    expect(JSON.parse(text(result))).toMatchObject({ usd: expect.any(Number), source: expect.any(String) });
    expect(result.receipt).toMatchObject({ method: 'lightning', status: 'success', reference: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect(counter.payments).toBe(1);
  });

  it('takes a credential once: the same one again is -32043 with a fresh challenge', async () => {
    const client = await connect();
    const challenge = challengeOf(await refusal(client, { name: 'btc_price' }));
    const credential = { challenge, payload: { preimage: await devPay(invoiceOf(challenge)) } };
    const paid = await client.callTool({ name: 'btc_price', _meta: { [CREDENTIAL]: credential } });
    expect(paid._meta?.[RECEIPT]).toMatchObject({ challengeId: challenge.id });
    const again = await refusal(client, { name: 'btc_price', _meta: { [CREDENTIAL]: credential } });
    expect({ code: again.code, reason: again.data.code }).toEqual({ code: -32043, reason: 'TOKEN_ALREADY_USED' });
    expect(challengeOf(again).id).not.toBe(challenge.id);
  });

  it('refuses a credential used over HTTP as a tool credential, and the other way round', async () => {
    const client = await connect();
    // Paid and used over HTTP first.
    const challenged = await fetch(`${server.url}/api/demo/btc-price`);
    const header = parsePaymentChallenges(challenged.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'charge')!;
    const preimage = await devPay(((await challenged.json()) as { invoice: string }).invoice);
    const served = await fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization: formatCredential(header, preimage) } });
    expect(served.status).toBe(200);
    const request = JSON.parse(Buffer.from(header.request, 'base64url').toString()) as Record<string, unknown>;
    const asTool = await refusal(client, { name: 'btc_price', _meta: { [CREDENTIAL]: { challenge: { ...header, request }, payload: { preimage } } } });
    expect({ code: asTool.code, reason: asTool.data.code }).toEqual({ code: -32043, reason: 'TOKEN_ALREADY_USED' });

    // Paid and used as a tool first.
    const challenge = challengeOf(await refusal(client, { name: 'btc_price' }));
    const toolPreimage = await devPay(invoiceOf(challenge));
    expect(
      (await client.callTool({ name: 'btc_price', _meta: { [CREDENTIAL]: { challenge, payload: { preimage: toolPreimage } } } }))._meta?.[RECEIPT],
    ).toBeDefined();
    const asHeader = { ...challenge, request: Buffer.from(canonicalJson(challenge.request)).toString('base64url') };
    const overHttp = await fetch(`${server.url}/api/demo/btc-price`, { headers: { authorization: formatCredential(asHeader, toolPreimage) } });
    expect(overHttp.status).toBe(402);
    expect(((await overHttp.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
  });

  it('serves the session-priced tool from one deposit and refunds the rest on close', async () => {
    const client = await connect();
    const challenge = challengeOf(await refusal(client, { name: 'btc_price_session' }), 'session');
    const deposit = invoiceOf(challenge, 'depositInvoice');
    const depositMsat = decodeInvoice(deposit).amountMsat!;
    const preimage = await devPay(deposit);
    const sessionId = challenge.request.paymentHash as string;
    const returned = await server.ctx.devNode!.createAmountlessInvoice({ memo: 'refund', expirySeconds: 3600 });
    const call = (payload: Record<string, unknown>) => client.callTool({ name: 'btc_price_session', _meta: { [CREDENTIAL]: { challenge, payload } } });
    expect(JSON.parse(text(await call({ action: 'open', preimage, returnInvoice: returned.invoice })))).toHaveProperty('usd');
    for (let i = 0; i < 3; i++) expect((await call({ action: 'bearer', sessionId, preimage }))._meta?.[RECEIPT]).toMatchObject({ reference: sessionId });
    const closed = JSON.parse(text(await call({ action: 'close', sessionId, preimage })));
    expect(closed).toMatchObject({ status: 'closed', refundStatus: 'succeeded', refundSats: depositMsat / 1000 - 4 });
    expect(await server.ctx.sessions.get(sessionId)).toMatchObject({ paidMsat: depositMsat, spentMsat: 4000, status: 'closed' });
  });

  it("reads a credential at the message's root too", async () => {
    const client = await connect();
    const challenge = challengeOf(await refusal(client, { name: 'btc_price' }));
    const preimage = await devPay(invoiceOf(challenge));
    const answer = await fetch(`${server.url}/api/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'btc_price', arguments: {} },
        _meta: { [CREDENTIAL]: { challenge, payload: { preimage } } },
      }),
    });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as { id: number; result: CallToolResult };
    expect(body.id).toBe(7);
    expect(body.result._meta?.[RECEIPT]).toMatchObject({ challengeId: challenge.id });
  });

  it('answers what the transport refuses as {error, code}', async () => {
    const post = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/api/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body,
      });
    const cases: [Response, number, string][] = [
      [await post('{not json'), 400, 'INVALID_JSON'],
      [await post('{"jsonrpc":"1.0","id":1,"method":"tools/list"}'), 400, 'INVALID_JSONRPC'],
      [await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { accept: 'text/html' }), 406, 'NOT_ACCEPTABLE'],
      [await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', { 'content-type': 'text/plain' }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      [await fetch(`${server.url}/api/mcp`), 405, 'METHOD_NOT_ALLOWED'],
      [await post(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"pad":"${'x'.repeat(70_000)}"}}`), 413, 'BODY_TOO_LARGE'],
    ];
    for (const [response, status, code] of cases) {
      expect(response.status).toBe(status);
      expect(await response.json()).toMatchObject({ error: expect.any(String), code });
    }
  });

  it('limits invoices per client as the other demo routes do: -32000 with httpStatus 429', async () => {
    // The service's own limiter, with a budget of 2 invoices a minute (the demo's 402s and calls share it).
    const invoiceLimiter = createRateLimiter(server.ctx.config.store, { limit: 2, windowMs: 60_000, prefix: 'ratelimit:mcp-test' });
    server.use({ ...server.ctx, invoiceLimiter });
    try {
      const client = await connect();
      for (let i = 0; i < 2; i++) expect((await refusal(client, { name: 'btc_price' })).code).toBe(-32042);
      const limited = await refusal(client, { name: 'btc_price' });
      expect(limited.code).toBe(-32000);
      expect(limited.data).toMatchObject({ httpStatus: 429, code: 'RATE_LIMITED', retryAfterSeconds: expect.any(Number) });
    } finally {
      server.restore();
    }
  });
});
