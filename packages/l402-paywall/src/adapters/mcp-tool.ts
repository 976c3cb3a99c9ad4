// Paid MCP tools: the paywall as an adapter for servers built on the official
// MCP SDK (@modelcontextprotocol/sdk, an optional peer: only its types are
// imported here). A tool call is decided as an HTTP request is, by the same
// gate (serve.ts's paywallGate over the scheme-neutral pipeline): the
// credential in the call's _meta becomes the Authorization value the schemes
// read (mcp-tool-wire.ts), so the charge, the session, the replay claim (one
// store for both doors: a payment opens one request or one call, never both),
// audit events and onPaid are HTTP's own. What the transport draft asks of
// the answer is done after the SDK's own tool handling:
//
//   refused   JSON-RPC error -32042 / -32043 with fresh challenges (the SDK
//             would turn an error thrown by a tool into an isError result)
//   answered  a session's top-up or close: a result the paywall writes, with its receipt
//   paid      the tool's result, with the receipt in _meta; an isError result
//             (or a throw) gives the use back, as a 5xx does over HTTP
//
// The McpServer's tools/call handler is wrapped once per server, when its
// first paid tool is registered: register paid tools before any free one.
import type { BaseToolCallback, McpServer, RegisteredTool, ToolCallback } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { AnySchema, ZodRawShapeCompat } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { Paid, PaidRequest, Refusal } from '../core/decision.js';
import { isConditionValue } from '../core/conditions.js';
import type { L402Options } from '../paywall/options.js';
import type { SessionSeller } from '../schemes/session/seller.js';
import type { LoadAuditBuilder } from './audit.js';
import { PRICE_META_KEY, RECEIPT_META_KEY, credentialAuthorization, credentialOf, receiptObject, toolCallError, type ToolCallError } from './mcp-tool-wire.js';
import { paywallGate, type PaywallGate } from './serve.js';

/** What every paid tool of a toolPaywall shares: withL402's options but those a tool states itself (price, route, how it is sold). */
export type ToolPaywallOptions = Omit<L402Options, 'priceSats' | 'route' | 'uses' | 'schemes' | 'session' | 'caveats'>;

/** A paid tool: the SDK's registerTool config, and how the tool is sold. */
export interface PaidToolConfig<InputArgs extends undefined | ZodRawShapeCompat | AnySchema, OutputArgs extends ZodRawShapeCompat | AnySchema> {
  title?: string;
  /** What the tool does; the listing's description adds its price. */
  description?: string;
  inputSchema?: InputArgs;
  outputSchema?: OutputArgs;
  annotations?: ToolAnnotations;
  _meta?: Record<string, unknown>;
  /** Whole satoshis per call (with `session`: per unit, one call). */
  priceSats: number;
  /** Sell calls by the prepaid session too (`lightningSessions({unitPriceSats: priceSats, ledger})`). */
  session?: SessionSeller;
  /** Sell each call alone (the Payment charge); default true. `false` with `session`: by the session only. */
  perCall?: boolean;
  /** What a credential is bound to; default `mcp:tools/<name>`. The same route as an HTTP route's makes one payment good for either, once. */
  route?: string;
}

/** The SDK's tool handler extra, with what paid for the call (`payment.session` spends more units of a session). */
export type PaidToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification> & { payment: PaidRequest };

/** A paid tool's handler: the SDK's tool callback, its extra with the payment. */
export type PaidToolHandler<InputArgs extends undefined | ZodRawShapeCompat | AnySchema> = BaseToolCallback<CallToolResult, PaidToolExtra, InputArgs>;

export interface ToolPaywall {
  /**
   * Registers `name` on `server` as a paid tool (server.registerTool, its
   * listing stating the price). Throws a TypeError on a config that cannot
   * sell, or when the server already has a free tool registered (register
   * paid tools first).
   */
  register<OutputArgs extends ZodRawShapeCompat | AnySchema, InputArgs extends undefined | ZodRawShapeCompat | AnySchema = undefined>(
    server: McpServer,
    name: string,
    config: PaidToolConfig<InputArgs, OutputArgs>,
    handler: PaidToolHandler<InputArgs>,
  ): RegisteredTool;
}

