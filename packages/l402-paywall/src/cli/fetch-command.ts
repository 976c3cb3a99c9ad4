/// <reference types="node" />
// `l402-paywall <url>`: one request, paid if it must be, within --max-sats.
// The body goes to stdout (bytes as received, streamed), what was paid to
// stderr. The URL is the user's own choice and may be on their network; a
// redirect from a public host into a non-public one is refused
// (docs/security.md). Each request ends within --timeout-seconds.
import { once } from 'node:events';
import { fetchWithL402 } from '../client/fetch.js';
import { getPaymentReceipt, type PaymentReceipt } from '../client/receipts.js';
import { L402ClientError } from '../client/errors.js';
import { nodeDestinations } from '../client/node-destinations.js';
import { EXIT, httpUrlArgument, parse, sats, SESSION_OPTIONS, timedOut, UsageError } from './settings.js';
import { DEPOSIT_OPTION, paidRun } from './session-report.js';
import { printedHelpOrVersion } from './version.js';

export const FETCH_USAGE = `Usage: l402-paywall <url> [options]
       l402-paywall mcp [options]          (MCP server on stdio; l402-paywall mcp --help)
       l402-paywall tool <server-url> [<tool> [json-args]]   (an MCP server's paid tools; l402-paywall tool --help)

Fetches <url>, paying its L402 challenge or its Payment challenge (the IETF
"Payment" scheme, MPP: method lightning, intent charge) within --max-sats.
Other Payment methods and intents are never paid. The body goes to stdout;
what was paid goes to stderr: the schemes offered, the one paid, and for
Payment the challenge id and the server's receipt (payment hash, time).

Options:
  --max-sats N        most one request may cost, whole sats (default 10)
  --budget-sats N     most this command may spend in all, whole sats (default: --max-sats;
                      with --session, --max-deposit-sats if larger)
  --max-fee-sats N    routing fee limit per payment, for wallets that take one (default 10)
  --scheme S          l402 or payment: the scheme to pay in when the server offers both
                      (default l402); a server offering one is paid in that one
  --session           where the server sells prepaid sessions, open one (its deposit within
                      --max-deposit-sats and --budget-sats), stream the answer topping it up
                      when asked (at most 10 top-ups, none asked again before a chunk arrived:
                      a top-up it may not pay stops the stream, exit 3), then close it. stderr
                      says each deposit and top-up paid, the refund the server claims and what
                      the wallet itself received: only that counts back ("spent in all" is
                      what the wallet paid minus what it received). Needs a wallet that makes
                      invoices without an amount (--dev, Phoenixd, LND, Core Lightning, Blink);
                      LNbits and NWC pay per request
  --max-deposit-sats N  most one session deposit may cost, whole sats (default 20 x --max-sats)
  --dev URL           pay with the dev wallet at URL/api/dev/pay: a local service (npm start) or
                      your app's createDevPayHandler route, e.g. http://127.0.0.1:3000
  -X, --request M     HTTP method (default GET, or POST with -d)
  -d, --data BODY     request body (@file reads a file, @- reads stdin)
  -H, --header H      extra header "Name: value" (repeatable)
  -i, --include       print the status line and headers before the body (to stdout)
  --timeout-seconds N the most one request may take, its answer included (default 60)
  -h, --help          this help
  -V, --version       the version

Wallet (needed only when a payment is due; without --dev, the first one set): NWC_URL; LNBITS_URL + LNBITS_ADMIN_KEY;
PHOENIXD_URL + PHOENIXD_PASSWORD; LND_REST_URL + LND_MACAROON [+ LND_TLS_CERT];
CLN_REST_URL + CLN_RUNE; BLINK_API_KEY [+ BLINK_WALLET_ID, BLINK_API_URL].
LIGHTNING_NETWORK (default bitcoin) is the network the wallet pays on.

Exit codes: 0 served; 1 the server answered an error status; 2 usage or
configuration error; 3 refused to pay (price, budget, invalid, expired or
wrong-network invoice, a Payment challenge that disagrees with its invoice,
only methods this command does not pay); 4 payment failed; 5 the URL could not be reached (no
answer, no complete answer in time, or a redirect from a public host into a
private network refused); 130 interrupted with --session (SIGINT, SIGTERM: the
session is closed first; a second signal ends it at once).
`;

