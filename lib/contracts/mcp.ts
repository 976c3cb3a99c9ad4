// POST /api/mcp (api/mcp.ts): the demo sold as MCP tools, on stateless Streamable HTTP. What it takes
// and answers, declared once; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

/** One JSON-RPC 2.0 message, or a batch of them: the MCP SDK's transport checks each one. */
export const Body = z.union([loose({ jsonrpc: z.literal('2.0') }), z.array(loose({ jsonrpc: z.literal('2.0') }))]);

const JsonRpcAnswer = loose({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: loose({ code: z.number().int(), message: z.string(), data: z.unknown().optional() }).optional(),
});

export const contract = routeContract('/api/mcp', {
  POST: {
    summary: 'The demo as paid MCP tools (Model Context Protocol, stateless Streamable HTTP)',
    description:
      'An MCP server: `initialize`, `tools/list`, `tools/call`. Send `Content-Type: application/json` and `Accept: application/json, text/event-stream`. ' +
      'Tools: `btc_price` (the live BTC price, DEMO_PRICE_SATS a call, the Payment charge) and `btc_price_session` (the same, from a prepaid session), each listing stating its price (description and `_meta["dev.l402paywall/price"]`). ' +
      'An unpaid call answers JSON-RPC error -32042 whose `data.challenges` are Payment challenges as JSON objects (a Lightning charge or session for a fresh invoice); ' +
      'repeat the call with the credential `{challenge, payload: {preimage}}` in `params._meta["org.paymentauth/credential"]` (draft-payment-transport-mcp-00); ' +
      'the result carries the receipt in `_meta["org.paymentauth/receipt"]`; a refused credential answers -32043 with fresh challenges. ' +
      'The charge tool is sold under the route of GET /api/demo/btc-price: one payment opens one request or one call, never both.',
    tags: ['demo'],
    body: Body,
    responses: {
      200: { description: 'The JSON-RPC answer (a payment refusal is a JSON-RPC error in it)', schema: z.union([JsonRpcAnswer, z.array(JsonRpcAnswer)]) },
      202: { description: 'A notification or response accepted (no body)' },
    },
  },
});
