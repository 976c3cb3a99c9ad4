// `npm start`: one Node process that serves the project the way Vercel does in
// production, so the `api/` files and `public/` run unchanged in both places.
//
// Routing (which `api/` function or `public/` file answers, vercel.json's
// rewrites and headers) is Vercel's, emulated by scripts/vercel-router.ts;
// this file runs what it chooses, and answers 404 when nothing matches:
// JSON `{error, code: "NOT_FOUND"}` under /api, plain text elsewhere.
//
// API functions use the fetch Web-standard export
// (`export default { fetch(request) }`). The service's own functions (made by
// serviceRoute, lib/service/deployment.ts) also have `fetchWith(request,
// deployment)`: the server calls that with the deployment it was given (npm
// start: the one built from the banner's config; a test: its own), so every
// function of one server runs with the same configuration and service context.
// They are found at start-up and imported
// on first use, so start-up stays fast and a broken file only breaks its route;
// Node caches each import, so edits need a restart. As on Vercel, a `[name]`
// segment reaches the function as the query parameter `name` (the path's value
// replaces a client-sent one), and `x-real-ip` / `x-forwarded-for` carry the
// socket's address whatever the client sent. Responses are written by
// @hono/node-server, which like Vercel's own bridge sends repeated fields
// (e.g. two WWW-Authenticate challenges) as one comma-joined line; only
// Set-Cookie keeps one line per value.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { existsSync, realpathSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { getRequestListener, type Http2Bindings, type HttpBindings } from '@hono/node-server';
import { ConfigError, describeEmbeddedDefaults, describeMissingSettings, loadConfig, type Config } from '../lib/config.js';
import { keepLocalKeys } from './local-keys.js';
import { loadVercelRouter, type VercelRouter } from './vercel-router.js';
import { createDeployment, defaultDeployment, publicBaseUrl, type Deployment } from '../lib/service/deployment.js';
import { listDemo } from '../lib/service/directory/demo-entry.js';
import { describeError } from '../lib/util/describe-error.js';
import { checkHealth } from '../lib/service/health.js';
import { DatabaseUnavailable, describeDatabase, MigrationError, openMigratedDatabase, type AppliedMigration, type Database } from '../lib/db/index.js';

export interface DevServerOptions {
  /** Project root holding `api/`, `public/` and `vercel.json`. Defaults to this repository. */
  root?: string;
  /** 0 picks a free port. */
  port?: number;
  host?: string;
  /**
   * A client must send its whole request head within this time of connecting (default 30 s), or gets 408 and is
   * disconnected: by this time at the latest, and never more than TIMEOUT_CHECK_INTERVAL_MS before it.
   */
  headersTimeoutMs?: number;
  /** ... and its whole request, body included, within this time (default 60 s), alike. */
  requestTimeoutMs?: number;
  /**
   * A client that stops reading what the server writes (a stream it never
   * reads) is disconnected once a write has waited this long to drain
   * (default 30 s): the answer ends there.
   */
  stalledWriteTimeoutMs?: number;
  /**
   * The configuration and service context the service's functions run with
   * (their `fetchWith`); default: the instance's own, from the environment
   * (defaultDeployment()), as on Vercel.
   */
  deployment?: Deployment;
}

// Counted from the connection, so the server's own lag counts too: generous
// enough that a loaded machine never cuts off a client that sent everything at
// once (10 s did, for 100 concurrent requests on two busy cores), still a
// small fraction of Node's own 60 s and 300 s.
const HEADERS_TIMEOUT_MS = 30_000;
const REQUEST_TIMEOUT_MS = 60_000;
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
// A client reading at any pace drains a write within seconds; one that does not
// read at all (the kernel's buffers full) would hold the connection, and the
// stream feeding it, for as long as the answer lasts, or forever once the rest
// of the answer waits in memory: 30 s without draining ends it.
const STALLED_WRITE_TIMEOUT_MS = 30_000;
// Node looks for clients over their time limits only every connectionsCheckingInterval
// (30 s unless set), so it cuts a client off up to one interval after its limit. Looking
// this often, with Node's limits set one interval early, cuts it off within the last
// interval before the promised time instead of up to an interval after it.
const TIMEOUT_CHECK_INTERVAL_MS = 100;

/** Node's server options that cut off a client at `headersMs` (request head) and `requestMs` (whole request) at the latest. */
function slowClientLimits(headersMs: number, requestMs: number): { headersTimeout: number; requestTimeout: number; connectionsCheckingInterval: number } {
  const interval = Math.max(1, Math.min(TIMEOUT_CHECK_INTERVAL_MS, Math.floor(headersMs / 4)));
  const request = Math.max(headersMs, requestMs);
  return { headersTimeout: headersMs - interval, requestTimeout: request - interval, connectionsCheckingInterval: interval };
}

