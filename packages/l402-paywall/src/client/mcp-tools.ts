// Paid tools of any MCP server on Streamable HTTP, for programs and agents:
// listed with their prices, and called with the same wallet, limits and
// checks as fetchWithL402 (options.ts). A call refused with -32042 is paid
// once (mcp-payment.ts reads its challenges): each invoice decoded and checked
// here (offers.ts, invoice-check.ts: amount against maxPriceSats, network,
// expiry, the challenge's own fields against its invoice), the budget charged
// and the invoice paid at most once per wallet (paying.ts), then the call is
// sent again with the credential. What comes back is the answer: a second
// -32042 or -32043 is never paid again within the same call.
import { L402ClientError } from './errors.js';
import { credentialMeta, paymentRequired, toolChallenges, toolReceipt } from './mcp-payment.js';
import { McpToolError, McpTransportError, type ToolPaymentReceipt } from './mcp-errors.js';
import { rpcConnection, type RpcAnswer, type RpcConnection } from './mcp-rpc.js';
import { chooseOffer } from './offers.js';
import { checkOptions, type FetchWithL402Options } from './options.js';
import { payInvoice } from './paying.js';
import { readToolList, type PaidTool } from './mcp-listing.js';

export { McpToolError, McpTransportError } from './mcp-errors.js';
export type { ToolPaymentReceipt } from './mcp-errors.js';
export type { PaidTool, ToolPrice } from './mcp-listing.js';

/** fetchWithL402's options that apply to tool calls, and the most of one answer read. */
export interface McpToolsOptions
  extends Pick<FetchWithL402Options, 'wallet' | 'maxPriceSats' | 'budget' | 'maxFeeSats' | 'network' | 'fetch' | 'destinations' | 'timeoutMs'> {
  /** The most of one JSON-RPC answer read, in bytes; a larger one fails the call (McpTransportError). Default 4 MiB. */
  maxAnswerBytes?: number;
  /** How this client names itself to the server (initialize's clientInfo). */
  clientInfo?: { name: string; version: string };
}

/** A tool's result (MCP's CallToolResult: content, structuredContent, isError, _meta), and what the call paid. */
export interface PaidToolResult {
  result: Record<string, unknown> & { content?: unknown[]; isError?: boolean };
  /** Undefined when the tool was free. */
  receipt?: ToolPaymentReceipt;
}

export interface McpToolClient {
  /** The server's MCP endpoint. */
  readonly url: URL;
  /** Its tools, each with the price its listing states (`price`), when it states one. */
  listTools(): Promise<PaidTool[]>;
  /**
   * Calls a tool, paying a Lightning charge it asks for (-32042) within
   * maxPriceSats (the client's, or `maxPriceSats` here when lower) and the
   * budget. Throws L402ClientError when it refused to pay or the wallet
   * failed, McpToolError for a JSON-RPC error, McpTransportError when the
   * server did not answer as an MCP server.
   */
  callTool(
    name: string,
    args?: Record<string, unknown>,
    call?: { maxPriceSats?: number; signal?: AbortSignal; meta?: Record<string, unknown> },
  ): Promise<PaidToolResult>;
  /** Ends the server's MCP session, if it gave one. */
  close(): Promise<void>;
}

const DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024;

/** A client of the MCP server at `url` (its Streamable HTTP endpoint, such as https://host/api/mcp); nothing is sent until used. */
export function mcpToolClient(url: string | URL, options: McpToolsOptions): McpToolClient {
  checkOptions(options);
  const endpoint = new URL(url);
  if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:') throw new TypeError(`mcpToolClient: not an http(s) URL: ${endpoint.href}`);
  const maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  if (!Number.isSafeInteger(maxAnswerBytes) || maxAnswerBytes <= 0)
    throw new TypeError(`mcpToolClient: maxAnswerBytes must be a whole number of bytes above 0, got ${maxAnswerBytes}`);
  const connection = rpcConnection(endpoint, {
    options,
    maxAnswerBytes,
    clientName: options.clientInfo?.name ?? 'l402-paywall',
    clientVersion: options.clientInfo?.version ?? '1',
  });
  return {
    url: endpoint,
    listTools: () => readToolList(connection),
    callTool: (name, args = {}, call = {}) => callPaidTool(connection, options, name, args, call),
    close: () => connection.close(),
  };
}

