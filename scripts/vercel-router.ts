// Vercel's router, emulated for `npm start` (scripts/dev-server.ts): which
// `api/` function or `public/` file answers a request, found from the files
// under `api/` and `public/` and the rules of `vercel.json`. It decides; the
// server runs the function (and answers 404 when nothing matches).
//
// Routing, in Vercel's order:
//   1. `headers` rules from vercel.json are matched against the path the client
//      asked for (before any rewrite) and added to whatever response goes out.
//   2. The filesystem: a static `api/` function, then a file under `public/`,
//      then a dynamic `api/` function (`[name]` segments).
//   3. `rewrites`, in order. After each matching rewrite the filesystem is
//      checked again; on a miss the next rules see the rewritten path.
//   4. Nothing: the server answers 404 (JSON under /api, plain text elsewhere).
//
// The vercel.json subset understood here (the routing it does not support is
// warned about at start-up, never silently half-applied):
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
//   - Other keys have no local meaning and are accepted silently, e.g.
//     `functions` (bundling, memory, duration) and `crons` (call the path by hand).
// Sources and destination paths are path-to-regexp v6 patterns, compiled by
// that library with the options Vercel uses (routing-utils `sourceToRegex`):
// case-sensitive, strict about trailing slashes. Placeholders get the text the
// client sent, still percent-encoded, as with Vercel's `$1` substitution: an
// encoded `/` stays inside its segment, and a query is decoded once, when parsed.
//
// Function files: Vercel builds every .ts/.js file under api/ except type
// declarations and underscore-prefixed files and folders (shared helpers). A
// `[name]` segment matches any non-empty segment and reaches the function as
// the query parameter `name`, decoded (the path's value replaces a client-sent
// one); of two routes, the one with a literal where the other has a parameter
// wins. Static files are served by @hono/node-server's serveStatic, which
// refuses `..` segments (percent-encoded ones too), backslashes and repeated
// slashes, so no traversal reaches the filesystem; it also sets Content-Type,
// Content-Length and Last-Modified and answers HEAD and Range requests.
import { existsSync, type Dirent } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative, sep } from 'node:path';
import { serveStatic } from '@hono/node-server/serve-static';
import { Hono } from 'hono';
import { parse, pathToRegexp, tokensToFunction, type Key, type PathFunction } from 'path-to-regexp';
import { z } from 'zod';

/** What answers a request: an `api/` function (run with this query; it sees the client's path), or a `public/` file. */
export type RouteMatch = { function: string; query: URLSearchParams } | { file: Response };

export interface VercelRouter {
  /** The `headers` rules of vercel.json that match the path the client asked for, placeholders filled: added to whatever answers. */
  headersFor(path: string): Array<[string, string]>;
  /** What answers `request` (its method and headers matter to static files), after any rewrites; undefined: nothing (404). */
  route(request: Request): Promise<RouteMatch | undefined>;
}

/** The router of the project at `root` (its `api/`, `public/` and `vercel.json`); throws on conflicting routes or an invalid vercel.json. */
export async function loadVercelRouter(root: string): Promise<VercelRouter> {
  const [api, vercel] = await Promise.all([discoverApiRoutes(root), readVercelJson(root)]);
  const publicDir = join(root, 'public');
  const statics = existsSync(publicDir) ? new Hono().use('*', serveStatic({ root: publicDir })) : undefined;

  const tryFilesystem = async (request: Request, origin: string, path: string, query: URLSearchParams): Promise<RouteMatch | undefined> => {
    const exact = api.exact.get(path);
    if (exact) return { function: exact, query };
    if (statics && (request.method === 'GET' || request.method === 'HEAD')) {
      // Not new URL(path, base): a path like //host/x would replace the host.
      const fileUrl = new URL(origin);
      fileUrl.pathname = path;
      const file = await statics.fetch(new Request(fileUrl, { method: request.method, headers: request.headers }));
      if (file.status !== 404) return { file };
    }
    const dynamic = matchDynamicRoute(api.dynamic, path);
    if (!dynamic) return undefined;
    const withParams = new URLSearchParams(query);
    // The path decided the route, so its value beats a same-named query key.
    for (const [name, value] of dynamic.params) withParams.set(name, value);
    return { function: dynamic.file, query: withParams };
  };

  return {
    headersFor: (path) =>
      vercel.headers.flatMap(({ match, headers }) => {
        const params = match(path);
        return params ? headers.map(({ key, value }): [string, string] => [key, fillPlaceholders(value, params)]) : [];
      }),
    async route(request) {
      const url = new URL(request.url);
      let path = url.pathname;
      let query = url.searchParams;
      const direct = await tryFilesystem(request, url.origin, path, query);
      if (direct) return direct;
      for (const rewrite of vercel.rewrites) {
        const params = rewrite.match(path);
        if (!params) continue;
        ({ path, query } = applyRewrite(rewrite, params, query));
        const hit = await tryFilesystem(request, url.origin, path, query);
        if (hit) return hit;
      }
      return undefined;
    },
  };
}

