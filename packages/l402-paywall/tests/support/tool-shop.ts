// A paid-tool MCP server the tests call over HTTP as a deployed one is
// called: the SDK's McpServer on stateless Streamable HTTP (a fresh server
// and transport per request, as a Vercel function runs it), its tools
// registered by the test with a toolPaywall built once. Answered through a
// fetch function (no port): pass `fetch` to the client under test.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { liftRootCredential } from 'l402-paywall/mcp-tools';

export const TOOL_SHOP_URL = 'https://tools.example/mcp';

/** A fetch answering POST /mcp with a fresh McpServer on which `register` put the tools. */
export function statelessToolServer(register: (server: McpServer) => void): (input: string | URL | Request, init?: RequestInit) => Promise<Response> {
  return async (input, init) => {
    const request = input instanceof Request && init === undefined ? input : new Request(input, init);
    if (new URL(request.url).pathname !== '/mcp') return new Response('not found', { status: 404 });
    const server = new McpServer({ name: 'tool-shop', version: '1.0.0' });
    register(server);
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      const body = request.method === 'POST' ? liftRootCredential(await request.clone().json()) : undefined;
      return await transport.handleRequest(request, body === undefined ? undefined : { parsedBody: body });
    } finally {
      await server.close();
    }
  };
}