export interface DevServer {
  url: string;
  /** The connections open now (Node's count). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Disconnects a client once a write to it has waited `stalledMs` to drain:
 * a write whose callback has not run is still in memory (the kernel's buffers
 * full, the client not reading), and each one that completes is progress.
 * Timed per connection, only while something waits, so a stream that writes
 * rarely to a client that reads is never cut, nor one that reads slowly.
 */
function endStalledWrites(server: Server, stalledMs: number): void {
  server.on('connection', (socket: Socket) => {
    let waiting = 0;
    let stalled: ReturnType<typeof setTimeout> | undefined;
    const write = socket.write as (...args: unknown[]) => boolean;
    const written = () => {
      waiting -= 1;
      if (waiting > 0) stalled?.refresh();
      else {
        clearTimeout(stalled);
        stalled = undefined;
      }
    };
    socket.write = function (this: Socket, ...args: unknown[]) {
      // write(chunk, callback?) or write(chunk, encoding, callback?): http passes an undefined callback too.
      const last = args.length - 1;
      const slot = last >= 1 && (typeof args[last] === 'function' || args[last] === undefined) ? last : args.length;
      const callback = args[slot] as ((error?: Error | null) => void) | undefined;
      args[slot] = (error?: Error | null) => {
        written();
        callback?.(error);
      };
      waiting += 1;
      stalled ??= setTimeout(() => socket.destroy(), stalledMs).unref();
      return write.apply(this, args);
    } as Socket['write'];
    socket.on('close', () => clearTimeout(stalled));
  });
}

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const root = resolve(options.root ?? PROJECT_ROOT);
  const host = options.host ?? '127.0.0.1';
  const router = await loadVercelRouter(root);

  // overrideGlobalObjects: false keeps the real global Request/Response, which
  // is what the functions get on Vercel too.
  const deployment = options.deployment ?? defaultDeployment();
  const handler = createHandler({ root, router, deployment });
  // A client that trickles its request (slowloris) is cut off: Node answers 408 and
  // closes the connection. Its defaults (60 s for the head, 300 s in all, checked
  // every 30 s) let slow clients hold the server far longer.
  const server = createServer(
    slowClientLimits(options.headersTimeoutMs ?? HEADERS_TIMEOUT_MS, options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS),
    getRequestListener(handler, { overrideGlobalObjects: false }),
  );
  // Node closes an idle kept-alive connection after 5 s, close to when a client
  // (undici) still reuses it: a request sent as the server closes fails with
  // ECONNRESET. Kept far longer, a client's own idle timeout (the hint minus its
  // margin) always ends the connection first.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  endStalledWrites(server, options.stalledWriteTimeoutMs ?? STALLED_WRITE_TIMEOUT_MS);
  server.listen(options.port ?? 3000, host);
  await once(server, 'listening'); // rejects on 'error', e.g. EADDRINUSE
  const { port } = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  // Where backends (the dev node) send webhooks when PUBLIC_URL is unset.
  deployment.localUrl = url;
  return {
    url,
    connections: () => new Promise<number>((done, fail) => server.getConnections((err, count) => (err ? fail(err) : done(count)))),
    close: () =>
      new Promise<void>((done, fail) => {
        server.close((err) => (err ? fail(err) : done()));
        // Keep-alive sockets would otherwise hold close() open for seconds.
        server.closeAllConnections();
      }),
  };
}

// ---------------------------------------------------------------------------
// Request handling

type Bindings = HttpBindings | Http2Bindings;
type FetchHandler = {
  fetch(request: Request): Response | Promise<Response>;
  fetchWith?(request: Request, deployment: Deployment): Response | Promise<Response>;
};

interface HandlerParts {
  root: string;
  router: VercelRouter;
  deployment: Deployment;
}

