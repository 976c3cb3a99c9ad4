// `npm start`: one Node process that serves the project the way Vercel does in
// production, so the `api/` files and `public/` run unchanged in both places.
//
// Routing, in Vercel's order:
//   1. `headers` rules from vercel.json are matched against the path the client
//      asked for (before any rewrite) and added to whatever response goes out.
//   2. The filesystem: a static `api/` function, then a file under `public/`,
//      then a dynamic `api/` function (`[name]` segments).
//   3. `rewrites`, in order. After each matching rewrite the filesystem is
//      checked again; on a miss the next rules see the rewritten path.
//   4. 404: JSON `{error, code: "NOT_FOUND"}` under /api, plain text elsewhere.
//
// The vercel.json subset understood here (anything else is warned about at
// start-up, never silently half-applied):
//   - `rewrites: [{source, destination}]` with internal destinations. When the
//     destination path uses none of the source's named params, all of them are
//     added to the query (Vercel's rule, see @vercel/routing-utils
//     `replaceSegments`). The destination may carry its own query, with `:name`
//     placeholders. The function still sees the path the client requested, with
//     the merged query: the client's own query keys win, as in `vercel dev`.
//   - `headers: [{source, headers: [{key, value}]}]`; `:name` placeholders in
//     values are filled from the source. A header the function set itself wins.
//   - Not supported: `has`/`missing`, `statusCode`, external (http…)
//     destinations, `redirects`, `routes`, `cleanUrls`, `trailingSlash`.
// Source patterns follow Vercel's path-to-regexp v6 dialect, compiled here
// because path-to-regexp 8+ dropped inline regexes like `(.*)`: `:name`,
// `:name(regex)`, unnamed `(regex)`, the modifiers `?`, `*` and `+` (the `/`
// before a parameter belongs to it, so `/a/:rest*` matches `/a`), `\` escapes.
// Matching is case-sensitive and strict about trailing slashes, as on Vercel.
//
// API functions use the fetch Web-standard export
// (`export default { fetch(request) }`). They are found at start-up and imported
// on first use, so start-up stays fast and a broken file only breaks its route;
// Node caches each import, so edits need a restart. As on Vercel, a `[name]`
// segment reaches the function as the query parameter `name` (the path's value
// replaces a client-sent one), and `x-real-ip` / `x-forwarded-for` carry the
// socket's address whatever the client sent. Responses are written by
// @hono/node-server, which like Vercel's own bridge sends repeated fields
// (e.g. two WWW-Authenticate challenges) as one comma-joined line; only
// Set-Cookie keeps one line per value.
import { createServer, type Server } from 'node:http';
import { existsSync, realpathSync, type Dirent } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { getRequestListener, type Http2Bindings, type HttpBindings } from '@hono/node-server';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { z } from 'zod';
import { ConfigError, describeEmbeddedDefaults, loadConfig } from '../lib/config.js';

export interface DevServerOptions {
  /** Project root holding `api/`, `public/` and `vercel.json`. Defaults to this repository. */
  root?: string;
  /** 0 picks a free port. */
  port?: number;
  host?: string;
}

export interface DevServer {
  url: string;
  close(): Promise<void>;
}

const PROJECT_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const root = resolve(options.root ?? PROJECT_ROOT);
  const host = options.host ?? '127.0.0.1';
  const [api, vercel] = await Promise.all([discoverApiRoutes(root), readVercelJson(root)]);
  const publicDir = join(root, 'public');
  const statics = existsSync(publicDir) ? staticFileApp(publicDir) : undefined;
  const handler = createHandler({ root, api, vercel, statics });

  // overrideGlobalObjects: false keeps the real global Request/Response, which
  // is what the functions get on Vercel too.
  const server = createServer(getRequestListener(handler, { overrideGlobalObjects: false }));
  await listen(server, options.port ?? 3000, host);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port ?? 3000;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((done, fail) => {
        server.close((err) => (err ? fail(err) : done()));
        // Keep-alive sockets would otherwise hold close() open for seconds.
        server.closeAllConnections();
      }),
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((done, fail) => {
    const onError = (err: Error) => fail(err);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      done();
    });
  });
}

// ---------------------------------------------------------------------------
// Request handling

type Bindings = HttpBindings | Http2Bindings;
type FetchHandler = { fetch(request: Request): Response | Promise<Response> };