async function callPaidTool(
  connection: RpcConnection,
  options: McpToolsOptions,
  name: string,
  args: Record<string, unknown>,
  call: { maxPriceSats?: number; signal?: AbortSignal; meta?: Record<string, unknown> },
): Promise<PaidToolResult> {
  const { url } = connection;
  const maxPriceSats = Math.min(call.maxPriceSats ?? options.maxPriceSats, options.maxPriceSats);
  if (!Number.isSafeInteger(maxPriceSats) || maxPriceSats <= 0)
    throw new TypeError(`callTool: maxPriceSats must be a positive whole number, got ${maxPriceSats}`);
  const limits: FetchWithL402Options = { ...options, maxPriceSats, scheme: 'Payment' };
  const params = { name, arguments: args, ...(call.meta && { _meta: call.meta }) };

  // 1. the call, unpaid
  const first = await connection.request('tools/call', params, call.signal);
  const asked = paymentRequired(first);
  if (!asked) return served(first, name);

  // 2. its challenges, 3. the one to pay (or the first refusal)
  const { offers, echoes, unsupported } = toolChallenges(asked.data);
  if (offers.length === 0) {
    throw new L402ClientError(
      'UNSUPPORTED_CHALLENGE',
      `Not paid: ${url.host} asks for payment of ${name} only by ${unsupported.join(', ') || 'no readable challenge'}; this client pays Payment lightning/charge challenges`,
      { url: url.href, scheme: 'Payment', unsupported },
    );
  }
  const chosen = chooseOffer(offers, limits, url);
  const offer = chosen.offer as (typeof offers)[number];

  // 4. pay (at most once per invoice and wallet), 5. the call again with the credential
  const { proof, paidByThisCall } = await payInvoice(offer.invoice, chosen.invoice, limits, url.host);
  const receipt: ToolPaymentReceipt = {
    server: url.href,
    tool: name,
    paymentHash: chosen.invoice.paymentHash,
    amountMsat: chosen.invoice.amountMsat,
    feeMsat: paidByThisCall ? proof.feeMsat : 0,
    paidByThisCall,
    scheme: 'Payment',
    challengeId: offer.charge.challenge.id,
  };
  let paid: RpcAnswer;
  try {
    paid = await connection.request('tools/call', { ...params, _meta: credentialMeta(call.meta, echoes.get(offer)!, proof.preimage) }, call.signal);
  } catch (error) {
    // Paid, and no answer (none at all, none in time, none readable): said with the payment, never paid again here.
    const why = error instanceof Error ? error.message : String(error);
    const status = error instanceof McpTransportError ? error.status : undefined;
    throw new McpTransportError(`${url.host} was paid ${chosen.invoice.amountMsat / 1000} sats for ${name} and gave no answer: ${why}`, status, receipt, {
      cause: error,
    });
  }
  // 6. the answer: a refusal now (-32042 again, -32043) is the server's, not a reason to pay twice for one call
  if ('error' in paid) {
    const again = paymentRequired(paid);
    const why = again ? toolChallenges(again.data).failure : undefined;
    throw new McpToolError(
      `${url.host} did not serve ${name} after it was paid ${chosen.invoice.amountMsat / 1000} sats: ${paid.error.message}${why ? ` (${why})` : ''}; not paid again`,
      paid.error.code,
      paid.error.data,
      receipt,
    );
  }
  if (paymentRequired(paid)) {
    throw new McpToolError(
      `${url.host} asked again for payment of ${name} after it was paid ${chosen.invoice.amountMsat / 1000} sats; not paid again`,
      asked.code,
      paid.result._meta,
      receipt,
    );
  }
  return { result: paid.result, receipt: { ...receipt, ...toolReceipt(paid.result, receipt.challengeId, receipt.paymentHash) } };
}

/** An unpaid call's answer: its result, or its error thrown. */
function served(answer: RpcAnswer, name: string): PaidToolResult {
  if ('error' in answer) throw new McpToolError(`${name}: ${answer.error.message}`, answer.error.code, answer.error.data);
  return { result: answer.result };
}