// ---------------------------------------------------------------------------
// api/ file routing

interface ApiRoutes {
  exact: Map<string, string>;
  /** Most specific first: at the first segment where two routes differ, a literal beats a parameter. */
  dynamic: Array<{ file: string; segments: string[] }>;
}

const FUNCTION_FILE = /\.(ts|js)$/;
const PARAM_SEGMENT = /^\[([A-Za-z_$][\w$]*)\]$/;
const isParam = (segment: string | undefined) => PARAM_SEGMENT.test(segment ?? '');

async function discoverApiRoutes(root: string): Promise<ApiRoutes> {
  const routes: ApiRoutes = { exact: new Map(), dynamic: [] };
  const owners = new Map<string, string>();
  for (const file of await listFunctionFiles(join(root, 'api'))) {
    const path =
      '/' +
      relative(root, file)
        .split(sep)
        .join('/')
        .replace(FUNCTION_FILE, '')
        .replace(/\/index$/, '');
    // [a] and [b] in the same place answer the same requests.
    const shape = path.replace(/\[[^\]]*\]/g, '[]');
    const owner = owners.get(shape);
    if (owner) {
      throw new Error(`${relative(root, owner)} and ${relative(root, file)} both answer ${path}; keep one (Vercel rejects conflicting function paths too)`);
    }
    owners.set(shape, file);
    const segments = path.split('/');
    if (segments.some(isParam)) routes.dynamic.push({ file, segments });
    else routes.exact.set(path, file);
  }
  routes.dynamic.sort((a, b) => {
    const i = a.segments.findIndex((segment, i) => isParam(segment) !== isParam(b.segments[i]));
    return i === -1 ? 0 : isParam(a.segments[i]) ? 1 : -1;
  });
  return routes;
}

// Vercel builds every .ts/.js file under api/ except type declarations and
// underscore-prefixed files and folders, which is where shared helpers live.
async function listFunctionFiles(dir: string): Promise<string[]> {
  if (!existsSync(dir)) return [];
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

function matchDynamicRoute(routes: ApiRoutes['dynamic'], path: string): { file: string; params: [string, string][] } | undefined {
  const parts = path.split('/');
  for (const { file, segments } of routes) {
    if (segments.length !== parts.length) continue;
    const params: [string, string][] = [];
    const fits = segments.every((segment, i) => {
      const part = parts[i]!;
      const name = PARAM_SEGMENT.exec(segment)?.[1];
      if (!name) return segment === part;
      params.push([name, safeDecode(part)]);
      return part !== '';
    });
    if (fits) return { file, params };
  }
  return undefined;
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// ---------------------------------------------------------------------------
// vercel.json

/** The raw text of each named source param; undefined when an optional one matched nothing. */
type Params = Record<string, string | undefined>;
type Matcher = (path: string) => Params | undefined;

interface Rewrite {
  match: Matcher;
  fillPath: PathFunction<Params>;
  /** The destination's query template, without the `?`. */
  query: string;
  pathUsesParams: boolean;
}

interface VercelRules {
  rewrites: Rewrite[];
  headers: Array<{ match: Matcher; headers: Array<{ key: string; value: string }> }>;
}

const Source = z.string().startsWith('/', 'must start with "/"');
const Conditions = { has: z.array(z.unknown()).optional(), missing: z.array(z.unknown()).optional() };
const VercelJsonSchema = z.looseObject({
  rewrites: z.array(z.object({ source: Source, destination: z.string(), statusCode: z.number().optional(), ...Conditions })).optional(),
  headers: z.array(z.object({ source: Source, headers: z.array(z.object({ key: z.string(), value: z.string() })), ...Conditions })).optional(),
});

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
    throw new Error(`vercel.json: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  }
  const config = parsed.data;
  const warn = (message: string) => console.warn(`dev-server: vercel.json ${message}`);

  for (const key of ['redirects', 'routes', 'cleanUrls', 'trailingSlash']) {
    if (key in config) warn(`\`${key}\` is not supported by the dev server and is ignored here (Vercel still applies it)`);
  }
  for (const [i, rule] of (config.rewrites ?? []).entries()) {
    const where = `rewrites[${i}] (${rule.source})`;
    if (rule.has || rule.missing || rule.statusCode !== undefined) {
      warn(`${where} uses has/missing/statusCode, which the dev server does not support; rule ignored`);
    } else if (!rule.destination.startsWith('/')) {
      warn(`${where} has an external destination; rule ignored`);
    } else {
      rules.rewrites.push(compileRewrite(rule.source, rule.destination, where));
    }
  }
  for (const [i, rule] of (config.headers ?? []).entries()) {
    const where = `headers[${i}] (${rule.source})`;
    if (rule.has || rule.missing) warn(`${where} uses has/missing, which the dev server does not support; rule ignored`);
    else rules.headers.push({ match: compileSource(rule.source, where).match, headers: rule.headers });
  }
  return rules;
}

