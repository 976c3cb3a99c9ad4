// Paid tools of any MCP server on Streamable HTTP, for programs and agents:
// listed with their prices, and called with the same wallet, limits and
// checks as fetchWithL402 (options.ts). A call refused with -32042 is paid
// once (mcp-payment.ts reads its challenges): each invoice decoded and checked
// here (offers.ts, invoice-check.ts: amount against maxPriceSats, network,
// expiry, the challenge's own fields against its invoice), the budget charged
// and the invoice paid at most once per wallet (paying.ts), then the call is
// sent again with the credential. What comes back is the answer: a second
// -32042 or -32043 is never paid again within the same call. A tool sold by
// the prepaid session is paid as fetchWithL402 pays a session route, when the
// client is given a createSessions store (mcp-session.ts); each payment emits
// the audit events fetchWithL402's do (onEvent).
import { clientCall, type ClientCall } from '../events/client.js';
import { L402ClientError } from './errors.js';
import { McpToolError, type ToolPaymentReceipt } from './mcp-errors.js';
import { readToolList, type PaidTool } from './mcp-listing.js';
import { paymentRequired, toolChallenges } from './mcp-payment.js';
import { rpcConnection, type RpcAnswer, type RpcConnection } from './mcp-rpc.js';
import {
  answerSessionOffer,
  answerStatus,
  callOnHeld,
  paidAnswer,
  sendCall,
  sendPaid,
  toolSessionPath,
  type ToolCall,
  type ToolSessionEchoes,
} from './mcp-session.js';
import { checkOptions, type FetchWithL402Options } from './options.js';
import { chooseAndPay } from './paying.js';
import type { ClosedSession } from './sessions.js';

export { McpToolError, McpTransportError } from './mcp-errors.js';
export type { ToolPaymentReceipt } from './mcp-errors.js';
export type { PaidTool, ToolPrice } from './mcp-listing.js';

/** fetchWithL402's options that apply to tool calls, and the most of one answer read. */
export interface McpToolsOptions
  extends Pick<
    FetchWithL402Options,
    'wallet' | 'maxPriceSats' | 'budget' | 'maxFeeSats' | 'network' | 'fetch' | 'destinations' | 'timeoutMs' | 'sessions' | 'onEvent' | 'events'
  > {
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
   * budget; with `sessions`, a tool sold by the prepaid session opens one
   * (its deposit within maxDepositSats and the budget), is called on it,
   * and tops it up when its balance runs out. Throws L402ClientError when it refused to pay or the wallet
   * failed, McpToolError for a JSON-RPC error, McpTransportError when the
   * server did not answer as an MCP server.
   */
  callTool(
    name: string,
    args?: Record<string, unknown>,
    call?: { maxPriceSats?: number; signal?: AbortSignal; meta?: Record<string, unknown> },
  ): Promise<PaidToolResult>;
  /**
   * Closes the prepaid sessions this client opened that are still held (their
   * refunds looked for in the wallet and credited to the budget), and says
   * how each went. The `sessions` store's closeAll() does it for all at once.
   */
  closeSessions(): Promise<ClosedSession[]>;
  /** Closes this client's prepaid sessions (closeSessions), then ends the server's MCP session, if it gave one. */
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
  const ours = (session: { origin: string; sessionId: string }) => session.origin === endpoint.origin && heldHere.has(session.sessionId);
  const heldHere = new Set<string>();
  /** The challenge object each session this client opened was opened with, echoed unchanged on it. */
  const echoes: ToolSessionEchoes = new WeakMap();
  const closeSessions = async () => Promise.all((options.sessions?.list() ?? []).filter(ours).map((session) => session.close()));
  return {
    url: endpoint,
    listTools: () => readToolList(connection),
    callTool: async (name, args = {}, call = {}) => {
      const called = await callPaidTool(connection, echoes, options, name, args, call);
      const session = called.receipt?.session;
      if (session) heldHere.add(session.sessionId);
      return called;
    },
    closeSessions,
    async close() {
      await closeSessions();
      await connection.close();
    },
  };
}

