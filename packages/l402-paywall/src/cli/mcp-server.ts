/// <reference types="node" />
// `l402-paywall mcp`: an MCP server on stdio for agents. Four tools:
//   list_paid_apis   the paid APIs a service lists at /api/apis.json (price, category)
//   call_paid_api    one HTTP request, paid within the session's limits
//   list_paid_tools  the tools of another MCP server (Streamable HTTP), with their prices
//   call_paid_tool   one tool of another MCP server called, paid within the same limits
// Every payment is within --max-sats and the session's budget (--budget-sats),
// with the wallet the command line would use. The URLs come from directories
// and from the model, so no request goes to a non-public address (this
// machine, the LAN, a cloud metadata service) unless the operator allows it
// (--allow-private; the services named at start, --dev and --directory, are
// allowed by origin); every answer is read within --timeout-seconds and cut
// at --max-body-bytes (docs/security.md). @modelcontextprotocol/sdk is an
// optional peer dependency of the package: only this command loads it.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { fetchWithinPolicy } from '../client/destinations.js';
import { fetchWithL402 } from '../client/fetch.js';
import { getPaymentReceipt, type PaymentReceipt } from '../client/receipts.js';
import { DestinationRefused, L402ClientError } from '../client/errors.js';
import { McpToolError, McpTransportError, type ToolPaymentReceipt } from '../client/mcp-errors.js';
import { mcpToolClient, type McpToolClient } from '../client/mcp-tools.js';
import { deadline } from '../http/deadline.js';
import { discardBody } from '../http/discard-body.js';
import { readBoundedText } from '../http/read-bounded.js';
import { nodeDestinations } from '../client/node-destinations.js';
import type { Io } from './fetch-command.js';
import { closeAndAccount, DEPOSIT_OPTION, refundText, sessionStore } from './session-report.js';
import {
  DEFAULT_BUDGET_SATS,
  DEFAULT_TIMEOUT_SECONDS,
  EXIT,
  httpUrlFlag,
  parse,
  SESSION_OPTIONS,
  sessionBudget,
  sessionFlags,
  timedOut,
  walletFromEnvironment,
  wholeNumber,
} from './settings.js';
import { VERSION, printedHelpOrVersion } from './version.js';

/** An answer body longer than this is cut (an agent's context is not a download). */
const DEFAULT_MAX_BODY_BYTES = 100_000;
/** A directory listing larger than this is refused: it is parsed whole. */
const MAX_DIRECTORY_BYTES = 8 * 1024 * 1024;
/** What --directory names, for its usage error. */
const DIRECTORY_SERVICE = 'a directory service (its listing is at /api/apis.json)';

export const MCP_USAGE = `Usage: npx -y l402-mcp [options]
       l402-paywall mcp [options]     (the same; needs @modelcontextprotocol/sdk installed beside it)

An MCP server on stdio with the tools list_paid_apis, call_paid_api,
list_paid_tools and call_paid_tool. call_paid_api pays L402 challenges and
Payment challenges (the IETF "Payment" scheme, MPP: method lightning, intent
charge; other methods are never paid), and its result names the scheme paid
and, for Payment, the receipt. call_paid_tool calls a tool of another MCP
server (Streamable HTTP) and pays its Payment challenge (JSON-RPC -32042,
lightning/charge) within the same limits, once per call; with --sessions, a
tool sold by the prepaid session (lightning/session) is paid as an API's
session is.

Options:
  --max-sats N        most one request may cost, whole sats (default 10)
  --budget-sats N     what the whole session may spend, whole sats (default ${DEFAULT_BUDGET_SATS})
  --max-fee-sats N    routing fee limit per payment (default 10)
  --scheme S          l402 or payment: the scheme to pay in when an API offers both (default l402)
  --sessions          where an API or a tool sells prepaid sessions, open one (its deposit within
                      --max-deposit-sats and the budget) and spend from it on later calls to
                      that API or tool, topping it up when asked (at most 10 top-ups a call, none asked
                      again before a chunk arrived); a session refused for a reason other than
                      its balance fails the call (SESSION_REFUSED), no new deposit paid. Closed
                      when the server stops (its stdin closed, SIGTERM or SIGINT): a refund is
                      credited back to the budget only once the wallet received it (stderr says
                      each deposit, each refund claimed and received, and what was spent in
                      all). Needs a wallet that makes invoices without an amount (--dev,
                      Phoenixd, LND, Core Lightning, Blink); LNbits and NWC pay per request
  --max-deposit-sats N  most one session deposit may cost, whole sats (default 20 x --max-sats)
  --dev URL           pay with the dev wallet of a local service (npm start); also the default directory
  --directory URL     the service whose /api/apis.json list_paid_apis reads (default: --dev's URL)
  --allow-private     let tools reach loopback, private and link-local addresses (default: only
                      public ones, besides the --dev and --directory services)
  --timeout-seconds N the most one request may take, answer included (default ${DEFAULT_TIMEOUT_SECONDS})
  --max-body-bytes N  the most of an answer's body call_paid_api returns; the rest is cut (default ${DEFAULT_MAX_BODY_BYTES})
  -h, --help          this help
  -V, --version       the version
The wallet comes from the environment as for l402-paywall <url> (l402-paywall --help).
`;
/** MCP servers whose clients (and sessions, for a stateful server) are kept for later calls; past this, the oldest is closed. */
const MAX_TOOL_SERVERS = 32;
/** The most of one answer of another MCP server read, unless --max-body-bytes asks for more: a larger one fails the call. */
const MIN_TOOL_ANSWER_BYTES = 4 * 1024 * 1024;
const CATEGORIES = ['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other'] as const;
/** Answer headers an agent may need; others (cookies included) are left out. */
const HEADERS_THAT_MATTER = [
  'content-type',
  'content-length',
  'retry-after',
  'location',
  'www-authenticate',
  'payment-receipt',
  'cache-control',
  'ratelimit',
  'ratelimit-policy',
  'x-ratelimit-remaining',
];