interface HandlerParts {
  root: string;
  api: ApiRoutes;
  vercel: VercelRules;
  statics: Hono | undefined;
}

function createHandler({ root, api, vercel, statics }: HandlerParts) {
  const modules = new Map<string, Promise<unknown>>();

  function loadModule(file: string): Promise<unknown> {
    let loaded = modules.get(file);
    if (!loaded) {
      loaded = import(pathToFileURL(file).href);
      modules.set(file, loaded);
    }
    return loaded;
  }

  async function invoke(file: string, request: Request): Promise<Response> {
    const name = relative(root, file);
    let handler: FetchHandler | undefined;
    try {
      handler = fetchExport(await loadModule(file));
    } catch (err) {
      console.error(`dev-server: could not load ${name}:`, err);
      return internalError();
    }
    if (!handler) {
      console.error(`dev-server: ${name} has no default export with a fetch(request) method, so it is not a function Vercel can run`);
      return internalError();
    }
    try {
      const response = await handler.fetch(request);
      if (response instanceof Response) return response;
      console.error(`dev-server: ${name} returned ${describe(response)} instead of a Response`);
    } catch (err) {
      console.error(`dev-server: ${request.method} ${new URL(request.url).pathname} failed in ${name}:`, err);
    }
    return internalError();
  }

  return async function handle(request: Request, env: Bindings): Promise<Response> {
    const url = new URL(request.url);
    const headerRules = vercel.headers.flatMap((rule) => {
      const values = matchPattern(rule.pattern, url.pathname);
      return values ? [{ rule, values }] : [];
    });
    let response: Response;
    try {
      response = await route(request, url, clientAddress(env));
    } catch (err) {
      console.error(`dev-server: ${request.method} ${url.pathname} failed:`, err);
      response = internalError();
    }
    const extra: [string, string][] = [];
    for (const { rule, values } of headerRules) {
      for (const { key, value } of rule.headers) extra.push([key, fillPlaceholders(value, values)]);
    }
    return withHeaders(response, extra);
  };

  async function route(request: Request, url: URL, ip: string | undefined): Promise<Response> {
    // The function sees the client's path; routing may only change the query.
    const callFunction = (file: string, query: URLSearchParams) => {
      const target = urlAt(url, url.pathname);
      target.search = query.toString();
      return invoke(file, functionRequest(request, target, ip));
    };

    const tryFilesystem = async (path: string, query: URLSearchParams): Promise<Response | undefined> => {
      const exact = api.exact.get(path);
      if (exact) return callFunction(exact, query);
      if (statics && (request.method === 'GET' || request.method === 'HEAD')) {
        const file = await statics.fetch(new Request(urlAt(url, path), { method: request.method, headers: request.headers }));
        if (file.status !== 404) return file;
      }
      const dynamic = matchDynamicRoute(api.dynamic, path);
      if (dynamic) {
        const withParams = new URLSearchParams(query);
        // The path decided the route, so its value beats a same-named query key.
        for (const [name, value] of dynamic.params) withParams.set(name, value);
        return callFunction(dynamic.file, withParams);
      }
      return undefined;
    };

    let path = url.pathname;
    let query = new URLSearchParams(url.search);
    const direct = await tryFilesystem(path, query);
    if (direct) return direct;
    for (const rewrite of vercel.rewrites) {
      const values = matchPattern(rewrite.pattern, path);
      if (!values) continue;
      ({ path, query } = applyRewrite(rewrite.destination, values, query));
      const hit = await tryFilesystem(path, query);
      if (hit) return hit;
    }
    return notFound(url.pathname);
  }
}

// Not new URL(path, base): a path like //host/x would replace the host.
function urlAt(base: URL, path: string): URL {
  const url = new URL(base.origin);
  url.pathname = path;
  return url;
}