async function callPaidTool(
  connection: RpcConnection,
  sessionEchoes: ToolSessionEchoes,
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
  const { sessions, budget } = options;
  // The events' request stands for the call (subject: the endpoint); the headers it gains (traceparent, agent) go with the call.
  const traced = options.onEvent ? new Request(url, { method: 'POST' }) : undefined;
  const events: ClientCall | undefined =
    traced &&
    clientCall(
      options.onEvent!,
      options.events ?? {},
      traced,
      budget && { spentMsat: () => budget.spent().totalMsat, leftMsat: () => budget.remainingMsat(url.host) },
    );
  const tool: ToolCall = {
    connection,
    echoes: sessionEchoes,
    url,
    name,
    options: limits,
    sessions: sessions!,
    events,
    topUps: { left: sessions?.maxTopUpsPerCall ?? 0 },
    params: { name, arguments: args, ...(call.meta && { _meta: call.meta }) },
    ...(call.signal && { signal: call.signal }),
    ...(traced && { headers: traced.headers }),
  };

  // 1. the call: on the session held for the tool (bearer), else unpaid
  const held = sessions?.find(toolSessionPath(url, name));
  let first: RpcAnswer;
  if (held && sessions) {
    const onHeld = await callOnHeld(tool, sessions, held);
    if ('served' in onHeld) return onHeld.served;
    first = onHeld.offersAnew;
  } else {
    first = await sendCall(tool);
  }
  const asked = paymentRequired(first);
  if (!asked) return served(first, name);

  // 2. its challenges: a session offered is opened when the client holds sessions (as fetchWithL402 does)
  const { offers, sessions: sessionOffers, echoes, unsupported } = toolChallenges(asked.data);
  let sessionNotUsed: string | undefined;
  if (sessions && sessionOffers[0]) {
    const answered = await answerSessionOffer(tool, sessions, sessionOffers[0], () => callPaidTool(connection, sessionEchoes, options, name, args, call));
    if (answered && 'served' in answered) return answered.served;
    if (answered) sessionNotUsed = answered.why;
  }
  if (offers.length === 0) {
    const error = new L402ClientError(
      'UNSUPPORTED_CHALLENGE',
      `Not paid: ${url.host} asks for payment of ${name} only by ${unsupported.join(', ') || 'no readable challenge'}; this client pays Payment lightning/charge challenges` +
        (sessionNotUsed
          ? ` (and sessions, but ${sessionNotUsed})`
          : sessionOffers.length > 0
            ? ' (and lightning/session, given createSessions as `sessions`)'
            : ''),
      { url: url.href, scheme: 'Payment', unsupported },
    );
    if (events) events.invoiceRefused(error.code, {}, events.challengeReceived({}));
    throw error;
  }

  // 3. the one to pay (or the first refusal), 4. paid (at most once per invoice and wallet)
  const { chosen, facts, proof, paidByThisCall, cause } = await chooseAndPay(offers, limits, url, events);
  const offer = chosen.offer as (typeof offers)[number];
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
  // 5. the call again with the credential
  const retryStartedAt = events ? performance.now() : 0;
  const answer = await sendPaid(tool, receipt, echoes.get(offer)!, { preimage: proof.preimage });
  if (cause !== undefined) events?.requestServed({ ...facts, status: answerStatus(answer), retryStartedAt, paidByThisCall }, cause);
  // 6. the answer: a refusal now (-32042 again, -32043) is the server's, not a reason to pay twice for one call
  const result = paidAnswer(tool, answer, receipt, { challengeId: receipt.challengeId, reference: receipt.paymentHash });
  return sessionNotUsed === undefined ? result : { ...result, receipt: { ...result.receipt!, sessionNotUsed } };
}

/** An unpaid call's answer: its result, or its error thrown. */
function served(answer: RpcAnswer, name: string): PaidToolResult {
  if ('error' in answer) throw new McpToolError(`${name}: ${answer.error.message}`, answer.error.code, answer.error.data);
  return { result: answer.result };
}