/** How one call ends, left by the tool callback for the wrapped tools/call handler (which the SDK's error handling does not reach past). */
type PendingCall =
  | { kind: 'refused'; error: ToolCallError }
  | { kind: 'answered'; result: CallToolResult }
  | { kind: 'paid'; settle(result: CallToolResult): CallToolResult; failed(): void };

/** One server's pending paid calls, keyed by the handler extra the SDK hands both the tools/call handler and the tool. */
interface CallHook {
  calls: WeakMap<object, PendingCall>;
}

const HOOK = Symbol.for('l402-paywall.paid-tool-calls');

type ProtocolHandler = (request: unknown, extra: object) => Promise<unknown>;

/** The hook of `server`, its tools/call handler wrapped on first use. */
function hookOf(server: McpServer): CallHook {
  const inner = server.server as unknown as {
    [HOOK]?: CallHook;
    setRequestHandler(schema: unknown, handler: ProtocolHandler): void;
    assertCanSetRequestHandler(method: string): void;
  };
  const existing = inner[HOOK];
  if (existing) return existing;
  try {
    inner.assertCanSetRequestHandler('tools/call');
  } catch {
    throw new TypeError('toolPaywall: register paid tools on an McpServer before any free tool (its tools/call handler is already set)');
  }
  const hook: CallHook = { calls: new WeakMap() };
  const set = inner.setRequestHandler.bind(inner);
  // Every handler set from now on is wrapped; only a call a paid tool left a pending entry for is changed.
  inner.setRequestHandler = (schema, handler) => set(schema, settled(hook, handler));
  Object.defineProperty(inner, HOOK, { value: hook });
  return hook;
}

function settled(hook: CallHook, handler: ProtocolHandler): ProtocolHandler {
  return async (request, extra) => {
    let result: unknown;
    try {
      result = await handler(request, extra);
    } catch (error) {
      const call = take(hook, extra);
      if (call?.kind === 'paid') call.failed();
      throw error;
    }
    const call = take(hook, extra);
    if (!call) return result;
    switch (call.kind) {
      case 'refused':
        throw jsonRpcError(call.error);
      case 'answered':
        return call.result;
      case 'paid':
        return call.settle(result as CallToolResult);
    }
  };
}

function take(hook: CallHook, extra: object): PendingCall | undefined {
  const call = hook.calls.get(extra);
  hook.calls.delete(extra);
  return call;
}

