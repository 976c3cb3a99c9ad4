/// <reference types="node" />
// `l402-paywall tool <server-url> [<tool> [json-args]]`: the tools of an MCP
// server on Streamable HTTP with the prices they state, or one tool called,
// paid if it must be (a -32042 Lightning charge, or with --session a prepaid
// session opened, used, and closed with its refund before the command ends)
// within --max-sats. As for
// `l402-paywall <url>`: the result to stdout, what was paid to stderr, the
// same wallets, limits and exit codes; the server URL is the user's own choice
// and may be on their network.
import { McpToolError, McpTransportError, type ToolPaymentReceipt } from '../client/mcp-errors.js';
import { mcpToolClient, type PaidToolResult } from '../client/mcp-tools.js';
import { nodeDestinations } from '../client/node-destinations.js';
import type { Io } from './fetch-command.js';
import { DEPOSIT_OPTION, paidRun } from './session-report.js';
import { EXIT, httpUrlArgument, parse, sats, SESSION_OPTIONS, timedOut, UsageError, wholeNumber } from './settings.js';
import { printedHelpOrVersion, VERSION } from './version.js';

export const TOOL_USAGE = `Usage: l402-paywall tool <server-url> [options]                  (list its tools and prices)
       l402-paywall tool <server-url> <tool> [json-args] [options] (call one)

<server-url> is an MCP server's Streamable HTTP endpoint (such as
http://127.0.0.1:3000/api/mcp). Listed, each tool shows the price its listing
states. Called with json-args (a JSON object, default {}), a tool that asks
for payment (JSON-RPC -32042 with a Payment challenge, method lightning,
intent charge) is paid once within --max-sats, its invoice checked as
l402-paywall <url> checks one, and called again with the credential. A tool
sold by the prepaid session (intent session) is paid with --session: its
deposit paid, the call made on the session, the session closed and its
refund looked for in the wallet before the command ends. The
result's text goes to stdout (--json: the whole result as JSON); what was paid
to stderr: amount, routing fee, wallet, payment hash, challenge id and the
server's receipt.

Options:
  --max-sats N          most the call may cost, whole sats (default 10)
  --budget-sats N       most this command may spend, whole sats (default: --max-sats)
  --max-fee-sats N      routing fee limit per payment (default 10)
  --session             where the tool is sold by prepaid session, open one (its deposit within
                        --max-deposit-sats and --budget-sats), call on it, close it (refund)
  --max-deposit-sats N  most one session deposit may cost, whole sats (default 20 x --max-sats)
  --dev URL             pay with the dev wallet at URL/api/dev/pay (npm start)
  --json                print the whole result (content, structuredContent, _meta) as JSON
  --max-answer-bytes N  the most of one answer read; a larger one fails (default 4194304)
  --timeout-seconds N   the most one request may take, its answer included (default 60)
  -h, --help            this help
  -V, --version         the version
The wallet comes from the environment as for l402-paywall <url> (l402-paywall --help).

Exit codes: 0 served; 1 the tool answered an error (isError, or a JSON-RPC
error, -32042 after paying included: it is not paid twice); 2 usage or
configuration error; 3 refused to pay; 4 payment failed; 5 the server could not
be reached or did not answer as an MCP server; 130 interrupted with --session
(SIGINT, SIGTERM: the session is closed first).
`;

