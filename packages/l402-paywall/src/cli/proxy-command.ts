/// <reference types="node" />
// `l402-paywall proxy`: sells an HTTP service as a reverse proxy
// (docs/proxy.md). `l402-paywall proxy <upstream> --price-sats N` sells every
// path for one price; `--config l402-proxy.json` reads routes from a file
// (checked against the schema at start: a bad field is named, exit 2). The
// backend, secret and stores come from the environment (proxy-environment.ts),
// or --dev embeds the dev node. Runs until SIGINT or SIGTERM.
import { createProxy } from '../proxy/handler.js';
import { parseProxyConfig, ProxyConfigError, type ProxyConfig, type ProxyConfigInput } from '../proxy/config.js';
import { listenProxy } from '../proxy/node-server.js';
import type { Io } from './fetch-command.js';
import { proxyEnvironment } from './proxy-environment.js';
import { EXIT, UsageError, parse, wholeNumber } from './settings.js';
import { printedHelpOrVersion } from './version.js';

export const PROXY_USAGE = `Usage: l402-paywall proxy <upstream-url> --price-sats N [options]
       l402-paywall proxy --config l402-proxy.json [<upstream-url>] [options]

Sells the HTTP service at <upstream-url>: a request without a valid payment
gets 402 and never reaches it; a paid one is forwarded once, and its answer
comes back as the upstream gave it (docs/proxy.md).

  --price-sats N      sell every path for N whole satoshis per request
  --config FILE       routes from a JSON file (its JSON Schema:
                      l402-paywall/proxy-config.schema.json); an upstream
                      given on the command line replaces the file's
  --port N            the port to listen on (default 8402; 0: a free one)
  --host ADDRESS      the address to listen on (default 127.0.0.1)
  --dev               embed the dev Lightning node (fake money; never in
                      production): the proxy answers POST /api/dev/pay, so
                      \`l402-paywall --dev <proxy-url> <proxy-url>/path\` pays it
  -h, --help          this help
  -V, --version       the version

Environment (without --dev): LIGHTNING_PROVIDER (lnbits, phoenixd, lnd, cln,
nwc, blink) and its settings, LIGHTNING_NETWORK, L402_SECRET (at least 32
characters). REDIS_URL or UPSTASH_REDIS_REST_URL + _TOKEN share uses and
sessions between instances; else they are kept in memory.

Exit codes: 0 stopped by SIGINT or SIGTERM; 2 usage or configuration error.
`;

export const DEFAULT_PROXY_PORT = 8402;

export interface ProxyCommandOptions {
  /** Resolves when the proxy should stop; default the first SIGINT or SIGTERM. */
  stopped?: Promise<unknown>;
}

export async function proxyCommand(args: string[], io: Io, options: ProxyCommandOptions = {}): Promise<number> {
  const { values, positionals } = parse({
    args,
    allowPositionals: true,
    options: {
      'price-sats': { type: 'string' },
      config: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      dev: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'V' },
    },
  });
  if (printedHelpOrVersion(values, PROXY_USAGE, io.stdout)) return EXIT.SERVED;
  if (positionals.length > 1) throw new UsageError(`One upstream at a time, got ${positionals.length}`);
  const config = await proxyConfig(positionals[0], values, io);
  const port = wholeNumber(values.port, '--port', DEFAULT_PROXY_PORT, 0, 'a port');
  if (port > 65_535) throw new UsageError(`--port must be at most 65535, got "${port}"`);
  const host = values.host ?? '127.0.0.1';
  const environment = await proxyEnvironment(io.env, values.dev === true);
  const say = (line: string) => io.stderr.write(`l402-paywall proxy: ${line}\n`);
  const onError = (error: unknown, context: string) => say(`${context}: ${error instanceof Error ? error.message : String(error)}`);
  let handler: ReturnType<typeof createProxy>;
  try {
    handler = createProxy(config, {
      provider: environment.provider,
      secret: environment.secret,
      ...(environment.devNode && { devNode: environment.devNode }),
      ...(environment.replayStore && { replayStore: environment.replayStore }),
      ...(environment.sessionLedger && { sessionLedger: environment.sessionLedger }),
      onError,
    });
  } catch (error) {
    await environment.close();
    // withL402's own checks (a session route on a backend that cannot refund): a configuration error.
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  let server: Awaited<ReturnType<typeof listenProxy>>;
  try {
    server = await listenProxy(handler, { port, host, onError });
  } catch (error) {
    await environment.close();
    throw new UsageError(`cannot listen on ${host}:${port}: ${(error as Error).message}`);
  }
  say(`listening on ${server.url}, selling ${config.upstream}`);
  for (const route of config.routes) say(`  ${describeRoute(route)}`);
  for (const line of environment.described) say(line);
  await (options.stopped ?? signalled());
  say('stopping');
  await server.close();
  await environment.close();
  return EXIT.SERVED;
}

/** The configuration: the file's (the command line's upstream replacing its own), or one route selling every path. */
async function proxyConfig(upstream: string | undefined, values: { 'price-sats'?: string; config?: string }, io: Io): Promise<ProxyConfig> {
  let input: ProxyConfigInput;
  if (values.config !== undefined) {
    if (values['price-sats'] !== undefined) throw new UsageError('--price-sats or --config: the file names the prices of its routes');
    let text: string;
    try {
      text = new TextDecoder().decode(await io.readFile(values.config));
    } catch (error) {
      throw new UsageError(`--config: cannot read ${values.config}: ${(error as Error).message}`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (error) {
      throw new UsageError(`--config: ${values.config} is not JSON: ${(error as Error).message}`);
    }
    input = (upstream !== undefined && parsed && typeof parsed === 'object' ? { ...parsed, upstream } : parsed) as ProxyConfigInput;
  } else {
    if (upstream === undefined) throw new UsageError('Which upstream? l402-paywall proxy <upstream-url> --price-sats N (--help for options)');
    if (values['price-sats'] === undefined) throw new UsageError('How much? --price-sats N sells every path for N satoshis, or --config FILE names routes');
    input = { upstream, routes: [{ path: '/*', priceSats: wholeNumber(values['price-sats'], '--price-sats', 1) }] };
  }
  try {
    return parseProxyConfig(input);
  } catch (error) {
    if (error instanceof ProxyConfigError)
      throw new UsageError(`${values.config ? `--config ${values.config}` : 'the command line'}: ${error.issues.join('; ')}`);
    throw error;
  }
}

function describeRoute(route: ProxyConfig['routes'][number]): string {
  const methods = route.methods ? route.methods.join(',') : 'any method';
  const sale = route.free
    ? 'free'
    : route.session
      ? `by the session, ${route.session.unitSats} sat a ${route.meter ? 'reported unit' : 'request'}${route.meter ? ` (meter ${route.meter})` : ''}`
      : `${route.priceSats} sat a request`;
  return `${route.path} (${methods}): ${sale}`;
}

/** The first SIGINT or SIGTERM. */
function signalled(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