function fetchExport(module: unknown): FetchHandler | undefined {
  const candidate = (module as { default?: unknown } | null)?.default;
  if (candidate && typeof (candidate as { fetch?: unknown }).fetch === 'function') return candidate as FetchHandler;
  return undefined;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'no constructor'})`;
  return typeof value;
}

/** The request a function receives: Vercel's client-IP headers set from the socket, never from the client. */
function functionRequest(request: Request, url: URL, ip: string | undefined): Request {
  const headers = new Headers(request.headers);
  if (ip) {
    headers.set('x-real-ip', ip);
    headers.set('x-forwarded-for', ip);
  } else {
    headers.delete('x-real-ip');
    headers.delete('x-forwarded-for');
  }
  const init: RequestInit & { duplex?: 'half' } = { method: request.method, headers, signal: request.signal };
  if (request.body) {
    init.body = request.body;
    init.duplex = 'half';
  }
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

// serveStatic refuses `..` segments (percent-encoded ones too), backslashes and
// repeated slashes, so no traversal reaches the filesystem (the tests try the
// usual spellings); it also sets Content-Type, Content-Length and Last-Modified
// and answers HEAD and Range requests.
function staticFileApp(publicDir: string): Hono {
  const app = new Hono();
  app.use('*', serveStatic({ root: publicDir }));
  return app;
}

// ---------------------------------------------------------------------------
// api/ file routing

interface DynamicRoute {
  file: string;
  segments: Array<{ param: string } | { literal: string }>;
}

interface ApiRoutes {
  exact: Map<string, string>;
  /** Most specific first: at the first segment where two routes differ, a literal beats a parameter. */
  dynamic: DynamicRoute[];
}

const FUNCTION_FILE = /^(?!_)(.+)\.(ts|js)$/;
const PARAM_SEGMENT = /^\[([A-Za-z_$][\w$]*)\]$/;

async function discoverApiRoutes(root: string): Promise<ApiRoutes> {
  const apiDir = join(root, 'api');
  const exact = new Map<string, string>();
  const dynamic: DynamicRoute[] = [];
  const seen = new Map<string, string>();
  if (!existsSync(apiDir)) return { exact, dynamic };

  for (const file of await listFunctionFiles(apiDir)) {
    const parts = relative(apiDir, file).split(sep);
    const last = parts.pop()!.replace(FUNCTION_FILE, '$1');
    if (last !== 'index') parts.push(last);
    const routePath = '/' + ['api', ...parts].join('/');
    const shape = routePath.replace(/\[[^\]]*\]/g, '[]');
    const clash = seen.get(shape);
    if (clash) {
      throw new Error(`${relative(root, clash)} and ${relative(root, file)} both answer ${routePath}; keep one (Vercel rejects conflicting function paths too)`);
    }
    seen.set(shape, file);
    const segments = ['api', ...parts].map((part) => {
      const param = PARAM_SEGMENT.exec(part)?.[1];
      return param ? { param } : { literal: part };
    });
    if (segments.some((s) => 'param' in s)) dynamic.push({ file, segments });
    else exact.set(routePath, file);
  }
  dynamic.sort((a, b) => {
    for (let i = 0; i < Math.min(a.segments.length, b.segments.length); i++) {
      const aParam = 'param' in a.segments[i]!;
      const bParam = 'param' in b.segments[i]!;
      if (aParam !== bParam) return aParam ? 1 : -1;
    }
    return 0;
  });
  return { exact, dynamic };
}

// Vercel builds every .ts/.js file under api/ except type declarations and
// underscore-prefixed files and folders, which is where shared helpers live.
async function listFunctionFiles(dir: string): Promise<string[]> {
  const entries: Dirent[] = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  const files: string[] = [];
  for (const entry of entries) {
    if (entry.name.startsWith('_') || entry.name.startsWith('.') || entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...(await listFunctionFiles(path)));
    else if (entry.isFile() && FUNCTION_FILE.test(entry.name) && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

function matchDynamicRoute(routes: DynamicRoute[], path: string): { file: string; params: [string, string][] } | undefined {
  const parts = path.split('/').slice(1);
  for (const route of routes) {
    if (route.segments.length !== parts.length) continue;
    const params: [string, string][] = [];
    const fits = route.segments.every((segment, i) => {
      const part = parts[i]!;
      if ('literal' in segment) return segment.literal === part;
      if (part === '') return false;
      params.push([segment.param, safeDecode(part)]);
      return true;
    });
    if (fits) return { file: route.file, params };
  }
  return undefined;
}

// ---------------------------------------------------------------------------
// vercel.json

interface PathPattern {
  regex: RegExp;
  /** One per capture group: the param name, or its position for unnamed groups. */
  keys: Array<string | number>;
}

type Captures = Map<string | number, string | undefined>;

interface VercelRules {
  rewrites: Array<{ pattern: PathPattern; destination: string }>;
  headers: Array<{ pattern: PathPattern; headers: Array<{ key: string; value: string }> }>;
}

const Conditions = { has: z.array(z.unknown()).optional(), missing: z.array(z.unknown()).optional() };
const VercelJsonSchema = z.looseObject({
  rewrites: z
    .array(z.object({ source: z.string(), destination: z.string(), statusCode: z.number().optional(), ...Conditions }))
    .optional(),
  headers: z
    .array(z.object({ source: z.string(), headers: z.array(z.object({ key: z.string(), value: z.string() })), ...Conditions }))
    .optional(),
});

const UNSUPPORTED_KEYS = ['redirects', 'routes', 'cleanUrls', 'trailingSlash'];

async function readVercelJson(root: string): Promise<VercelRules> {
  const file = join(root, 'vercel.json');
  const rules: VercelRules = { rewrites: [], headers: [] };
  if (!existsSync(file)) return rules;
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new Error(`vercel.json is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = VercelJsonSchema.safeParse(json);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`vercel.json: ${detail}`);
  }
  const config = parsed.data;
  const warn = (message: string) => console.warn(`dev-server: vercel.json ${message}`);

  for (const key of UNSUPPORTED_KEYS) {
    if (key in config) warn(`\`${key}\` is not supported by the dev server and is ignored here (Vercel still applies it)`);
  }
  config.rewrites?.forEach((rule, i) => {
    const where = `rewrites[${i}] (${rule.source})`;
    if (rule.has || rule.missing || rule.statusCode !== undefined) {
      return warn(`${where} uses has/missing/statusCode, which the dev server does not support; rule ignored`);
    }
    if (!rule.destination.startsWith('/')) return warn(`${where} has an external destination; rule ignored`);
    rules.rewrites.push({ pattern: compileSource(rule.source, where), destination: rule.destination });
  });
  config.headers?.forEach((rule, i) => {
    const where = `headers[${i}] (${rule.source})`;
    if (rule.has || rule.missing) return warn(`${where} uses has/missing, which the dev server does not support; rule ignored`);
    rules.headers.push({ pattern: compileSource(rule.source, where), headers: rule.headers });
  });
  return rules;
}