/** Runs path-to-regexp, naming the vercel.json rule in its syntax errors. */
function inRule<T>(where: string, run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw new Error(`vercel.json ${where}: ${(err as Error).message}`);
  }
}

function compileSource(source: string, where: string): { keys: Key[]; match: Matcher } {
  const keys: Key[] = [];
  const regex = inRule(where, () => pathToRegexp(source, keys, { strict: true, sensitive: true }));
  const match = (path: string) => {
    const found = regex.exec(path);
    if (!found) return undefined;
    // Unnamed groups like `(.*)` are numbered: they take part in matching but
    // are no params, as on Vercel.
    return Object.fromEntries(keys.flatMap((key, i) => (typeof key.name === 'string' ? [[key.name, found[i + 1]]] : [])));
  };
  return { keys, match };
}

function compileRewrite(source: string, destination: string, where: string): Rewrite {
  const { keys, match } = compileSource(source, where);
  const target = destination.split('#')[0]!;
  const queryAt = target.indexOf('?');
  const path = queryAt === -1 ? target : target.slice(0, queryAt);
  const tokens = inRule(where, () => parse(path));
  const used = tokens.filter((token): token is Key => typeof token !== 'string');
  // compile() throws on a missing value, so check once, here, that every
  // placeholder in the path always gets one.
  const optional = (key: Key) => key.modifier === '?' || key.modifier === '*';
  for (const key of used) {
    const param = keys.find((k) => k.name === key.name);
    if (typeof key.name !== 'string' || !param || (optional(param) && !optional(key))) {
      throw new Error(
        `vercel.json ${where}: the destination's :${key.name} is not a param the source always captures (write :${key.name}? or :${key.name}* for an optional one)`,
      );
    }
  }
  return {
    match,
    fillPath: tokensToFunction<Params>(tokens, { validate: false }),
    query: queryAt === -1 ? '' : target.slice(queryAt + 1),
    pathUsesParams: used.length > 0,
  };
}

/**
 * Fills `:name` in a header value or query template. Not compile(): these are
 * not paths, and it would read `?`, `+` or `(` in them as pattern syntax.
 * A modifier after a placeholder is dropped, as compile() would; unknown names stay.
 */
function fillPlaceholders(template: string, params: Params): string {
  return template.replace(/:(\w+)[*+?]?/g, (whole, name: string) => (Object.hasOwn(params, name) ? (params[name] ?? '') : whole));
}

function applyRewrite(rewrite: Rewrite, params: Params, incoming: URLSearchParams): { path: string; query: URLSearchParams } {
  let search = fillPlaceholders(rewrite.query, params);
  // Vercel's rule (routing-utils `replaceSegments`).
  if (!rewrite.pathUsesParams) {
    const own = new URLSearchParams(search);
    for (const [name, value] of Object.entries(params)) {
      if (value !== undefined && !own.has(name)) search += `&${name}=${value}`;
    }
  }
  const query = new URLSearchParams(search);
  // The client's own keys win, as in `vercel dev`.
  for (const key of new Set(incoming.keys())) query.delete(key);
  for (const [key, value] of incoming) query.append(key, value);
  return { path: rewrite.fillPath(params) || '/', query };
}
