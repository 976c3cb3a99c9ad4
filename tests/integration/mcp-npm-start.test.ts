// POST /api/mcp on the service as a user starts it (`npm start`, its
// embedded defaults): an MCP client over Streamable HTTP lists the paid demo
// tool with its price, and an unpaid call is -32042 with a lightning/charge
// challenge for a dev-node invoice of that price. The rest of the tool's
// story (paid by mppx's McpClient, replay across HTTP and MCP, sessions) runs
// against the in-process server in mcp-service.test.ts.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { decodeInvoice } from 'l402-paywall/lightning';
import type { JsonChallenge } from 'l402-paywall/mcp-tools';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';

let server: ServerProcess;
let client: Client;
beforeAll(async () => {
  server = await startServerProcess({}, { viaNpm: true });
  client = new Client({ name: 'test-agent', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/api/mcp`)));
});
afterAll(async () => {
  await client?.close();
  await server?.stop();
});

it('lists btc_price with its price, and answers an unpaid call -32042 with a lightning/charge challenge for a dev-node invoice', async () => {
  const { tools } = await client.listTools();
  const tool = tools.find((t) => t.name === 'btc_price')!;
  expect(tool.description).toMatch(/Price: 1 sat per call, paid over Lightning/);
  expect(tool._meta?.['dev.l402paywall/price']).toEqual({ method: 'lightning', currency: 'sat', amount: 1, intents: ['charge'] });

  const error = await client.callTool({ name: 'btc_price' }).then(
    (result) => new Error(`expected a refusal, got ${JSON.stringify(result)}`),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(McpError);
  const refused = error as McpError & { data: { challenges: JsonChallenge[] } };
  expect(refused.code).toBe(-32042);
  const challenge = refused.data.challenges.find((c) => c.intent === 'charge')!;
  expect(challenge).toMatchObject({ method: 'lightning', request: { amount: '1', currency: 'sat', methodDetails: { network: 'regtest' } } });
  const invoice = decodeInvoice((challenge.request.methodDetails as { invoice: string }).invoice);
  expect(invoice).toMatchObject({ network: 'regtest', amountMsat: 1000 });
});
