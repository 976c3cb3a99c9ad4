// The MCP server as an agent meets it: the SDK's own Client starts
// `l402-paywall mcp --dev <service> --max-sats 5` over a real stdio transport,
// lists the paid APIs of the real local server and calls (pays) its demo.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { useDevServer } from '../support/server.js';
import { addressProofHeaders } from '../support/directory.js';
import { L402_BIN as BIN } from '../support/bins.js';

const server = useDevServer(() => ({ DEMO_PRICE_SATS: '2' }));
let client: Client;

function env(): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env))
    if (v !== undefined && !/^(NWC_URL|LNBITS_|PHOENIXD_|LND_|CLN_|BLINK_|LIGHTNING_NETWORK)/.test(k)) clean[k] = v;
  return clean;
}

interface ToolResult {
  isError?: boolean;
  content: { type: string; text: string }[];
  structuredContent?: Record<string, unknown>;
}
const call = async (name: string, args: Record<string, unknown>) => (await client.callTool({ name, arguments: args })) as ToolResult;
const json = (result: ToolResult) => JSON.parse(result.content[0]!.text) as Record<string, unknown>;

beforeAll(async () => {
  await server.ctx.database(); // opened (and migrated) once, before any test waits on it
  const register = async (body: Record<string, unknown>) => {
    const proof = await addressProofHeaders(server.ctx, String(body.lightning_address));
    const answer = await fetch(`${server.url}/api/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...proof },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
  };
  await register({
    url: `${server.url}/api/demo/btc-price`,
    name: 'BTC price',
    price_sats: 2,
    lightning_address: 'demo@example.com',
    category: 'finance',
    description: 'Live BTC price',
  });
  await register({ url: 'https://weather.example/now', name: 'Weather', price_sats: 3, lightning_address: 'demo@example.com', category: 'weather' });
  client = new Client({ name: 'l402-test-agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: ['--import', 'tsx', BIN, 'mcp', '--dev', server.url, '--max-sats', '5', '--budget-sats', '5'],
      env: env(),
      stderr: 'ignore',
    }),
  );
});

afterAll(async () => {
  await client?.close();
});

describe('l402-paywall mcp', () => {
  it('offers list_paid_apis, call_paid_api, list_paid_tools and call_paid_tool', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['call_paid_api', 'call_paid_tool', 'list_paid_apis', 'list_paid_tools']);
    const callTool = tools.find((t) => t.name === 'call_paid_api')!;
    expect(Object.keys(callTool.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['url', 'method', 'body', 'max_price_sats']));
  });

  it('lists the directory of the service, filtered by category', async () => {
    const all = json(await call('list_paid_apis', {}));
    expect(all.count).toBe(2);
    expect(all.openapi).toBe(`${server.url}/api/openapi.json`);
    const finance = json(await call('list_paid_apis', { category: 'finance' }));
    expect(finance.apis).toEqual([
      { url: `${server.url}/api/demo/btc-price`, name: 'BTC price', description: 'Live BTC price', price_sats: 2, category: 'finance' },
    ]);
    expect((await call('list_paid_apis', { category: 'nonsense' })).isError).toBe(true);
    const one = json(await call('list_paid_apis', { limit: 1 }));
    expect(one).toMatchObject({ count: 2 });
    expect(one.apis).toHaveLength(1);
  });

  it('calls (and pays) the demo, within the session budget', async () => {
    const first = await call('call_paid_api', { url: `${server.url}/api/demo/btc-price` });
    expect(first.isError).toBeFalsy();
    const result = json(first);
    expect(result).toMatchObject({ status: 200, sats_paid: 2, fee_sats: 0, session_spent_sats: 2, session_budget_left_sats: 3 });
    expect((result.headers as Record<string, string>)['content-type']).toContain('application/json');
    expect(JSON.parse(result.body as string)).toMatchObject({ source: 'simulated' });
    expect(first.structuredContent).toEqual(result);

    // Above the call's own maximum: refused, nothing paid.
    const dear = json(await call('call_paid_api', { url: `${server.url}/api/demo/btc-price`, max_price_sats: 1 }));
    expect(dear).toMatchObject({ code: 'PRICE_ABOVE_MAXIMUM', refused: true });

    await call('call_paid_api', { url: `${server.url}/api/demo/btc-price` }); // 4 of 5 sats spent
    const over = await call('call_paid_api', { url: `${server.url}/api/demo/btc-price` });
    expect(over.isError).toBe(true);
    expect(json(over)).toMatchObject({ code: 'BUDGET_EXCEEDED', refused: true });
  });

  it('calls free routes and reports errors as the server gave them', async () => {
    const free = json(await call('call_paid_api', { url: `${server.url}/api/verify`, method: 'POST', body: JSON.stringify({ token: 'L402 abc:def' }) }));
    expect(free).toMatchObject({ status: 200, sats_paid: 0 });
    expect(JSON.parse(free.body as string)).toMatchObject({ valid: false });
  });
});