const DEFAULT_MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export async function toolCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse({
    args,
    allowPositionals: true,
    options: { ...SESSION_OPTIONS, json: { type: 'boolean' }, 'max-answer-bytes': { type: 'string' }, session: { type: 'boolean' }, ...DEPOSIT_OPTION },
  });
  if (printedHelpOrVersion(values, TOOL_USAGE, io.stdout)) return EXIT.SERVED;
  if (positionals.length === 0) throw new UsageError('Which MCP server? l402-paywall tool <server-url> [<tool> [json-args]] (--help for options)');
  if (positionals.length > 3) throw new UsageError(`l402-paywall tool takes a server URL, a tool and its JSON arguments, got ${positionals.length} words`);
  const [server, tool, json] = positionals as [string, string | undefined, string | undefined];
  const url = httpUrlArgument(server);
  const toolArgs = json === undefined ? {} : jsonObject(json);
  const maxAnswerBytes = wholeNumber(values['max-answer-bytes'], '--max-answer-bytes', DEFAULT_MAX_ANSWER_BYTES, 1, 'bytes');
  // With --session, Ctrl-C (or SIGTERM) during a call on the session aborts it; finish() still closes the session (its refund).
  const run = paidRun(values, io);
  const { say, sessions, flags, description } = run;
  const client = mcpToolClient(url, {
    wallet: run.wallet,
    maxPriceSats: flags.maxSats,
    maxFeeSats: flags.maxFeeSats,
    budget: run.budget,
    ...(sessions && { sessions }),
    destinations: nodeDestinations({ allowRequestedPrivate: true }),
    timeoutMs: flags.timeoutMs,
    maxAnswerBytes,
    clientInfo: { name: 'l402-paywall', version: VERSION },
  });
  try {
    if (tool === undefined) {
      const tools = await client.listTools();
      if (values.json) io.stdout.write(`${JSON.stringify(tools, null, 2)}\n`);
      else
        for (const listed of tools) {
          const price = listed.price ? `${listed.price.sats} sats a ${listed.price.intent === 'session' ? 'unit (session)' : 'call'}` : 'no price stated';
          io.stdout.write(`${listed.name}\t${price}\t${(listed.description ?? '').replace(/\s+/g, ' ').slice(0, 200)}\n`);
        }
      return EXIT.SERVED;
    }
    let called: PaidToolResult;
    try {
      called = await client.callTool(tool, toolArgs, { signal: run.signal });
    } catch (error) {
      if (error instanceof McpToolError) {
        if (error.receipt) say(paidLine(error.receipt, await description()));
        say(`${error.message} [JSON-RPC ${error.rpcCode}]`);
        return EXIT.HTTP_ERROR;
      }
      throw error;
    }
    say(called.receipt ? paidLine(called.receipt, await description()) : `paid nothing; tool ${tool}`);
    if (values.json) io.stdout.write(`${JSON.stringify(called.result, null, 2)}\n`);
    else io.stdout.write(resultText(called.result));
    return called.result.isError === true ? EXIT.HTTP_ERROR : EXIT.SERVED;
  } catch (error) {
    if (run.signal.aborted) {
      say(`interrupted (${String(run.signal.reason)}); closing the session`);
      return EXIT.INTERRUPTED;
    }
    if (error instanceof McpTransportError) {
      if (error.receipt) say(paidLine(error.receipt, await description()));
      say(timedOut(error.cause) ? `no complete answer from ${url.origin} within ${flags.timeoutMs / 1000} s (--timeout-seconds)` : error.message);
      return EXIT.NETWORK_ERROR;
    }
    const exit = run.failed(error, url.origin);
    if (exit !== undefined) return exit;
    throw error;
  } finally {
    await run.finish();
    await client.close();
  }
}

/** The JSON arguments of a tool: an object. */
function jsonObject(text: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UsageError(`The tool's arguments must be a JSON object, such as '{"city":"Lisbon"}', got ${JSON.stringify(text.slice(0, 80))}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError(`The tool's arguments must be a JSON object, such as '{"city":"Lisbon"}', got ${text.slice(0, 80)}`);
  return value as Record<string, unknown>;
}

/** The stderr line of a paid call: what, to whom, the challenge and the server's receipt (a session's opening challenge withheld: it spends the session). */
function paidLine(receipt: ToolPaymentReceipt, wallet: string): string {
  const { session } = receipt;
  const challenge = session && session.action !== 'topUp' ? 'withheld (it binds the session)' : receipt.challengeId;
  const server = receipt.serverReceipt
    ? `receipt: challenge ${receipt.serverReceipt.challengeId === receipt.challengeId ? challenge : 'withheld (it binds the session)'}, payment hash ${receipt.serverReceipt.reference}, at ${receipt.serverReceipt.timestamp}`
    : `no receipt taken (${receipt.serverReceiptProblem ?? 'the call was not served'})`;
  const host = new URL(receipt.server).host;
  if (session?.action === 'bearer')
    return `paid nothing; tool ${receipt.tool} served by ${host} on session ${session.sessionId} (a unit of its deposit); ${server}`;
  const what = session ? `${session.action === 'open' ? 'the deposit of' : 'a top-up of'} session ${session.sessionId}, ` : '';
  return `paid ${sats(receipt.amountMsat)} (routing fee ${sats(receipt.feeMsat)}) with ${wallet} to ${host} for tool ${receipt.tool}, ${what}payment hash ${receipt.paymentHash}; scheme Payment, challenge id ${challenge}; ${server}`;
}

/** A result's text items, each on its line; other items (images, resources) as JSON lines. */
function resultText(result: PaidToolResult['result']): string {
  const items = Array.isArray(result.content) ? result.content : [];
  return items
    .map((item) => {
      const text = (item as { type?: unknown; text?: unknown }).type === 'text' ? (item as { text?: unknown }).text : undefined;
      const line = typeof text === 'string' ? text : JSON.stringify(item);
      return line.endsWith('\n') ? line : `${line}\n`;
    })
    .join('');
}