function createHandler({ root, router, deployment }: HandlerParts) {
  const modules = new Map<string, Promise<{ default?: Partial<FetchHandler> }>>();

  async function invoke(file: string, request: Request): Promise<Response> {
    const name = relative(root, file);
    let loaded = modules.get(file);
    if (!loaded) modules.set(file, (loaded = import(pathToFileURL(file).href)));
    let handler: Partial<FetchHandler> | undefined;
    try {
      handler = (await loaded).default;
    } catch (err) {
      console.error(`dev-server: could not load ${name}:`, err);
      return internalError();
    }
    if (typeof handler?.fetch !== 'function') {
      console.error(`dev-server: ${name} has no default export with a fetch(request) method, so it is not a function Vercel can run`);
      return internalError();
    }
    try {
      const response: unknown = typeof handler.fetchWith === 'function' ? await handler.fetchWith(request, deployment) : await handler.fetch(request);
      if (response instanceof Response) return response;
      console.error(`dev-server: ${name} returned something other than a Response:`, response);
    } catch (err) {
      console.error(`dev-server: ${request.method} ${new URL(request.url).pathname} failed in ${name}:`, err);
    }
    return internalError();
  }

  async function route(request: Request, url: URL, ip: string | undefined): Promise<Response> {
    const match = await router.route(request);
    if (!match) return notFound(url.pathname);
    if ('file' in match) return match.file;
    // The function sees the client's path; routing may only change the query.
    const target = new URL(url);
    target.search = match.query.toString();
    return invoke(match.function, functionRequest(request, target, ip));
  }

  return async function handle(request: Request, env: Bindings): Promise<Response> {
    const url = new URL(request.url);
    // Before routing, so the rules see the path the client asked for.
    const extra = router.headersFor(url.pathname);
    let response: Response;
    try {
      response = await route(request, url, clientAddress(env));
    } catch (err) {
      console.error(`dev-server: ${request.method} ${url.pathname} failed:`, err);
      response = internalError();
    }
    return withHeaders(response, extra);
  };
}

/** The request a function receives: Vercel's client-IP headers set from the socket, never from the client. */
function functionRequest(request: Request, url: URL, ip: string | undefined): Request {
  const headers = new Headers(request.headers);
  for (const name of ['x-real-ip', 'x-forwarded-for']) {
    if (ip) headers.set(name, ip);
    else headers.delete(name);
  }
  // duplex is required by Node's fetch to pass a streamed body on. A GET or
  // HEAD has no body, and asking @hono/node-server for one would build a
  // second Request (with its own abort bookkeeping) per request for nothing.
  const bodyless = request.method === 'GET' || request.method === 'HEAD';
  const init: RequestInit & { duplex: 'half' } = {
    method: request.method,
    headers,
    signal: request.signal,
    body: bodyless ? null : request.body,
    duplex: 'half',
  };
  return new Request(url, init);
}

function clientAddress(env: Bindings): string | undefined {
  const address = env.incoming.socket?.remoteAddress;
  // A dual-stack socket reports IPv4 clients as ::ffff:a.b.c.d; Vercel sends a.b.c.d.
  return address?.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

function withHeaders(response: Response, extra: [string, string][]): Response {
  const missing = extra.filter(([key]) => !response.headers.has(key));
  if (missing.length === 0) return response;
  // Responses from fetch() have immutable headers, so copy rather than mutate.
  const headers = new Headers(response.headers);
  for (const [key, value] of missing) headers.set(key, value);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}

function internalError(): Response {
  return Response.json({ error: 'Internal error', code: 'INTERNAL' }, { status: 500 });
}

function notFound(path: string): Response {
  if (path === '/api' || path.startsWith('/api/')) {
    return Response.json({ error: 'There is no API endpoint at this path.', code: 'NOT_FOUND' }, { status: 404 });
  }
  return new Response('Not found\n', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });
}

// ---------------------------------------------------------------------------
// npm start

// Node runs the main module from its real path, so compare real paths.
function isMainModule(): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false; // argv[1] is not a file
  }
}