/** What the SDK's protocol writes as a JSON-RPC error: its code, message and data as they are. */
function jsonRpcError({ code, message, data }: ToolCallError): Error {
  return Object.assign(new Error(message), { code, data });
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** A toolPaywall from the options every paid tool shares, and the audit event builder's loader (the entry's). */
export function createToolPaywall(options: ToolPaywallOptions, loadAuditBuilder: LoadAuditBuilder): ToolPaywall {
  // One gate per tool, kept across the servers a stateless function makes per request.
  const gates = new Map<string, { key: string; session: SessionSeller | undefined; gate: PaywallGate }>();
  const gateOf = (name: string, route: string, config: Sale): PaywallGate => {
    const perCall = config.perCall ?? true;
    const key = `${route}\n${config.priceSats}\n${perCall}`;
    const kept = gates.get(name);
    if (kept && kept.key === key && kept.session === config.session) return kept.gate;
    const gate = paywallGate(
      { ...options, priceSats: config.priceSats, route, schemes: { l402: false, payment: perCall }, ...(config.session && { session: config.session }) },
      loadAuditBuilder,
    );
    gates.set(name, { key, session: config.session, gate });
    return gate;
  };

  return {
    register<OutputArgs extends ZodRawShapeCompat | AnySchema, InputArgs extends undefined | ZodRawShapeCompat | AnySchema = undefined>(
      server: McpServer,
      name: string,
      config: PaidToolConfig<InputArgs, OutputArgs>,
      handler: PaidToolHandler<InputArgs>,
    ): RegisteredTool {
      if (typeof name !== 'string' || !TOOL_NAME.test(name))
        throw new TypeError(`toolPaywall: a tool name is 1 to 128 of A-Z, a-z, 0-9, _, . and -; got ${String(name)}`);
      checkSale(name, config);
      const route = config.route ?? `mcp:tools/${name}`;
      if (!isConditionValue(route)) throw new TypeError(`toolPaywall: tool ${name}: route must be printable ASCII`);
      const gate = gateOf(name, route, config);
      const hook = hookOf(server);
      const takesArgs = config.inputSchema !== undefined;

      const call = async (args: unknown, extra: RequestHandlerExtra<ServerRequest, ServerNotification>): Promise<CallToolResult> => {
        const startedAt = gate.start();
        const request = toolRequest(name, extra);
        const decision = await gate.admit(request, startedAt);
        if (decision.kind === 'refused') {
          hook.calls.set(extra, await refusedCall(gate, name, extra, decision, startedAt));
          return { content: [] };
        }
        hook.calls.set(extra, paidCall(gate, request, decision, startedAt));
        const paidExtra: PaidToolExtra = { ...extra, payment: decision.payment };
        const run = handler as (...params: unknown[]) => CallToolResult | Promise<CallToolResult>;
        return takesArgs ? run(args, paidExtra) : run(paidExtra);
      };
      const callback = takesArgs ? call : (extra: RequestHandlerExtra<ServerRequest, ServerNotification>) => call(undefined, extra);

      const { priceSats, session, perCall, route: _route, description, _meta, ...tool } = config;
      const intents = [...((perCall ?? true) ? ['charge'] : []), ...(session ? ['session'] : [])];
      return server.registerTool<OutputArgs, InputArgs>(
        name,
        {
          ...tool,
          description: pricedDescription(description, priceSats, intents),
          _meta: { ..._meta, [PRICE_META_KEY]: { method: 'lightning', currency: 'sat', amount: priceSats, intents } },
        },
        callback as unknown as ToolCallback<InputArgs>,
      );
    },
  };
}

/** How a tool is sold: the part of its config the paywall reads. */
type Sale = Pick<PaidToolConfig<undefined, ZodRawShapeCompat>, 'priceSats' | 'session' | 'perCall'>;

/** A config that cannot sell is the operator's mistake: said at registration. */
function checkSale(name: string, config: Sale): void {
  const fail = (message: string): never => {
    throw new TypeError(`toolPaywall: tool ${name}: ${message}`);
  };
  if (!config || typeof config !== 'object') fail('needs a config { priceSats, description?, inputSchema?, session?, perCall? }');
  const { priceSats, session, perCall } = config;
  if (!Number.isSafeInteger(priceSats) || priceSats <= 0 || !Number.isSafeInteger(priceSats * 1000))
    fail(`priceSats must be a positive whole number of satoshis, got ${priceSats}`);
  if (perCall === false && !session) fail('perCall: false sells nothing without a session');
  const unit = (session as { unitPriceSats?: unknown } | undefined)?.unitPriceSats;
  if (typeof unit === 'number' && unit !== priceSats) fail(`its session's unit price (${unit} sats) is not priceSats (${priceSats}): the listing would lie`);
}

/** The listing's price in words, after what the tool does. */
function pricedDescription(description: string | undefined, priceSats: number, intents: string[]): string {
  const sats = `${priceSats} sat${priceSats === 1 ? '' : 's'}`;
  const how = intents.length === 2 ? 'per call or from a prepaid session' : intents[0] === 'session' ? 'per call, from a prepaid session' : 'per call';
  const price = `Price: ${sats} ${how}, paid over Lightning (Payment scheme, MCP transport: error -32042 carries the challenge).`;
  return description ? `${description}\n\n${price}` : price;
}

