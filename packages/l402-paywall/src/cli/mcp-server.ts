/// <reference types="node" />
// `l402-paywall mcp`: an MCP server on stdio for agents. Two tools:
//   list_paid_apis  the paid APIs a service lists at /api/apis.json (price, category)
//   call_paid_api   one HTTP request, paid within the session's limits
// Every payment is within --max-sats and the session's budget (--budget-sats),
// with the wallet the command line would use. @modelcontextprotocol/sdk is an
// optional peer dependency of the package: only this command loads it.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { fetchWithL402, getL402Receipt } from '../client/fetch.js';
import { L402ClientError } from '../client/errors.js';
import type { Io } from './fetch-command.js';
import { DEFAULT_BUDGET_SATS, EXIT, parse, SESSION_OPTIONS, sessionBudget, sessionFlags, UsageError, walletFromEnvironment } from './settings.js';

export const MCP_USAGE = `Usage: l402-paywall mcp [options]

An MCP server on stdio with the tools list_paid_apis and call_paid_api.

Options:
  --max-sats N        most one request may cost, whole sats (default 10)
  --budget-sats N     what the whole session may spend, whole sats (default ${DEFAULT_BUDGET_SATS})
  --max-fee-sats N    routing fee limit per payment (default 10)
  --dev URL           pay with the dev wallet of a local service (npm start); also the default directory
  --directory URL     the service whose /api/apis.json list_paid_apis reads (default: --dev's URL)
The wallet comes from the environment as for l402-paywall <url> (l402-paywall --help).
`;

const VERSION = '0.1.0';
/** An answer body longer than this is cut (an agent's context is not a download). */
const MAX_BODY_CHARS = 100_000;
const CATEGORIES = ['data', 'ai', 'finance', 'weather', 'compute', 'storage', 'other'] as const;
/** Answer headers an agent may need; others (cookies included) are left out. */
const HEADERS_THAT_MATTER = [
  'content-type',
  'content-length',
  'retry-after',
  'location',
  'www-authenticate',
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

export async function mcpCommand(args: string[], io: Io): Promise<number> {
  const { values } = parse({ args, options: { ...SESSION_OPTIONS, directory: { type: 'string' } } });
  if (values.help) {
    io.stderr.write(MCP_USAGE);
    return EXIT.SERVED;
  }
  const flags = sessionFlags(values, DEFAULT_BUDGET_SATS);
  const directory = values.directory ?? flags.dev ?? io.env.L402_DIRECTORY_URL;
  if (directory !== undefined && !URL.canParse(directory)) throw new UsageError(`--directory must be a URL, got "${directory}"`);
  const { wallet, description } = await walletFromEnvironment(io.env, flags.dev);
  const budget = sessionBudget(flags);

  const server = new McpServer({ name: 'l402-paywall', version: VERSION });

  server.registerTool(
    'list_paid_apis',
    {
      title: 'List paid APIs',
      description:
        'Lists the pay-per-request APIs (L402, paid in Lightning sats) a directory service knows: url, name, description, price in sats, category ' +
        "(and demo: true on the service's own demo). " +
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
        const response = await fetch(listUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
        if (!response.ok) return toolError('DIRECTORY_ERROR', `${listUrl.href} answered HTTP ${response.status}`);
        listing = Directory.parse(await response.json());
      } catch (error) {
        return toolError('DIRECTORY_ERROR', `Could not read ${listUrl.href}: ${error instanceof Error ? error.message : String(error)}`);
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
        'Sends one HTTP request; when the API answers 402 with an L402 challenge, pays its Lightning invoice (checked: amount, network, expiry) and retries. ' +
        `Never pays more than max_price_sats (at most ${flags.maxSats}) for one request, nor more than the session budget of ${flags.budgetSats} sats in all. ` +
        'Returns status, the headers that matter, the body, and the sats paid.',
      inputSchema: {
        url: z.url().describe('the API URL (http or https)'),
        method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('GET'),
        body: z.string().max(1_000_000).optional().describe('request body (JSON text for JSON APIs)'),
        content_type: z.string().max(200).optional().describe('Content-Type of body; default application/json when body is given'),
        max_price_sats: z.number().int().positive().optional().describe(`most this request may cost (default and ceiling ${flags.maxSats})`),
      },
    },
    async ({ url, method, body, content_type, max_price_sats }) => {
      const maxPriceSats = Math.min(max_price_sats ?? flags.maxSats, flags.maxSats);
      const headers: Record<string, string> = { accept: 'application/json, text/plain;q=0.9, */*;q=0.5' };
      if (body !== undefined) headers['content-type'] = content_type ?? 'application/json';
      let response: Response;
      try {
        response = await fetchWithL402(
          url,
          { method, headers, ...(body !== undefined && { body }) },
          { wallet, maxPriceSats, maxFeeSats: flags.maxFeeSats, budget },
        );
      } catch (error) {
        if (error instanceof L402ClientError) return toolError(error.code, error.message, { refused: error.refused, ...error.details });
        return toolError('REQUEST_FAILED', `Could not reach ${new URL(url).origin}: ${error instanceof Error ? error.message : String(error)}`);
      }
      const receipt = getL402Receipt(response);
      const text = await response.text();
      const answerHeaders: Record<string, string> = {};
      for (const name of HEADERS_THAT_MATTER) {
        const value = response.headers.get(name);
        if (value !== null) answerHeaders[name] = value;
      }
      const result = {
        status: response.status,
        headers: answerHeaders,
        body: text.length > MAX_BODY_CHARS ? text.slice(0, MAX_BODY_CHARS) : text,
        ...(text.length > MAX_BODY_CHARS && { body_truncated: true }),
        sats_paid: receipt?.paidByThisCall ? receipt.amountMsat / 1000 : 0,
        fee_sats: receipt?.paidByThisCall ? receipt.feeMsat / 1000 : 0,
        ...(receipt && { payment_hash: receipt.paymentHash }),
        ...budgetState(),
      };
      return { content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }], structuredContent: result };
    },
  );

  function budgetState() {
    const spent = budget.spent();
    return { session_spent_sats: spent.totalSats, session_budget_left_sats: budget.remainingMsat() / 1000 };
  }

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.connect(transport);
  io.stderr.write(`l402-paywall mcp: ready on stdio; paying with ${description}, at most ${flags.maxSats} sats a request, ${flags.budgetSats} sats in all\n`);
  await closed;
  wallet.close?.();
  await server.close();
  return EXIT.SERVED;
}

function toolError(code: string, message: string, details: Record<string, unknown> = {}) {
  const result = { error: message, code, ...details };
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(result, null, 2) }] };
}
