// An MCP server selling tools over the Payment scheme's MCP transport, built
// with code we did not write: the MCP SDK's server on stateless Streamable
// HTTP (a new server and transport per request, as a Vercel function runs
// it) and mppx's MCP transport (`Transport.mcpSdk()`: -32042 with
// `data.challenges`, the credential read from `_meta`, the receipt put in the
// result's `_meta`), with a Lightning charge method whose invoices come from
// an in-process dev node and whose verification checks SHA256(preimage) =
// the payment hash, once per payment hash. The low-level SDK server is used:
// McpServer turns a tool's thrown error into an `isError` result, which would
// hide the -32042. Beside it, on the same origin, the dev wallet
// (/api/dev/pay) that `--dev <origin>` pays with.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Mppx, Transport } from 'mppx/server';
import type { DevNode } from 'l402-paywall/backends';
import { listen } from './listen.js';
import { countedDevPay, devNodeInvoice, lightningChargeServer, MPPX_SECRET } from './mpp-server.js';

export const MPPX_TOOL_REALM = 'mcp.mppx.test';

export interface MppxToolServer {
  /** The MCP endpoint: http://127.0.0.1:<port>/mcp */
  url: string;
  /** Every tools/call's `params._meta` credential, in order (undefined for an unpaid call). */
  credentials: unknown[];
  /** Tool calls served after payment. */
  served: number;
  /** Invoices the dev wallet at /api/dev/pay (on the same origin, what `--dev <origin>` pays with) paid. */
  devPayments: number;
  close(): Promise<void>;
}

/** What each tool sells: `weather` at 2 sats, `dear` at 50, `echo` for free. */
const PRICES: Record<string, string | undefined> = { weather: '2', dear: '50' };

export async function startMppxToolServer(node: DevNode): Promise<MppxToolServer> {
  const method = lightningChargeServer(devNodeInvoice(node, 'mppx mcp test'));
  const mppx = Mppx.create({ methods: [method], secretKey: MPPX_SECRET, realm: MPPX_TOOL_REALM, transport: Transport.mcpSdk() });
  const state = { credentials: [] as unknown[], served: 0, devPayments: 0 };
  const devPay = countedDevPay(node, state);

  function mcpServer(): Server {
    const server = new Server({ name: 'mppx-tools', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'weather', description: 'The weather; 2 sats a call (Payment, lightning/charge)', inputSchema: { type: 'object' as const } },
        { name: 'dear', description: '50 sats a call', inputSchema: { type: 'object' as const } },
        { name: 'echo', description: 'free', inputSchema: { type: 'object' as const } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const { name, arguments: args } = request.params;
      state.credentials.push((request.params._meta as Record<string, unknown> | undefined)?.['org.paymentauth/credential']);
      const text = JSON.stringify({ tool: name, arguments: args ?? {} });
      const price = PRICES[name];
      if (name === 'echo') return { content: [{ type: 'text' as const, text }] };
      if (price === undefined) throw new McpError(-32602, `no tool ${name}`);
      const result = await mppx['lightning/charge']({ amount: price, currency: 'sat', description: `${name} tool` })(extra as never);
      if (result.status === 402) throw result.challenge;
      state.served++;
      return result.withReceipt({ content: [{ type: 'text' as const, text }] }) as never;
    });
    return server;
  }

  const served = await listen(async (request) => {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/dev/pay') return devPay(request);
    if (pathname !== '/mcp') return new Response('not found', { status: 404 });
    // Stateless: a server and a transport of its own for each request.
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    const server = mcpServer();
    await server.connect(transport);
    return transport.handleRequest(request);
  });
  return Object.assign(state, { url: `${served.url}/mcp`, close: served.close });
}