const ApiEntry = z
  .object({
    url: z.string(),
    name: z.string(),
    description: z.string().nullish(),
    price_sats: z.number(),
    category: z.string().nullish(),
    /** The directory service's own demo. */
    demo: z.boolean().optional(),
  })
  .loose();
const Directory = z.object({ apis: z.array(ApiEntry) }).loose();

/** The MCP server; `name` is how it was started (`l402-paywall mcp`, or `l402-mcp`), as its messages call it. */
export async function mcpCommand(args: string[], io: Io, name = 'l402-paywall mcp'): Promise<number> {
  const { values } = parse({
    args,
    options: {
      ...SESSION_OPTIONS,
      directory: { type: 'string' },
      'allow-private': { type: 'boolean' },
      'max-body-bytes': { type: 'string' },
      sessions: { type: 'boolean' },
      ...DEPOSIT_OPTION,
    },
  });
  if (printedHelpOrVersion(values, MCP_USAGE, io.stdout)) return EXIT.SERVED;
  const flags = sessionFlags(values, DEFAULT_BUDGET_SATS);
  const maxBodyBytes = wholeNumber(values['max-body-bytes'], '--max-body-bytes', DEFAULT_MAX_BODY_BYTES, 1, 'bytes');
  // Checked here, before any request: a URL without its scheme ("localhost:3000") would otherwise fail at the first call.
  const directorySetting = io.env.L402_DIRECTORY_URL?.trim() || undefined;
  const directory =
    values.directory !== undefined
      ? httpUrlFlag(values.directory, '--directory', DIRECTORY_SERVICE)
      : (flags.dev ?? (directorySetting && httpUrlFlag(directorySetting, 'L402_DIRECTORY_URL', DIRECTORY_SERVICE)));
  const { wallet, description } = await walletFromEnvironment(io.env, flags.dev);
  const budget = sessionBudget(flags);
  // Each deposit said as it is paid: stderr accounts for every sat that left the wallet for a session.
  const say = (line: string) => io.stderr.write(`${name}: ${line}\n`);
  const sessions = sessionStore(values, values.sessions === true, '--sessions', say);
  // The services the operator named may be local (npm start); anything else the model or a directory names must be public.
  const namedServices = [
    ...(flags.dev !== undefined ? [{ option: '--dev', origin: new URL(flags.dev).origin }] : []),
    ...(directory !== undefined && directory !== flags.dev ? [{ option: '--directory', origin: new URL(directory).origin }] : []),
  ];
  const destinations = nodeDestinations({ allowPrivate: values['allow-private'] === true || namedServices.map((service) => service.origin) });

  const server = new McpServer({ name: 'l402-paywall', version: VERSION });

  server.registerTool(
    'list_paid_apis',
    {
      title: 'List paid APIs',
      description:
        'Lists the pay-per-request APIs (L402, paid in Lightning sats) a directory service knows: url, name, description, price in sats, category ' +
        "(and demo: true on the service's own demo entries; an API sold by prepaid session only says so in its description). " +
        'The service describes its own REST interface at /api/openapi.json.',
      inputSchema: {
        category: z.enum(CATEGORIES).optional().describe('only APIs of this category'),
        limit: z.number().int().min(1).max(500).default(50).describe('at most this many, newest first'),
        directory: z
          .url()
          .optional()
          .describe(`the directory service's base URL${directory ? ` (default ${directory})` : ''}`),
      },
    },
    async ({ category, limit, directory: asked }) => {
      const base = asked ?? directory;
      if (!base) return toolError('NO_DIRECTORY', 'No directory service: pass `directory`, or start the server with --directory <url>');
      const listUrl = new URL('/api/apis.json', base);
      if (category) listUrl.searchParams.set('category', category);
      let listing: z.infer<typeof Directory>;
      try {
        const request = new Request(listUrl, { headers: { accept: 'application/json' } });
        const response = await fetchWithinPolicy(fetch, request, destinations, deadline(flags.timeoutMs));
        if (!response.ok) {
          discardBody(response.body);
          return toolError('DIRECTORY_ERROR', `${listUrl.href} answered HTTP ${response.status}`);
        }
        const body = await readBoundedText(response.body, MAX_DIRECTORY_BYTES);
        if (!body.ok)
          return toolError(
            'DIRECTORY_ERROR',
            `${listUrl.href} answered ${body.reason === 'too-large' ? `more than ${MAX_DIRECTORY_BYTES} bytes` : 'a body that is not UTF-8'}`,
          );
        listing = Directory.parse(JSON.parse(body.text));
      } catch (error) {
        return requestFailed(error, listUrl, 'DIRECTORY_ERROR', `Could not read ${listUrl.href}`);
      }
      const apis = listing.apis.slice(0, limit).map((a) => ({
        url: a.url,
        name: a.name,
        description: a.description ?? '',
        price_sats: a.price_sats,
        category: a.category ?? 'other',
        ...(a.demo ? { demo: true } : {}),
      }));
      const result = { directory: new URL(base).origin, count: listing.apis.length, apis, openapi: new URL('/api/openapi.json', base).href, ...budgetState() };
      return { content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }], structuredContent: result };
    },
  );

  server.registerTool(
    'call_paid_api',
    {
      title: 'Call a paid API',
      description:
        'Sends one HTTP request; when the API answers 402 with an L402 challenge or a Payment challenge (MPP, method lightning, intent charge), ' +
        'pays its Lightning invoice (checked: amount, network, expiry) and retries. ' +
        `Never pays more than max_price_sats (at most ${flags.maxSats}) for one request, nor more than the session budget of ${flags.budgetSats} sats in all. ` +
        `Returns status, the headers that matter, the body (its first ${maxBodyBytes} bytes), the sats paid, and when it paid, ` +
        "the scheme offered and paid in (L402 or Payment) and for Payment the challenge id (never a session's opening one, which with its deposit's preimage would spend the session) and the server receipt. " +
        'URLs on this machine or a private network are refused (DESTINATION_REFUSED) unless the operator allowed them.',
      inputSchema: {
        url: z.url().describe('the API URL (http or https)'),
        method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
        body: z.string().max(1_000_000).optional().describe('request body (JSON text for JSON APIs)'),
        content_type: z.string().max(200).optional().describe('Content-Type of body; default application/json when body is given'),
        max_price_sats: z.number().int().positive().optional().describe(`most this request may cost (default and ceiling ${flags.maxSats})`),
        scheme: z
          .enum(['L402', 'Payment'])
          .optional()
          .describe(`the scheme to pay in when the API offers both (default ${flags.scheme ?? 'L402'})`),
      },
    },
    async ({ url, method, body, content_type, max_price_sats, scheme }) => {
      const maxPriceSats = Math.min(max_price_sats ?? flags.maxSats, flags.maxSats);
      const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' };
      if (body !== undefined) headers['content-type'] = content_type ?? 'application/json';
      let response: Response;
      try {
        response = await fetchWithL402(
          url,
          { method, headers, ...(body !== undefined && { body }) },
          {
            wallet,
            maxPriceSats,
            maxFeeSats: flags.maxFeeSats,
            budget,
            ...(sessions && { sessions }),
            destinations,
            timeoutMs: flags.timeoutMs,
            ...((scheme ?? flags.scheme) && { scheme: scheme ?? flags.scheme }),
          },
        );
      } catch (error) {
        // With what the run has spent: a refusal after a payment (a top-up not credited) says it too.
        if (error instanceof L402ClientError) return toolError(error.code, error.message, { refused: error.refused, ...error.details, ...budgetState() });
        // A payment may have gone out before the paid request failed: the session's spending says so.
        return requestFailed(error, new URL(url), 'REQUEST_FAILED', `Could not reach ${new URL(url).origin}`, budgetState());
      }
      const receipt = getPaymentReceipt(response);
      const paid = paidFacts(receipt);
      let text: { text: string; cut?: true };
      try {
        // Bytes that are not UTF-8 become U+FFFD, as response.text() does.
        const read = await readBoundedText(response.body, maxBodyBytes, { lenient: true, cut: true });
        // Lenient and cut, every body is read: a refusal cannot come back.
        if (!read.ok) throw new Error(`answer not read (${read.reason})`);
        text = read;
      } catch (error) {
        // A metered stream asked for a top-up that was not paid: it ends here, said as an unpaid request is.
        if (error instanceof L402ClientError)
          return toolError(error.code, `The stream stopped at a top-up: ${error.message}`, {
            refused: error.refused,
            status: response.status,
            ...paid,
            ...budgetState(),
          });
        return requestFailed(error, new URL(url), 'REQUEST_FAILED', `${new URL(url).origin} broke off its answer`, {
          status: response.status,
          ...paid,
          ...budgetState(),
        });
      }
      const answerHeaders: Record<string, string> = {};
      for (const name of HEADERS_THAT_MATTER) {
        const value = response.headers.get(name);
        if (value !== null) answerHeaders[name] = value;
      }
      const result = {
        status: response.status,
        headers: answerHeaders,
        body: text.text,
        ...(text.cut && { body_truncated: true, body_truncated_at_bytes: maxBodyBytes }),
        ...paid,
        ...budgetState(),
      };
      return { content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }], structuredContent: result };
    },
  );

  const toolServers = new Map<string, McpToolClient>();
  /** The client of an MCP server, made once per endpoint (the oldest closed past MAX_TOOL_SERVERS). */
  function toolServer(endpoint: string): McpToolClient {
    const known = toolServers.get(endpoint);
    if (known) return known;
    const client = mcpToolClient(endpoint, {
      wallet,
      maxPriceSats: flags.maxSats,
      maxFeeSats: flags.maxFeeSats,
      budget,
      ...(sessions && { sessions }),
      destinations,
      timeoutMs: flags.timeoutMs,
      maxAnswerBytes: Math.max(MIN_TOOL_ANSWER_BYTES, maxBodyBytes),
      clientInfo: { name, version: VERSION },
    });
    toolServers.set(endpoint, client);
    if (toolServers.size > MAX_TOOL_SERVERS) {
      const [oldest, oldClient] = toolServers.entries().next().value!;
      toolServers.delete(oldest);
      void oldClient.close();
    }
    return client;
  }

  server.registerTool(
    'list_paid_tools',
    {
      title: 'List paid tools of an MCP server',
      description:
        'Lists the tools of another MCP server (its Streamable HTTP endpoint, such as https://host/api/mcp): name, description, the JSON Schema of its arguments, and the price its listing states (sats a call, or a unit of a prepaid session). ' +
        'Call one with call_paid_tool. Servers on this machine or a private network are refused (DESTINATION_REFUSED) unless the operator allowed them.',
      inputSchema: { server: z.url().describe("the MCP server's endpoint URL (http or https)") },
    },
    async ({ server: endpoint }) => {
      try {
        const tools = await toolServer(endpoint).listTools();
        const result = {
          server: endpoint,
          count: tools.length,
          tools: tools.map((tool) => ({
            name: tool.name,
            ...(tool.title !== undefined && { title: tool.title }),
            description: tool.description ?? '',
            ...(tool.price && { price_sats: tool.price.sats, price_intent: tool.price.intent }),
            ...(tool.inputSchema && { input_schema: tool.inputSchema }),
          })),
          ...budgetState(),
        };
        return { content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }], structuredContent: result };
      } catch (error) {
        return toolCallFailed(error, endpoint, `Could not list the tools of ${endpoint}`);
      }
    },
  );

  server.registerTool(
    'call_paid_tool',
    {
      title: 'Call a paid tool of an MCP server',
      description:
        'Calls one tool of another MCP server (Streamable HTTP). When the tool asks for payment (JSON-RPC -32042 with a Payment challenge, method lightning, intent charge), ' +
        'pays its Lightning invoice (checked: amount, network, expiry, the challenge against its invoice) once and calls it again with the credential; a server asking again after being paid is not paid twice. ' +
        (sessions
          ? 'A tool sold by the prepaid session (lightning/session) opens one (its deposit within the limits), is called on it, and tops it up when its balance runs out; the session is closed, and refunded, when this server stops. '
          : '') +
        `Never pays more than max_price_sats (at most ${flags.maxSats}) for one call, nor more than the session budget of ${flags.budgetSats} sats in all. ` +
        `Returns the tool's content (its text cut at ${maxBodyBytes} bytes), structured content, is_error, the sats paid and the server's receipt.`,
      inputSchema: {
        server: z.url().describe("the MCP server's endpoint URL (http or https)"),
        tool: z.string().min(1).max(256).describe('the name of the tool'),
        arguments: z.record(z.string(), z.unknown()).optional().describe("the tool's arguments, as its input schema says"),
        max_price_sats: z.number().int().positive().optional().describe(`most this call may cost (default and ceiling ${flags.maxSats})`),
      },
    },
    async ({ server: endpoint, tool, arguments: args, max_price_sats }) => {
      try {
        const { result: called, receipt } = await toolServer(endpoint).callTool(tool, args ?? {}, { maxPriceSats: max_price_sats ?? flags.maxSats });
        const { content, cut } = cutContent(called.content, maxBodyBytes);
        const result = {
          server: endpoint,
          tool,
          content,
          ...(cut && { content_truncated: true, content_truncated_at_bytes: maxBodyBytes }),
          ...(called.structuredContent !== undefined && !cut && { structured_content: called.structuredContent }),
          is_error: called.isError === true,
          ...paidFacts(receipt),
          ...budgetState(),
        };
        return { content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }], structuredContent: result };
      } catch (error) {
        return toolCallFailed(error, endpoint, `Could not call ${tool} at ${endpoint}`);
      }
    },
  );

  /** A tool error for a tool call that ended without a result: a refusal, a JSON-RPC error, no MCP answer; with what it paid. */
  function toolCallFailed(error: unknown, endpoint: string, failed: string) {
    if (error instanceof L402ClientError) return toolError(error.code, error.message, { refused: error.refused, ...error.details, ...budgetState() });
    if (error instanceof McpToolError)
      return toolError('TOOL_ERROR', error.message, { rpc_code: error.rpcCode, ...paidFacts(error.receipt), ...budgetState() });
    if (error instanceof McpTransportError) {
      const facts = { ...paidFacts(error.receipt), ...budgetState() };
      if (timedOut(error.cause)) return toolError('TIMEOUT', `${failed}: no complete answer within ${flags.timeoutMs / 1000} s (--timeout-seconds)`, facts);
      return toolError('MCP_ERROR', `${failed}: ${error.message}`, facts);
    }
    return requestFailed(error, new URL(endpoint), 'REQUEST_FAILED', failed, budgetState());
  }

  function budgetState() {
    const spent = budget.spent();
    return { session_spent_sats: spent.totalSats, session_budget_left_sats: budget.remainingMsat() / 1000 };
  }

  /** A tool error for a request that got no (complete) answer, saying why: refused destination, timeout, or the network's reason. */
  function requestFailed(error: unknown, url: URL, code: string, failed: string, facts: Record<string, unknown> = {}) {
    if (error instanceof DestinationRefused) {
      const hint = otherHostOfNamedService(error.url, namedServices, name) ?? `${name} reaches only public addresses unless started with --allow-private`;
      return toolError(error.code, `${error.message} (${hint})`, { url: error.url, address_kind: error.addressKind, redirected: error.redirected, ...facts });
    }
    if (timedOut(error)) return toolError('TIMEOUT', `${failed}: no complete answer within ${flags.timeoutMs / 1000} s (--timeout-seconds)`, facts);
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const why = cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
    return toolError(code, `${failed}: ${why}`, { url: url.href, ...facts });
  }

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    // A host that goes away may close its end of our stdout before our stdin: the next answer then fails (EPIPE). Nobody
    // reads them any more, so the server stops as at the end of its stdin, its sessions closed, instead of dying on the
    // unhandled error with a stack trace. Its stderr may be gone too: what it would say there is then left unsaid.
    process.stdout.on('error', () => resolve());
    process.stderr.on('error', () => {});
    // A client may stop its server with a signal rather than by closing stdin: the sessions are closed (refunded) all the same.
    if (sessions) for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve());
  });
  await server.connect(transport);
  io.stderr.write(`${name}: ready on stdio; paying with ${description}, at most ${flags.maxSats} sats a request, ${flags.budgetSats} sats in all\n`);
  await closed;
  // Only refunds the wallet received are credited to the budget: the last line is what the whole run spent.
  if (sessions) await closeAndAccount(sessions, budget, say, (done) => `session ${done.sessionId} at ${done.origin} ${refundText(done, ':')}`);
  await Promise.all([...toolServers.values()].map((client) => client.close()));
  wallet.close?.();
  await server.close();
  return EXIT.SERVED;
}