// v6's default for a parameter: one path segment.
const DEFAULT_SEGMENT = '[^\\/#\\?]+?';

function compileSource(source: string, where = source): PathPattern {
  if (!source.startsWith('/')) throw new Error(`vercel.json ${where}: source must start with "/"`);
  const keys: PathPattern['keys'] = [];
  let re = '';
  let unnamed = 0;
  let i = 0;
  while (i < source.length) {
    const char = source[i]!;
    if (char === '\\') {
      re += escapeRegex(source[i + 1] ?? '');
      i += 2;
      continue;
    }
    let key: string | number;
    let pattern = DEFAULT_SEGMENT;
    const name = char === ':' ? /^[A-Za-z_]\w*/.exec(source.slice(i + 1))?.[0] : undefined;
    if (name) {
      key = name;
      i += 1 + name.length;
      if (source[i] === '(') ({ pattern, end: i } = readGroup(source, i, where));
    } else if (char === '(') {
      key = unnamed++;
      ({ pattern, end: i } = readGroup(source, i, where));
    } else {
      re += escapeRegex(char);
      i++;
      continue;
    }
    const modifier = source[i] === '?' || source[i] === '*' || source[i] === '+' ? source[i++]! : '';
    const prefix = re.endsWith('/') ? '/' : '';
    if (prefix) re = re.slice(0, -1);
    const repeated = `(?:${pattern})(?:${prefix}(?:${pattern}))*`;
    re +=
      modifier === '?' ? `(?:${prefix}(${pattern}))?`
      : modifier === '*' ? `(?:${prefix}(${repeated}))?`
      : modifier === '+' ? `${prefix}(${repeated})`
      : `${prefix}(${pattern})`;
    keys.push(key);
  }
  try {
    return { regex: new RegExp(`^${re}$`), keys };
  } catch (err) {
    throw new Error(`vercel.json ${where}: ${(err as Error).message}`);
  }
}