/**
 * The call as the paywall reads a request: the credential as its
 * Authorization, the HTTP request's other headers when the transport has one
 * (so limitInvoices and realm functions see the client as for HTTP), and a
 * URL naming the tool on the HTTP request's origin (the default realm is its
 * host name, as for the server's HTTP routes); on stdio, `mcp://localhost`.
 */
function toolRequest(name: string, extra: RequestHandlerExtra<ServerRequest, ServerNotification>): Request {
  const headers = new Headers();
  const http = extra.requestInfo?.headers ?? {};
  for (const header in http) {
    const value = http[header];
    // The MCP client's own Authorization (its OAuth token to this server) is not a payment.
    if (value === undefined || header.toLowerCase() === 'authorization') continue;
    try {
      headers.set(header, Array.isArray(value) ? value.join(', ') : value);
    } catch {
      // A value Headers refuses tells the paywall nothing it needs.
    }
  }
  const authorization = credentialAuthorization(credentialOf(extra._meta));
  if (authorization !== undefined) headers.set('authorization', authorization);
  const origin = extra.requestInfo?.url?.origin;
  return new Request(`${origin && origin !== 'null' ? origin : 'mcp://localhost'}/mcp/tools/${name}`, { method: 'POST', headers });
}

/**
 * How a refused call ends: a session's top-up or close answered; a credential
 * no credential of this request could fix (another payment method or intent:
 * HTTP's 400) refused as any other, -32043 with the fresh challenges of a call
 * without it, so the client can pay one this tool takes.
 */
async function refusedCall(
  gate: PaywallGate,
  name: string,
  extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  refusal: Refusal,
  startedAt: number,
): Promise<PendingCall> {
  if (refusal.status === 200) return { kind: 'answered', result: answeredResult(refusal) };
  if (refusal.status !== 400) return { kind: 'refused', error: toolCallError(refusal) };
  const fresh = await gate.admit(toolRequest(name, { ...extra, _meta: undefined }), startedAt);
  if (fresh.kind !== 'refused' || fresh.status !== 402) return { kind: 'refused', error: toolCallError(fresh.kind === 'refused' ? fresh : refusal) };
  return {
    kind: 'refused',
    error: toolCallError({
      ...fresh,
      body: { ...fresh.body, code: refusal.body.code, error: refusal.body.error, type: refusal.body.type, title: refusal.body.title },
    }),
  };
}

/** A session's top-up or close, answered by the paywall: its body as text, its receipt in _meta. */
function answeredResult(refusal: Refusal): CallToolResult {
  const receipt = refusal.headers.find(([header]) => header === 'Payment-Receipt')?.[1];
  const decoded = receipt === undefined ? undefined : receiptObject(receipt);
  return { content: [{ type: 'text', text: JSON.stringify(refusal.body) }], ...(decoded && { _meta: { [RECEIPT_META_KEY]: decoded } }) };
}

/** A paid call's end: served (receipt, audit, onPaid) or failed (the use given back), as serve.ts ends a paid request. */
function paidCall(gate: PaywallGate, request: Request, paid: Paid, startedAt: number): PendingCall {
  return {
    kind: 'paid',
    failed: () => gate.serve.finished(request, paid, 500, startedAt, () => new Response(null, { status: 500 })),
    settle(result) {
      if (result.isError === true) {
        gate.serve.finished(request, paid, 500, startedAt, () => new Response(null, { status: 500 }));
        return result;
      }
      gate.serve.finished(request, paid, 200, startedAt, () => new Response(JSON.stringify(result), { headers: { 'Content-Type': 'application/json' } }));
      const receipt = paid.receipt === undefined ? undefined : receiptObject(paid.receipt);
      return receipt ? { ...result, _meta: { ...result._meta, [RECEIPT_META_KEY]: receipt } } : result;
    },
  };
}
