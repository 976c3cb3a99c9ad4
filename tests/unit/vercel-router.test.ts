// Vercel's router as `npm start` emulates it (scripts/vercel-router.ts), without
// a server: which api/ function or public/ file answers a path, with which
// query, and which vercel.json headers go with it. The functions are never
// loaded here, only found, so their files may hold anything.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { loadVercelRouter, type RouteMatch, type VercelRouter } from '../../scripts/vercel-router.js';

const roots: string[] = [];
afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

/** A project of these files (path -> content) in a temporary directory. */
function project(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'l402-router-'));
  roots.push(root);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), content);
  }
  return root;
}

const FILES = {
  'api/echo.ts': '',
  'api/demo/index.ts': '',
  'api/demo/btc-price.js': '',
  'api/lnurlp/[username].ts': '',
  'api/lnurlp/special.ts': '',
  'api/items/[id]/[part].ts': '',
  'api/_shared.ts': '',
  'api/types.d.ts': '',
  'api/notes.md': '',
  'public/index.html': '<h1>home</h1>',
  'public/styles/site.css': 'body{}',
  'public/docs/index.html': 'docs',
  'secret.txt': 'outside public/',
  'vercel.json': JSON.stringify({
    rewrites: [
      { source: '/.well-known/lnurlp/:username', destination: '/api/lnurlp/:username' },
      { source: '/u/:username', destination: '/api/echo?user=:username&via=rewrite' },
      { source: '/p/:first/:second', destination: '/api/echo' },
      { source: '/assets/:path*', destination: '/styles/:path*' },
      { source: '/old/:x', destination: '/also-old/:x' },
      { source: '/also-old/:x', destination: '/api/echo?from=:x' },
    ],
    headers: [
      { source: '/api/(.*)', headers: [{ key: 'X-Api-Rule', value: 'applied' }] },
      { source: '/(.*)', headers: [{ key: 'X-Frame-Options', value: 'DENY' }] },
      { source: '/docs/:page', headers: [{ key: 'X-Page', value: 'page :page' }] },
    ],
  }),
};

describe('the Vercel router', async () => {
  const root = project(FILES);
  const router: VercelRouter = await loadVercelRouter(root);
  const route = (path: string, init?: RequestInit) => router.route(new Request(`http://localhost${path}`, init));
  /** The function a path reaches (relative to the project) and its query, or what else answers. */
  const answer = async (path: string, init?: RequestInit) => describeMatch(await route(path, init));
  function describeMatch(match: RouteMatch | undefined) {
    if (!match) return 'nothing';
    if ('file' in match) return { file: match.file.status };
    return { fn: match.function.slice(root.length + 1), query: Object.fromEntries(match.query) };
  }

  it('matches api/ files at their path, index files at their folder, .js and .ts alike', async () => {
    expect(await answer('/api/echo')).toEqual({ fn: 'api/echo.ts', query: {} });
    expect(await answer('/api/demo')).toEqual({ fn: 'api/demo/index.ts', query: {} });
    expect(await answer('/api/demo/btc-price?x=1')).toEqual({ fn: 'api/demo/btc-price.js', query: { x: '1' } });
    // Any method: the function decides which it answers.
    expect(await answer('/api/echo', { method: 'POST', body: 'x' })).toEqual({ fn: 'api/echo.ts', query: {} });
  });

  it('finds no function in underscore files, type declarations or other files, nor with a trailing slash or an extension', async () => {
    for (const path of ['/api/_shared', '/api/types', '/api/types.d', '/api/notes', '/api/echo/', '/api/echo.ts', '/api/Echo'])
      expect(await answer(path), path).toBe('nothing');
  });

  it('passes [param] segments as decoded query parameters that beat a client-sent one; a literal route beats a parameter', async () => {
    expect(await answer('/api/lnurlp/alice?username=mallory&x=1')).toEqual({ fn: 'api/lnurlp/[username].ts', query: { username: 'alice', x: '1' } });
    expect(await answer('/api/lnurlp/a%20b')).toEqual({ fn: 'api/lnurlp/[username].ts', query: { username: 'a b' } });
    expect(await answer('/api/lnurlp/special')).toEqual({ fn: 'api/lnurlp/special.ts', query: {} });
    expect(await answer('/api/items/7/price')).toEqual({ fn: 'api/items/[id]/[part].ts', query: { id: '7', part: 'price' } });
    // A parameter is one whole, non-empty segment.
    for (const path of ['/api/lnurlp/', '/api/lnurlp/a/b', '/api/items/7']) expect(await answer(path), path).toBe('nothing');
  });

  it('serves public/ files to GET and HEAD only, index.html for a folder', async () => {
    const css = await route('/styles/site.css');
    expect(css && 'file' in css && (await css.file.text())).toBe('body{}');
    expect(await answer('/')).toEqual({ file: 200 });
    expect(await answer('/docs/')).toEqual({ file: 200 });
    expect(await answer('/styles/site.css', { method: 'HEAD' })).toEqual({ file: 200 });
    expect(await answer('/styles/site.css', { method: 'POST' })).toBe('nothing');
    expect(await answer('/styles/missing.css')).toBe('nothing');
  });

  it('refuses traversal out of public/ and api/, however it is spelt', async () => {
    for (const path of [
      '/../secret.txt',
      '/styles/../../secret.txt',
      '/%2e%2e/secret.txt',
      '/styles/%2e%2e/%2e%2e/secret.txt',
      '/styles/..%2f..%2fsecret.txt',
      '/styles/..%5c..%5csecret.txt',
      '/styles\\..\\..\\secret.txt',
      '//secret.txt',
      '/api/../secret.txt',
      '/api/lnurlp/..%2f..%2fsecret.txt',
    ]) {
      const match = await router.route({ method: 'GET', url: `http://localhost${path}`, headers: new Headers() } as Request);
      // Never the file outside public/: at most a function, which gets the text as a query value.
      if (match && 'file' in match) expect(await match.file.text(), path).not.toContain('outside public/');
      if (!path.startsWith('/api/lnurlp/')) expect(describeMatch(match), path).toBe('nothing');
    }
    const encoded = await answer('/api/lnurlp/..%2f..%2fsecret.txt');
    expect(encoded).toEqual({ fn: 'api/lnurlp/[username].ts', query: { username: '../../secret.txt' } });
  });

  it('rewrites: params fill the destination; unused params are added to the query; the client keys win', async () => {
    expect(await answer('/.well-known/lnurlp/alice')).toEqual({ fn: 'api/lnurlp/[username].ts', query: { username: 'alice' } });
    // The destination path uses none of the source's params: all of them are added to the query too (Vercel's rule).
    expect(await answer('/u/bob')).toEqual({ fn: 'api/echo.ts', query: { user: 'bob', via: 'rewrite', username: 'bob' } });
    expect(await answer('/u/bob?via=client')).toEqual({ fn: 'api/echo.ts', query: { user: 'bob', via: 'client', username: 'bob' } });
    expect(await answer('/p/one/two')).toEqual({ fn: 'api/echo.ts', query: { first: 'one', second: 'two' } });
    // To a static file, with a repeated param.
    const css = await route('/assets/site.css');
    expect(css && 'file' in css && (await css.file.text())).toBe('body{}');
    // A rewrite that misses the filesystem hands its path on to the next rules.
    expect(await answer('/old/z')).toEqual({ fn: 'api/echo.ts', query: { from: 'z', x: 'z' } });
    expect(await answer('/u/bob/extra')).toBe('nothing');
  });

  it('headers: every rule matching the path the client asked for, placeholders filled, in order', () => {
    expect(router.headersFor('/api/echo')).toEqual([
      ['X-Api-Rule', 'applied'],
      ['X-Frame-Options', 'DENY'],
    ]);
    expect(router.headersFor('/docs/intro')).toEqual([
      ['X-Frame-Options', 'DENY'],
      ['X-Page', 'page intro'],
    ]);
    // Before any rewrite: /u/bob reaches api/echo, but the /api/ rule does not apply.
    expect(router.headersFor('/u/bob')).toEqual([['X-Frame-Options', 'DENY']]);
  });
});

