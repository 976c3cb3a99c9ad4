// POST /api/mcp: the demo sold as MCP tools (l402-paywall/mcp-tools), an MCP
// server on stateless Streamable HTTP: a fresh McpServer per request (the
// SDK's stateless pattern: nothing is kept between requests, so any function
// instance answers any call), the tools' paywall built once per service
// context. Both tools sell the live BTC price under GET /api/demo/btc-price's
// route, with its provider, replay store, invoice rate limit, payment log and
// events (lib/service/demo.ts DemoSale): one payment opens one request or one
// call, whichever door it is shown at, never both.
//
//   btc_price          DEMO_PRICE_SATS a call (the Payment charge)
//   btc_price_session  the same from a prepaid session (open, bearer, topUp, close)
//
// What the SDK's transport refuses (406, 415, a message that is not JSON-RPC)
// is answered as every 4xx of the service is, {error, code}, with the
// JSON-RPC error beside it.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import { liftRootCredential, toolPaywall, type ToolPaywall } from 'l402-paywall/mcp-tools';
import { HttpError, errorResponse } from '../http/errors.js';
import { readRequestText } from '../http/input.js';
import { DEMO_ROUTE, demoSale, type DemoSale } from './demo.js';
import { servicePriceFeed, type PriceFeed } from './records/price.js';
import { servicePart, type ServiceContext } from './context.js';

export const MCP_PRICE_TOOL = 'btc_price';
export const MCP_SESSION_TOOL = 'btc_price_session';
/** A JSON-RPC message with a credential (at most ~8 KB) and arguments; far above what the demo's tools take. */
const MCP_BODY_LIMIT = 64 * 1024;
const SERVER_INFO = { name: 'l402-paywall-demo', version: '1.0.0' };

interface DemoTools {
  tools: ToolPaywall;
  sale: DemoSale;
  feed: PriceFeed;
}

const builtDemoTools = servicePart('demo MCP tools', (ctx): DemoTools => {
  const sale = demoSale(ctx);
  return { sale, feed: servicePriceFeed(ctx), tools: toolPaywall(sale.options(DEMO_ROUTE, sale.chargeMemo)) };
});

/** POST /api/mcp: one JSON-RPC message (or batch) answered by a fresh MCP server with the demo's paid tools. */
export async function demoMcp(ctx: ServiceContext, request: Request): Promise<Response> {
  const text = await readRequestText(request, { limit: MCP_BODY_LIMIT });
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    throw new HttpError(400, 'INVALID_JSON', 'Request body is not valid JSON: send one JSON-RPC 2.0 message (or a batch)');
  }
  const server = demoServer(ctx, ctx.part(builtDemoTools));
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    // A generic JSON-RPC client may put the credential at the message's root; the SDK reads it from params._meta.
    return asServiceError(await transport.handleRequest(request, { parsedBody: liftRootCredential(message) }));
  } finally {
    await server.close();
  }
}

function demoServer(ctx: ServiceContext, { tools, sale, feed }: DemoTools): McpServer {
  const intents = sale.session ? ['charge', 'session'] : ['charge'];
  const server = new McpServer(SERVER_INFO, {
    // The transport draft's capability advertisement: the methods and intents it takes.
    capabilities: { experimental: { payment: { methods: { lightning: { intents } } } } },
  });
  const price = async () => ({ content: [{ type: 'text' as const, text: JSON.stringify(await feed.current()) }] });
  const priceSats = ctx.config.demo.priceSats;
  tools.register(
    server,
    MCP_PRICE_TOOL,
    {
      title: 'BTC price',
      description: 'The live BTC price in USD: {usd, source, fetchedAt} (the demo of GET /api/demo/btc-price, sold as a tool).',
      priceSats,
      route: DEMO_ROUTE,
    },
    price,
  );
  if (sale.session)
    tools.register(
      server,
      MCP_SESSION_TOOL,
      {
        title: 'BTC price (prepaid session)',
        description:
          'The live BTC price in USD, one unit of a prepaid session per call: pay the deposit of the session challenge, then call with action open, bearer, topUp or close (docs/sessions.md).',
        priceSats,
        session: sale.session,
        perCall: false,
        route: DEMO_ROUTE,
      },
      price,
    );
  return server;
}

const STATUS_CODES: Record<number, string> = {
  400: 'INVALID_JSONRPC',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  406: 'NOT_ACCEPTABLE',
  413: 'BODY_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
};

/** The transport's own 4xx (a JSON-RPC error with no id) as the service's {error, code}, the JSON-RPC error kept beside it. */
async function asServiceError(response: Response): Promise<Response> {
  if (response.status < 400 || response.status >= 500) return response;
  const text = await response.text();
  let jsonrpcError: { code?: unknown; message?: unknown } | undefined;
  try {
    jsonrpcError = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
  } catch {
    jsonrpcError = undefined;
  }
  const message = typeof jsonrpcError?.message === 'string' ? jsonrpcError.message : text.slice(0, 200) || 'Not a request this MCP server takes';
  const headers: Record<string, string> = {};
  const allow = response.headers.get('allow');
  if (allow) headers.Allow = allow;
  return errorResponse(response.status, STATUS_CODES[response.status] ?? 'INVALID_REQUEST', message, jsonrpcError ? { jsonrpcError } : {}, headers);
}