export interface Io {
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  stdin: NodeJS.ReadableStream;
  env: Record<string, string | undefined>;
  readFile(path: string): Promise<Uint8Array>;
}

export async function fetchCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse({
    args,
    allowPositionals: true,
    options: {
      ...SESSION_OPTIONS,
      request: { type: 'string', short: 'X' },
      data: { type: 'string', short: 'd' },
      header: { type: 'string', short: 'H', multiple: true },
      include: { type: 'boolean', short: 'i' },
      session: { type: 'boolean' },
      ...DEPOSIT_OPTION,
    },
  });
  if (printedHelpOrVersion(values, FETCH_USAGE, io.stdout)) return EXIT.SERVED;
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? 'Which URL? l402-paywall <url> (--help for options)' : `One URL at a time, got ${positionals.length}`);
  const url = httpUrlArgument(positionals[0]!);
  const headers = new Headers();
  for (const header of values.header ?? []) {
    const colon = header.indexOf(':');
    if (colon <= 0) throw new UsageError(`-H takes "Name: value", got "${header}"`);
    try {
      headers.append(header.slice(0, colon).trim(), header.slice(colon + 1).trim());
    } catch {
      throw new UsageError(`Not a valid header: "${header}"`);
    }
  }
  const body = values.data === undefined ? undefined : await readData(values.data, io);
  const method = (values.request ?? (body !== undefined ? 'POST' : 'GET')).toUpperCase();
  if (body !== undefined && !headers.has('content-type'))
    headers.set('content-type', looksLikeJson(body) ? 'application/json' : 'application/x-www-form-urlencoded');

  // With --session, Ctrl-C (or SIGTERM) during a session's request or stream aborts it, and the finally below still
  // closes the session, so its refund is not left to the server's idle timeout. A second signal ends the process at once.
  const run = paidRun(values, io);
  const { sessions, flags } = run;
  try {
    let response: Response;
    try {
      response = await fetchWithL402(
        url,
        { method, headers, ...(body !== undefined && { body }), signal: run.signal },
        {
          wallet: run.wallet,
          maxPriceSats: flags.maxSats,
          maxFeeSats: flags.maxFeeSats,
          ...(flags.scheme && { scheme: flags.scheme }),
          budget: run.budget,
          ...(sessions && { sessions }),
          tokens: false,
          destinations: nodeDestinations({ allowRequestedPrivate: true }),
          timeoutMs: flags.timeoutMs,
        },
      );
    } catch (error) {
      if (run.signal.aborted) return interrupted(io, run.signal.reason);
      const exit = run.failed(error, url.origin);
      if (exit !== undefined) return exit;
      throw error;
    }
    const receipt = getPaymentReceipt(response);
    const description = await run.description();
    io.stderr.write(
      receipt
        ? `l402-paywall: paid ${sats(receipt.amountMsat)} (routing fee ${sats(receipt.feeMsat)}) with ${description} to ${receipt.host}, payment hash ${receipt.paymentHash}; HTTP ${response.status}; ${schemeLine(receipt)}\n`
        : `l402-paywall: paid nothing; HTTP ${response.status}\n`,
    );
    if (receipt?.sessionNotUsed) io.stderr.write(`l402-paywall: no session opened: ${receipt.sessionNotUsed}; paid per request\n`);
    if (values.include) {
      io.stdout.write(`HTTP ${response.status} ${response.statusText}\n`);
      for (const [name, value] of response.headers) io.stdout.write(`${name}: ${value}\n`);
      io.stdout.write('\n');
    }
    let lastByte: number | undefined;
    try {
      lastByte = await copyBody(response.body, io.stdout);
    } catch (error) {
      if (run.signal.aborted) return interrupted(io, run.signal.reason);
      if (timedOut(error)) return noCompleteAnswer(io, url, flags.timeoutMs);
      // A metered stream asked for a top-up that was not paid: it ends here, said as an unpaid request is.
      if (error instanceof L402ClientError) {
        io.stderr.write(`l402-paywall: the stream stopped at a top-up: ${error.message} [${error.code}]\n`);
        return error.refused ? EXIT.REFUSED : EXIT.PAYMENT_FAILED;
      }
      // Or the server would not sell the top-up (no deposit offered: rate limited, say): the stream ended there too.
      const topUpError = sessions?.list().find((held) => held.topUpError !== undefined)?.topUpError;
      if (topUpError !== undefined) {
        io.stderr.write(`l402-paywall: the stream stopped at a top-up: ${topUpError}\n`);
        return EXIT.HTTP_ERROR;
      }
      io.stderr.write(`l402-paywall: ${url.origin} broke off its answer\n`);
      return EXIT.NETWORK_ERROR;
    }
    // On a terminal a text body ends its line, so the shell's prompt does not follow it on the same line.
    // Piped or redirected, every body is written byte for byte as it came.
    const onTerminal = (io.stdout as { isTTY?: boolean }).isTTY === true;
    if (onTerminal && lastByte !== undefined && lastByte !== 0x0a && isText(response.headers.get('content-type'))) io.stdout.write('\n');
    return response.status < 400 ? EXIT.SERVED : EXIT.HTTP_ERROR;
  } finally {
    await run.finish();
  }
}