/**
 * When a refused URL is one of the services named at start under another host
 * name (`next dev` prints http://localhost:3000, the operator passed
 * --dev http://127.0.0.1:3000): the hint says so and how to fix it, since
 * those services are allowed by their exact origin only.
 */
function otherHostOfNamedService(refused: string, named: { option: string; origin: string }[], name: string): string | undefined {
  const url = new URL(refused);
  for (const { option, origin } of named) {
    const service = new URL(origin);
    if (service.protocol !== url.protocol || service.port !== url.port || service.hostname === url.hostname) continue;
    const asNamed = new URL(url.pathname + url.search, origin).href;
    return (
      `${url.host} is not the host of ${option} ${origin} (the services named at start are allowed by their exact origin, ` +
      `and ${url.hostname} and ${service.hostname} are different names even when they reach the same machine): call ${asNamed}, ` +
      `or start ${name} with ${option} ${url.origin}`
    );
  }
  return undefined;
}

/**
 * What a request or a tool call paid, for its answer. A session's opening
 * challenge id is left out: with the deposit's preimage (which every routing
 * node of the deposit learns) it is what spends and closes the session, and
 * tool results are read by more than this client (docs/sessions.md). A call
 * on a tool's session echoes that challenge (bearer): its id is left out too.
 */
function paidFacts(receipt: (PaymentReceipt | ToolPaymentReceipt) | undefined) {
  const challengeShown = receipt?.session === undefined || receipt.session.action === 'topUp';
  const offered = receipt && 'offered' in receipt ? receipt.offered : undefined;
  return {
    sats_paid: receipt?.paidByThisCall ? receipt.amountMsat / 1000 : 0,
    fee_sats: receipt?.paidByThisCall ? receipt.feeMsat / 1000 : 0,
    ...(receipt && {
      payment_hash: receipt.paymentHash,
      scheme: receipt.scheme,
      ...(offered && { schemes_offered: offered }),
      ...(receipt.challengeId !== undefined && challengeShown && { challenge_id: receipt.challengeId }),
      ...(receipt.serverReceipt && {
        receipt: {
          ...(challengeShown && receipt.serverReceipt.challengeId === receipt.challengeId && { challenge_id: receipt.serverReceipt.challengeId }),
          payment_hash: receipt.serverReceipt.reference,
          timestamp: receipt.serverReceipt.timestamp,
        },
      }),
      ...(receipt.serverReceiptProblem !== undefined && { receipt_problem: receipt.serverReceiptProblem }),
      ...(receipt.session && { session: { action: receipt.session.action, session_id: receipt.session.sessionId } }),
      ...(receipt.sessionNotUsed !== undefined && { session_not_used: receipt.sessionNotUsed }),
    }),
  };
}

function toolError(code: string, message: string, details: Record<string, unknown> = {}) {
  const result = { error: message, code, ...details };
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }] };
}

/** A tool's content with its text cut to `maxBytes` in all (UTF-8), the rest of the items left out past it. */
function cutContent(content: unknown[] | undefined, maxBytes: number): { content: unknown[]; cut: boolean } {
  const items = Array.isArray(content) ? content : [];
  const encoder = new TextEncoder();
  const out: unknown[] = [];
  let left = maxBytes;
  for (const item of items) {
    const text = (item as { type?: unknown; text?: unknown }).type === 'text' ? (item as { text?: unknown }).text : undefined;
    const size = typeof text === 'string' ? encoder.encode(text).byteLength : encoder.encode(JSON.stringify(item)).byteLength;
    if (size <= left) {
      out.push(item);
      left -= size;
      continue;
    }
    // Cut on a character: decoding the first bytes drops a split character's rest.
    if (typeof text === 'string' && left > 0)
      out.push({ ...(item as object), text: new TextDecoder().decode(encoder.encode(text).subarray(0, left)).replace(/\uFFFD$/, '') });
    return { content: out, cut: true };
  }
  return { content: out, cut: false };
}