describe('loading a project', () => {
  it('refuses two functions answering one path, and an invalid vercel.json', async () => {
    await expect(loadVercelRouter(project({ 'api/demo.ts': '', 'api/demo/index.ts': '' }))).rejects.toThrow(/both answer \/api\/demo/);
    await expect(loadVercelRouter(project({ 'api/x/[a].ts': '', 'api/x/[b].ts': '' }))).rejects.toThrow(/both answer/);
    await expect(loadVercelRouter(project({ 'vercel.json': '{ nope' }))).rejects.toThrow(/vercel.json is not valid JSON/);
    await expect(loadVercelRouter(project({ 'vercel.json': '{"rewrites":[{"source":"a","destination":"/b"}]}' }))).rejects.toThrow(
      /rewrites.0.source: must start with "\/"/,
    );
    const unknownParam = { rewrites: [{ source: '/a/:x', destination: '/b/:y' }] };
    await expect(loadVercelRouter(project({ 'vercel.json': JSON.stringify(unknownParam) }))).rejects.toThrow(/:y is not a param the source always captures/);
  });

  it('warns about the rules it does not apply and ignores them', async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    try {
      const router = await loadVercelRouter(
        project({
          'api/echo.ts': '',
          'vercel.json': JSON.stringify({
            redirects: [],
            rewrites: [
              { source: '/ext', destination: 'https://example.com/' },
              { source: '/cond', destination: '/api/echo', has: [{ type: 'header', key: 'x' }] },
            ],
          }),
        }),
      );
      expect(warn.mock.calls.map((call) => String(call[0])).join('\n')).toMatch(/`redirects` is not supported[\s\S]*external destination[\s\S]*has\/missing/);
      expect(await router.route(new Request('http://localhost/cond'))).toBeUndefined();
      expect(await router.route(new Request('http://localhost/ext'))).toBeUndefined();
    } finally {
      warn.mockRestore();
    }
  });

  it('a project without api/, public/ or vercel.json routes nothing', async () => {
    const router = await loadVercelRouter(project({}));
    expect(await router.route(new Request('http://localhost/'))).toBeUndefined();
    expect(router.headersFor('/')).toEqual([]);
  });
});