function readGroup(source: string, start: number, where: string): { pattern: string; end: number } {
  let depth = 0;
  for (let i = start; i < source.length; i++) {
    const char = source[i];
    if (char === '\\') {
      i++;
    } else if (char === '(') {
      // Extra capture groups would shift every later parameter, so v6 forbids them.
      if (depth > 0 && source[i + 1] !== '?') throw new Error(`vercel.json ${where}: capturing groups are not allowed inside a pattern; use (?:...)`);
      depth++;
    } else if (char === ')' && --depth === 0) {
      const pattern = source.slice(start + 1, i);
      if (!pattern) throw new Error(`vercel.json ${where}: empty group`);
      return { pattern, end: i + 1 };
    }
  }
  throw new Error(`vercel.json ${where}: unbalanced parenthesis`);
}

function matchPattern(pattern: PathPattern, path: string): Captures | undefined {
  const match = pattern.regex.exec(path);
  if (!match) return undefined;
  return new Map(pattern.keys.map((key, i) => [key, match[i + 1]]));
}

const PLACEHOLDER = /(\/?):([A-Za-z_]\w*)([*+?]?)/g;

/** Fills `:name` placeholders in a destination path with the raw (still encoded) captured text. */
function fillPath(template: string, values: Captures): string {
  return template.replace(PLACEHOLDER, (whole, slash: string, name: string, modifier: string) => {
    if (!values.has(name)) return whole;
    const value = values.get(name);
    // An absent optional param takes its slash with it, as compile() does in v6.
    if (!value && (modifier === '?' || modifier === '*')) return '';
    return slash + (value ?? '');
  });
}

/** Fills `:name` placeholders in header values and query values with decoded text. */
function fillPlaceholders(template: string, values: Captures): string {
  return template.replace(PLACEHOLDER, (whole, slash: string, name: string) => {
    if (!values.has(name)) return whole;
    return slash + safeDecode(values.get(name) ?? '');
  });
}

function applyRewrite(destination: string, values: Captures, incoming: URLSearchParams): { path: string; query: URLSearchParams } {
  const queryStart = destination.indexOf('?');
  const pathTemplate = queryStart === -1 ? destination : destination.slice(0, queryStart);
  const rawQuery = queryStart === -1 ? '' : destination.slice(queryStart + 1).split('#')[0]!;
  const path = fillPath(pathTemplate.split('#')[0]!, values) || '/';

  const query = new URLSearchParams();
  for (const [key, value] of new URLSearchParams(rawQuery)) query.append(key, fillPlaceholders(value, values));
  const usedInPath = [...pathTemplate.matchAll(PLACEHOLDER)].some((m) => values.has(m[2]!));
  if (!usedInPath) {
    for (const [key, value] of values) {
      if (typeof key === 'string' && value !== undefined && !query.has(key)) query.set(key, safeDecode(value));
    }
  }
  for (const key of new Set(incoming.keys())) {
    query.delete(key);
    for (const value of incoming.getAll(key)) query.append(key, value);
  }
  return { path, query };
}

function escapeRegex(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// ---------------------------------------------------------------------------
// npm start

function isMainModule(): boolean {
  const script = process.argv[1];
  if (!script) return false;
  let path = resolve(script);
  try {
    path = realpathSync(path);
  } catch {
    // keep the unresolved path
  }
  return import.meta.url === pathToFileURL(path).href;
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(err.message);
    process.exit(1);
  }
  const { port, host } = config.server;
  let server: DevServer;
  try {
    server = await startDevServer({ port, host });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') console.error(`Port ${port} is in use; set PORT=... to use another one`);
    else if (code === 'EACCES') console.error(`Not allowed to listen on ${host}:${port}; set PORT=... to a port above 1023`);
    else console.error(`Could not start the dev server: ${(err as Error).message}`);
    process.exit(1);
  }
  console.log(`L402 dev server on ${server.url}`);
  for (const line of describeEmbeddedDefaults(config)) console.log(`  ${line}`);

  let stopping = false;
  const stop = () => {
    // A second Ctrl-C means "now", even if connections are still draining.
    if (stopping) process.exit(1);
    stopping = true;
    server.close().then(
      () => process.exit(0),
      (err: unknown) => {
        console.error('dev-server: error while closing:', err);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

if (isMainModule()) await main();
