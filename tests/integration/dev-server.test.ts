// The dev server must hand the api/ functions and public/ files exactly what
// Vercel would, so what passes locally behaves the same once deployed.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { describeEmbeddedDefaults, loadConfig } from '../../lib/config.js';
import { keepLocalKeys } from '../../scripts/local-keys.js';
import { startDevServer } from '../../scripts/dev-server.js';
import { closedPort } from '../../packages/l402-paywall/tests/support/ports.js';

const here = dirname(fileURLToPath(import.meta.url));
const projectRoot = resolve(here, '../..');
const fixture = resolve(here, '../fixtures/dev-server-app');

interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** Name/value pairs exactly as they came off the wire, one per header line. */
  rawHeaders: string[];
  body: string;
}

/** node:http rather than fetch: it sends the path unnormalised and shows each header line. */
function rawRequest(base: string, path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(base);
  return new Promise((done, fail) => {
    const req = httpRequest({ hostname, port, path, method: init.method ?? 'GET', headers: init.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () =>
        done({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString('utf8') }),
      );
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end(init.body);
  });
}

function headerLines(raw: RawResponse, name: string): string[] {
  const lines: string[] = [];
  for (let i = 0; i < raw.rawHeaders.length; i += 2) {
    if (raw.rawHeaders[i]!.toLowerCase() === name) lines.push(raw.rawHeaders[i + 1]!);
  }
  return lines;
}

describe('dev server on the fixture project', () => {
  let base: string;
  let close: () => Promise<void>;

  beforeAll(async () => {
    const server = await startDevServer({ root: fixture, port: 0, host: '127.0.0.1' });
    base = server.url;
    close = server.close;
  });
  afterAll(async () => {
    await close?.();
  });

  describe('api/ file routing', () => {
    it('serves a file at its path', async () => {
      const res = await fetch(`${base}/api/demo/btc-price`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ route: 'btc-price', source: 'simulated' });
    });

    it('serves index files at their directory', async () => {
      const res = await fetch(`${base}/api/demo`);
      expect(await res.json()).toEqual({ route: 'demo index' });
    });

    it('passes a [segment] value as a query parameter of the same name, which a client cannot override', async () => {
      const res = await fetch(`${base}/api/lnurlp/al%20ice?username=mallory&amount=1000`);
      const body = await res.json();
      expect(body).toMatchObject({ route: 'lnurlp dynamic', username: 'al ice', pathname: '/api/lnurlp/al%20ice' });
      expect(new URLSearchParams(body.search).get('amount')).toBe('1000');
      expect(new URLSearchParams(body.search).getAll('username')).toEqual(['al ice']);
    });

    it('prefers a static file over a dynamic segment', async () => {
      expect(await (await fetch(`${base}/api/lnurlp/special`)).json()).toEqual({ route: 'lnurlp static' });
    });

    it('does not route underscore helpers or declaration files', async () => {
      for (const path of ['/api/_shared', '/api/types', '/api/types.d']) {
        expect((await fetch(`${base}${path}`)).status, path).toBe(404);
      }
    });

    it('answers unknown /api paths with a JSON 404', async () => {
      const res = await fetch(`${base}/api/no/such/thing`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ error: expect.any(String), code: 'NOT_FOUND' });
    });

    it('answers other unknown paths with a plain 404', async () => {
      const res = await fetch(`${base}/no-such-page`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    });

    it('treats a path starting with // as a path, not as another host', async () => {
      for (const path of ['//evil.example/api/echo', '//evil.example/']) {
        const res = await rawRequest(base, path);
        expect(res.status, path).toBe(404);
        expect(res.body, path).not.toContain('fixture home');
      }
    });
  });

  describe('function failures', () => {
    it('turns a throwing function into a JSON 500 without the error message, and logs the error', async () => {
      const log = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        const res = await fetch(`${base}/api/boom`);
        expect(res.status).toBe(500);
        const text = await res.text();
        expect(JSON.parse(text)).toEqual({ error: 'Internal error', code: 'INTERNAL' });
        expect(text).not.toContain('hunter2');
        const logged = log.mock.calls.flat().map(String).join(' ');
        expect(logged).toContain('hunter2');
        expect(logged).toContain('boom.ts');
      } finally {
        log.mockRestore();
      }
    });

    it('answers 500 and names the file when a module has no default export with fetch', async () => {
      const log = vi.spyOn(console, 'error').mockImplementation(() => {});
      try {
        const res = await fetch(`${base}/api/no-export`);
        expect(res.status).toBe(500);
        expect(await res.json()).toEqual({ error: 'Internal error', code: 'INTERNAL' });
        expect(log.mock.calls.flat().map(String).join(' ')).toContain('no-export.ts');
      } finally {
        log.mockRestore();
      }
    });
  });

  describe('vercel.json rewrites', () => {
    it('rewrites a Lightning Address path onto the dynamic route, keeping the client query', async () => {
      const res = await fetch(`${base}/.well-known/lnurlp/bob?amount=21000`);
      expect(res.status).toBe(200);
      const body = await res.json();
      expect(body).toMatchObject({ route: 'lnurlp dynamic', username: 'bob' });
      // As on Vercel, the function sees the path the client asked for.
      expect(body.pathname).toBe('/.well-known/lnurlp/bob');
      expect(new URLSearchParams(body.search).get('amount')).toBe('21000');
    });

    it('fills params into a destination query string', async () => {
      const body = await (await fetch(`${base}/u/carol`)).json();
      expect(body.pathname).toBe('/u/carol');
      expect(body.query).toMatchObject({ user: ['carol'], via: ['rewrite'] });
    });

    it('adds the params as query parameters when the destination path uses none of them', async () => {
      const body = await (await fetch(`${base}/p/one/two%20three`)).json();
      expect(body.query).toEqual({ first: ['one'], second: ['two three'] });
    });

    it('rewrites onto static files with a wildcard', async () => {
      const res = await fetch(`${base}/assets/site.css`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/css/);
    });

    it('leaves paths that exist alone and 404s a rewrite that lands nowhere', async () => {
      expect((await fetch(`${base}/assets/missing.css`)).status).toBe(404);
    });
  });

  describe('vercel.json headers', () => {
    it('adds rule headers to function responses, static files and 404s', async () => {
      const api = await fetch(`${base}/api/demo`);
      expect(api.headers.get('x-api-rule')).toBe('applied');
      expect(api.headers.get('x-frame-options')).toBe('DENY');
      const page = await fetch(`${base}/`);
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('x-api-rule')).toBeNull();
      expect((await fetch(`${base}/nowhere`)).headers.get('x-frame-options')).toBe('DENY');
    });

    it('matches the path the client asked for, not the rewritten one', async () => {
      const res = await fetch(`${base}/.well-known/lnurlp/bob`);
      expect(res.headers.get('x-api-rule')).toBeNull();
      expect(res.headers.get('x-frame-options')).toBe('DENY');
    });

    it('fills source params into header values', async () => {
      expect((await fetch(`${base}/docs/intro`)).headers.get('x-page')).toBe('page intro');
    });

    it('fills them with the text the client sent, still percent-encoded, as Vercel does', async () => {
      expect((await fetch(`${base}/docs/a%20b%0Ac`)).headers.get('x-page')).toBe('page a%20b%0Ac');
    });

    it('keeps a header the function set itself', async () => {
      const res = await fetch(`${base}/api/echo`);
      expect(res.headers.get('x-echo')).toBe('from-function');
    });
  });

  describe('static files from public/', () => {
    it('serves index.html at /', async () => {
      const res = await fetch(`${base}/`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
      expect(await res.text()).toContain('fixture home');
    });

    it('serves files with their content type and a directory through its index.html', async () => {
      const css = await fetch(`${base}/styles/site.css`);
      expect(css.status).toBe(200);
      expect(css.headers.get('content-type')).toMatch(/^text\/css/);
      expect(await css.text()).toContain('color: black');
      const docs = await fetch(`${base}/docs/`);
      expect(await docs.text()).toContain('fixture docs');
    });

    it('never serves a file outside public/', async () => {
      const attempts = [
        '/../secret.txt',
        '/../../secret.txt',
        '/styles/../../secret.txt',
        '/%2e%2e/secret.txt',
        '/%2E%2E/%2e%2e/secret.txt',
        '/..%2fsecret.txt',
        '/styles/..%2f..%2fsecret.txt',
        '/styles/%2e%2e%2f%2e%2e%2fsecret.txt',
        '/..%5csecret.txt',
        '/styles/..\\..\\secret.txt',
        '//secret.txt',
        '/assets/..%2f..%2fsecret.txt',
      ];
      for (const path of attempts) {
        const res = await rawRequest(base, path);
        expect(res.status, path).toBeGreaterThanOrEqual(400);
        expect(res.body, path).not.toContain('FIXTURE-SECRET');
      }
    });
  });

  describe('what a function receives and sends', () => {
    it('sets x-real-ip and x-forwarded-for from the socket, ignoring what the client sent', async () => {
      const res = await fetch(`${base}/api/echo`, { headers: { 'x-real-ip': '203.0.113.7', 'x-forwarded-for': '203.0.113.7, 10.0.0.1' } });
      const body = await res.json();
      expect(body.realIp).toBe('127.0.0.1');
      expect(body.forwardedFor).toBe('127.0.0.1');
    });

    it('passes a POST JSON body, the status and response headers through intact', async () => {
      const payload = { amountSats: 21, memo: 'héllo ⚡', nested: { ok: true } };
      const res = await fetch(`${base}/api/echo?x=1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(payload),
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('content-type')).toBe('application/json');
      const body = await res.json();
      expect(body).toMatchObject({ method: 'POST', pathname: '/api/echo', query: { x: ['1'] }, contentType: 'application/json' });
      expect(JSON.parse(body.body)).toEqual(payload);
    });

    it.each(['GET', 'POST'])('aborts the signal of a %s request whose client went away', async (method) => {
      const seen = ((globalThis as { __devServerAborts?: string[] }).__devServerAborts ??= []);
      const { hostname, port } = new URL(base);
      const req = httpRequest({ hostname, port, path: '/api/wait-for-abort', method, headers: { 'content-type': 'text/plain' } });
      req.on('error', () => {}); // the socket is torn down on purpose
      req.end(method === 'POST' ? 'a body' : undefined);
      await vi.waitFor(() => expect(seen).toContain(`started ${method}`));
      req.destroy();
      await vi.waitFor(() => expect(seen).toContain(`aborted ${method}`));
    });

    it('delivers both WWW-Authenticate challenges, in order, and each Set-Cookie on its own line', async () => {
      const res = await rawRequest(base, '/api/challenge');
      expect(res.status).toBe(402);
      const l402 = 'L402 macaroon="AGIAJEemVQUTEyNCR0exk7ek90Cg==", invoice="lnbc1500n1pw5kjhm"';
      const lsat = 'LSAT macaroon="AGIAJEemVQUTEyNCR0exk7ek90Cg==", invoice="lnbc1500n1pw5kjhm"';
      // A Web Response cannot keep repeated fields apart (Headers joins them),
      // and Vercel's own bridge writes the joined value, so production sends
      // one comma-joined line (RFC 9110 5.3). L402 clients must split it.
      expect(headerLines(res, 'www-authenticate')).toEqual([`${l402}, ${lsat}`]);
      expect(headerLines(res, 'set-cookie')).toEqual(['a=1; Path=/', 'b=2; Path=/']);
    });
  });
});

describe('start-up checks', () => {
  let root: string;

  beforeAll(() => {
    root = mkdtempSync(join(tmpdir(), 'dev-server-root-'));
  });
  afterAll(() => {
    rmSync(root, { recursive: true, force: true });
  });

  function project(files: Record<string, string>): string {
    const dir = mkdtempSync(join(root, 'project-'));
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(dir, name)), { recursive: true });
      writeFileSync(join(dir, name), text);
    }
    return dir;
  }

  const fn = 'export default { fetch() { return new Response("ok"); } };\n';

  it('refuses two files that answer the same path', async () => {
    const dir = project({ 'api/demo.ts': fn, 'api/demo/index.ts': fn });
    await expect(startDevServer({ root: dir, port: 0 })).rejects.toThrow(/api\/demo.*both answer \/api\/demo/);
  });

  it('refuses a vercel.json it cannot read, naming the problem', async () => {
    await expect(startDevServer({ root: project({ 'vercel.json': '{ nope' }), port: 0 })).rejects.toThrow(/vercel.json is not valid JSON/);
    await expect(startDevServer({ root: project({ 'vercel.json': '{"rewrites":[{"source":"/a"}]}' }), port: 0 })).rejects.toThrow(
      /vercel.json: rewrites.0.destination/,
    );
  });

  it('matches sources the way Vercel does (path-to-regexp v6)', async () => {
    const dir = project({
      'api/q.ts': 'export default { fetch(request) { return new Response(new URL(request.url).search); } };\n',
      'vercel.json': JSON.stringify({
        rewrites: [
          { source: '/old/(.*)', destination: '/api/q' },
          { source: '/n/:id(\\d+)', destination: '/api/q?id=:id' },
          { source: '/f/:name.:ext', destination: '/api/q' },
          { source: '/Case/:x', destination: '/api/q' },
        ],
      }),
    });
    const server = await startDevServer({ root: dir, port: 0 });
    try {
      const search = async (path: string) => {
        const res = await fetch(`${server.url}${path}`);
        return res.status === 200 ? res.text() : res.status;
      };
      // An unnamed group matches but is not a param, so it adds nothing to the query.
      expect(await search('/old/a/b')).toBe('');
      expect(await search('/n/42')).toBe('?id=42');
      expect(await search('/n/x42')).toBe(404);
      // `.` is a parameter prefix in v6, like `/`.
      expect(await search('/f/report.pdf')).toBe('?name=report&ext=pdf');
      // Case-sensitive and strict about trailing slashes.
      expect(await search('/case/x')).toBe(404);
      expect(await search('/n/42/')).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('refuses a rule it cannot compile, naming it', async () => {
    const refused = (rule: object) => startDevServer({ root: project({ 'vercel.json': JSON.stringify({ rewrites: [rule] }) }), port: 0 });
    await expect(refused({ source: '/a/(b', destination: '/x' })).rejects.toThrow(/rewrites\[0\] \(\/a\/\(b\): Unbalanced pattern/);
    await expect(refused({ source: 'a', destination: '/x' })).rejects.toThrow(/rewrites.0.source: must start with "\/"/);
    // compile() could not fill these: a param the source lacks, or one it may leave empty.
    await expect(refused({ source: '/a/:x', destination: '/b/:y' })).rejects.toThrow(/rewrites\[0\].*:y is not a param/);
    await expect(refused({ source: '/a/:x?', destination: '/b/:x' })).rejects.toThrow(/rewrites\[0\].*:x\? or :x\*/);
  });

  it('warns about and skips what it does not support instead of half-applying it', async () => {
    const dir = project({
      'api/hello.ts': fn,
      'vercel.json': JSON.stringify({
        redirects: [{ source: '/old', destination: '/new' }],
        rewrites: [
          { source: '/only-with-cookie', destination: '/api/hello', has: [{ type: 'cookie', key: 'beta' }] },
          { source: '/elsewhere', destination: 'https://example.com/' },
        ],
      }),
    });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const server = await startDevServer({ root: dir, port: 0 });
      try {
        const warnings = warn.mock.calls.flat().map(String).join('\n');
        expect(warnings).toMatch(/`redirects` is not supported/);
        expect(warnings).toMatch(/rewrites\[0\].*has\/missing/);
        expect(warnings).toMatch(/rewrites\[1\].*external destination/);
        expect((await fetch(`${server.url}/only-with-cookie`)).status).toBe(404);
        expect(await (await fetch(`${server.url}/api/hello`)).text()).toBe('ok');
      } finally {
        await server.close();
      }
    } finally {
      warn.mockRestore();
    }
  });

  it('accepts the keys that only mean something on Vercel (functions, crons) without a warning', async () => {
    const dir = project({
      'api/hello.ts': fn,
      'vercel.json': JSON.stringify({
        functions: { 'api/**/*.ts': { includeFiles: 'lib/db/migrations/**' } },
        crons: [{ path: '/api/hello', schedule: '17 4 * * *' }],
      }),
    });
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const server = await startDevServer({ root: dir, port: 0 });
      try {
        expect(
          warn.mock.calls
            .flat()
            .map(String)
            .filter((line) => line.includes('vercel.json')),
        ).toEqual([]);
        expect(await (await fetch(`${server.url}/api/hello`)).text()).toBe('ok');
      } finally {
        await server.close();
      }
    } finally {
      warn.mockRestore();
    }
  });
});

describe('npm start', () => {
  const tsx = join(projectRoot, 'node_modules/.bin/tsx');
  const script = join(projectRoot, 'scripts/dev-server.ts');
  let dataDir: string;

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'dev-server-test-'));
  });
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  function run(port: number, extra: Record<string, string> = {}) {
    // No price sources: the banner would ask them, and tests never reach the internet.
    const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir, BTC_PRICE_SOURCES: 'none', ...extra };
    const child = spawn(tsx, [script], { cwd: projectRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
    return { child, exited, env, output: () => ({ stdout, stderr }) };
  }

  /** Runs the server until its banner is out (the database line is the last), then stops it; answers what it printed. */
  async function banner(extra: Record<string, string> = {}): Promise<{ stdout: string; env: NodeJS.ProcessEnv; url: string }> {
    const port = await closedPort();
    const { child, exited, env, output } = run(port, extra);
    // Generous: a busy machine takes long to start tsx and migrate a fresh PGlite; this is no speed test.
    await vi.waitFor(() => expect(output().stdout).toMatch(/\n {2}database: .*\n/), { timeout: 90_000, interval: 100 });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    return { stdout: output().stdout, env, url: `http://127.0.0.1:${port}` };
  }

  const LOCAL_RULE = 'only an unset NODE_ENV, development or test runs locally';

  it('prints the URL and the embedded defaults, serves, and exits cleanly on SIGTERM', { timeout: 120_000 }, async () => {
    const port = await closedPort();
    const { child, exited, output } = run(port);
    const url = `http://127.0.0.1:${port}`;
    await vi.waitFor(() => expect(output().stdout).toMatch(/\n {2}database: .*\n/), { timeout: 90_000, interval: 100 });
    // Which mode runs, and which setting chose it (vitest runs with NODE_ENV=test).
    expect(output().stdout).toMatch(new RegExp(`^L402 local development server on ${url} \\(NODE_ENV=test; ${LOCAL_RULE}\\)\n`));
    // A fresh DATA_DIR: the secret is made now.
    expect(output().stdout).toContain(`  L402_SECRET: generated now, kept in ${join(dataDir, 'l402-secret')} for the next starts\n`);
    const res = await fetch(`${url}/api/dev-server-test-probe-that-does-not-exist`);
    expect(res.status).toBeGreaterThanOrEqual(200);
    await res.arrayBuffer();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });

  it('after a restart, says it reuses the secret saved under DATA_DIR rather than that it generated one', { timeout: 120_000 }, async () => {
    const restarted = join(dataDir, 'restarted');
    keepLocalKeys(loadConfig({ DATA_DIR: restarted })); // what an earlier start did: generate the secret and keep it there
    const { stdout, env } = await banner({ DATA_DIR: restarted });
    expect(stdout).toContain(`  L402_SECRET: the one generated at an earlier start, read from ${join(restarted, 'l402-secret')}\n`);
    expect(stdout).not.toContain('generated now');
    for (const line of describeEmbeddedDefaults(loadConfig(env))) expect(stdout).toContain(line);
  });

  it('says it runs in production mode, and why, whenever NODE_ENV is neither unset, development nor test', { timeout: 120_000 }, async () => {
    const { stdout, url } = await banner({ NODE_ENV: 'Production' });
    expect(stdout).toMatch(new RegExp(`^L402 production mode on ${url} \\(NODE_ENV="Production"; ${LOCAL_RULE}\\)\n`));
    expect(stdout).toContain('NOT CONFIGURED for production');
    expect(stdout).not.toMatch(/L402_SECRET: (generated|the one)/);
    expect(stdout).not.toContain('dev server');
  });

  it('explains a taken port in one line and exits 1', async () => {
    const blocker = createServer();
    await new Promise<void>((done) => blocker.listen(0, '127.0.0.1', done));
    const { port } = blocker.address() as AddressInfo;
    try {
      const { exited, output } = run(port);
      expect(await exited).toBe(1);
      expect(output().stderr.trim()).toBe(`Port ${port} is in use; set PORT=... to use another one`);
    } finally {
      await new Promise<void>((done) => blocker.close(() => done()));
    }
  });
});