/** The scheme part of the stderr line: offered, paid in, and for Payment the challenge and the server's receipt. */
function schemeLine(receipt: PaymentReceipt): string {
  const line = `scheme ${receipt.scheme} (offered: ${receipt.offered.join(', ')})`;
  if (receipt.scheme !== 'Payment') return line;
  // A session's opening challenge is, with the deposit's preimage, what spends the session: its id is not printed.
  const challenge = receipt.session?.action === 'open' ? 'withheld (it binds the session)' : receipt.challengeId;
  const server = receipt.serverReceipt
    ? `Payment-Receipt: challenge ${challenge}, payment hash ${receipt.serverReceipt.reference}, at ${receipt.serverReceipt.timestamp}`
    : `no Payment-Receipt taken (${receipt.serverReceiptProblem ?? 'none sent'})`;
  return `${line}, challenge id ${challenge}; ${server}`;
}

function interrupted(io: Io, signal: unknown): number {
  io.stderr.write(`l402-paywall: interrupted (${String(signal)}); closing the session\n`);
  return EXIT.INTERRUPTED;
}

function noCompleteAnswer(io: Io, url: URL, timeoutMs: number): number {
  io.stderr.write(`l402-paywall: no complete answer from ${url.origin} within ${timeoutMs / 1000} s (--timeout-seconds)\n`);
  return EXIT.NETWORK_ERROR;
}

/** Streams the body to `out` as it arrives (a large answer never sits in memory whole); answers its last byte (undefined when empty). */
async function copyBody(body: ReadableStream<Uint8Array> | null, out: NodeJS.WritableStream): Promise<number | undefined> {
  if (!body) return undefined;
  const reader = body.getReader();
  let lastByte: number | undefined;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (value.length > 0) lastByte = value[value.length - 1];
    if (!out.write(value)) await once(out, 'drain');
  }
  await new Promise<void>((resolve, reject) => out.write('', (error) => (error ? reject(error) : resolve())));
  return lastByte;
}

async function readData(data: string, io: Io): Promise<string> {
  if (data === '@-') {
    const chunks: Buffer[] = [];
    for await (const chunk of io.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
    return Buffer.concat(chunks).toString('utf8');
  }
  if (data.startsWith('@')) {
    try {
      return new TextDecoder().decode(await io.readFile(data.slice(1)));
    } catch {
      throw new UsageError(`Cannot read ${data.slice(1)}`);
    }
  }
  return data;
}

/** JSON, XML, text/*, forms, or no type at all. */
function isText(contentType: string | null): boolean {
  if (contentType === null) return true;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type.startsWith('text/') || /[/+](json|xml)$/.test(type) || type === 'application/x-www-form-urlencoded' || type === 'application/javascript';
}

function looksLikeJson(text: string): boolean {
  const t = text.trim();
  return (t.startsWith('{') && t.endsWith('}')) || (t.startsWith('[') && t.endsWith(']'));
}