async function main(): Promise<void> {
  // Like Vercel's `vercel dev`: settings from .env, the shell's own variables win.
  if (existsSync('.env')) process.loadEnvFile('.env');
  let config;
  try {
    // A local run's generated secret and node key are kept under DATA_DIR for the next starts (the banner says so).
    config = keepLocalKeys(loadConfig());
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(1);
  }
  const { port, host } = config.server;
  // The service's functions run with this configuration (the one the banner describes).
  const deployment = createDeployment(config);
  let server: DevServer;
  try {
    server = await startDevServer({ port, host, deployment });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') console.error(`Port ${port} is in use; set PORT=... to use another one`);
    else if (code === 'EACCES') console.error(`Not allowed to listen on ${host}:${port}; set PORT=... to a port above 1023`);
    else console.error(`Could not start the dev server: ${(err as Error).message}`);
    process.exit(1);
  }
  let database: Database | undefined;
  let stopping = false;
  const stop = () => {
    // A second Ctrl-C means "now", even if connections are still draining.
    if (stopping) process.exit(1);
    stopping = true;
    server
      .close()
      // A PGlite directory closed cleanly needs no recovery at the next start.
      .then(() => database?.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          console.error('dev-server: error while closing:', err);
          process.exit(1);
        },
      );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);

  // Migrations run before the banner, so its "... on <url>" means ready (and
  // PGlite's start-up, which holds the event loop, is over). Requests that
  // arrive meanwhile get the same shared instance from ctx.database(), so they
  // wait for the migrations instead of racing them.
  // Asked while the migrations run.
  const price = describeBtcPrice(config);
  let databaseLine: string;
  if (!config.database) {
    databaseLine = 'database: none (set DATABASE_URL); directory, Pro and payment log answer 503';
  } else if ('pgliteDir' in config.database && config.database.pgliteDir === null) {
    databaseLine = 'database: PGlite in memory (migrated on first use, gone when the server stops)';
  } else {
    const where = describeDatabase(config.database);
    let applied: AppliedMigration[] = [];
    try {
      database = await openMigratedDatabase(config.database, { onMigrated: (list) => (applied = list) });
      databaseLine = `database: ${where} (${applied.length === 0 ? 'migrations up to date' : `applied ${applied.map((m) => m.file).join(', ')}`})`;
    } catch (err) {
      if (err instanceof MigrationError) {
        // The schema the code expects is not there: better to stop than to serve errors.
        console.error(`database: ${where}: ${err.message}`);
        await server.close();
        process.exit(1);
      }
      const reason = err instanceof DatabaseUnavailable ? 'is unreachable' : 'could not be opened';
      const detail = (err as Error).message.replace(/^Database unavailable: /, '');
      databaseLine = `database: ${where} ${reason} (${detail}); directory, Pro and payment log answer 503 until it works`;
    }
  }

  const priceLine = await price;
  const demoLine = await describeDemoListing(deployment);
  // The first line says which mode runs and which setting chose it: production refuses what local runs fall back to.
  console.log(`L402 ${config.production ? 'production mode' : 'local development server'} on ${server.url} (${config.modeReason})`);
  for (const line of describeMissingSettings(config)) console.log(`  ${line}`);
  for (const line of describeEmbeddedDefaults(config)) console.log(`  ${line}`);
  if (priceLine) console.log(`  ${priceLine}`);
  console.log(`  ${databaseLine}`);
  if (demoLine) console.log(`  ${demoLine}`);
  if (config.lightning.provider !== 'dev' && config.problems.length === 0) {
    const { provider } = await checkHealth(deployment);
    console.log(
      provider.ok
        ? `  Lightning: ${provider.name} (${provider.network}) answers (${provider.latencyMs} ms)`
        : `  Lightning: ${provider.name} does NOT answer: ${provider.error}; invoices answer 503 until it does (GET /api/health)`,
    );
  }
}

/**
 * Lists the demo in the service's own directory at start-up, at its public URL
 * (PUBLIC_URL, else the address it listens on; in production without
 * PUBLIC_URL nothing), so that an agent's first list_paid_apis finds it.
 */
async function describeDemoListing(deployment: Deployment): Promise<string | undefined> {
  const publicUrl = publicBaseUrl(deployment);
  if (!deployment.config().database || !publicUrl) return undefined;
  try {
    return `directory: lists the demo at ${(await listDemo(deployment.context(), publicUrl)).join(' and ')}`;
  } catch (err) {
    return `directory: could not list the demo (${describeError(err)})`;
  }
}

/**
 * The banner's price line when price sources are configured: asks them once
 * (each within BTC_PRICE_TIMEOUT_MS), so an offline machine is told that the
 * demo will answer a simulated price. BTC_PRICE_SOURCES=none has its own line.
 */
async function describeBtcPrice(config: Config): Promise<string | undefined> {
  const names = config.demo.priceSources;
  if (names.length === 0) return undefined;
  const { PUBLIC_SOURCES, createPriceFeed } = await import('../lib/service/records/price.js');
  const unknown = names.filter((name) => !PUBLIC_SOURCES[name]);
  if (unknown.length > 0)
    return `BTC price: unknown source ${unknown.join(', ')} in BTC_PRICE_SOURCES (known: ${Object.keys(PUBLIC_SOURCES).join(', ')}, or none)`;
  const price = await createPriceFeed(
    names.map((name) => PUBLIC_SOURCES[name]!),
    config.demo.priceTimeoutMs,
  ).current();
  if (price.source === 'simulated') return `BTC price: simulated (no source answered: ${names.join(', ')}; offline?)`;
  return `BTC price: live, $${price.usd} from ${price.source}`;
}

if (isMainModule()) await main();
