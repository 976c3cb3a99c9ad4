// `l402-paywall/mcp-tools`: sell MCP tools per call or by the prepaid session
// over the Payment scheme's MCP transport (draft-payment-transport-mcp-00), on
// servers built on @modelcontextprotocol/sdk (an optional peer; only its types
// are imported, so this entry runs wherever the SDK does: stdio, or a stateless
// Streamable HTTP function).
import { createToolPaywall, type ToolPaywall, type ToolPaywallOptions } from './adapters/mcp-tool.js';
import { loadServerAudit } from './events/load-builder.js';

export type { PaidToolConfig, PaidToolExtra, PaidToolHandler, ToolPaywall, ToolPaywallOptions } from './adapters/mcp-tool.js';
export {
  CREDENTIAL_META_KEY,
  INTERNAL_ERROR_CODE,
  INVALID_PARAMS_CODE,
  PAYMENT_REQUIRED_CODE,
  PAYMENT_VERIFICATION_FAILED_CODE,
  PRICE_META_KEY,
  RECEIPT_META_KEY,
  SERVER_ERROR_CODE,
  liftRootCredential,
} from './adapters/mcp-tool-wire.js';
export type { JsonChallenge } from './adapters/mcp-tool-wire.js';

/**
 * The paywall for MCP tools: withL402's options but those each tool states
 * (priceSats, route, session); `register(server, name, config, handler)` adds
 * a paid tool to an McpServer. Build it once and register on every server
 * made from it (a stateless function makes one per request).
 */
export function toolPaywall(options: ToolPaywallOptions): ToolPaywall {
  return createToolPaywall(options, loadServerAudit);
}
