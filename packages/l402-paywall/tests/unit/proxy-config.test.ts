// The proxy's configuration (src/proxy/config.ts): the JSON Schema published
// in the package is the one the zod schema generates; a bad file is refused
// naming the bad field; routes match on whole path segments, first match
// wins; and the pure parts of forwarding (the upstream URL, the headers sent
// and answered, Location and Set-Cookie rewriting).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ProxyConfigError, parseProxyConfig, proxyConfigJsonSchema } from '../../src/proxy/config.js';
import { answeredHeaders, forwardedHeaders, rewriteCookie, rewriteLocation, upstreamUrl } from '../../src/proxy/forward.js';
import { firstMatch, matchingRoute } from '../../src/proxy/routes.js';
import packageJson from '../../package.json' with { type: 'json' };

const SCHEMA_FILE = new URL('../../proxy-config.schema.json', import.meta.url);

function issuesOf(config: unknown): string[] {
  try {
    parseProxyConfig(config);
  } catch (error) {
    if (error instanceof ProxyConfigError) return [...error.issues];
    throw error;
  }
  return [];
}

describe('the published JSON Schema', () => {
  it('equals the one the zod schema generates (npx tsx scripts/write-proxy-config-schema.ts rewrites it)', () => {
    expect(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8'))).toEqual(proxyConfigJsonSchema());
  });

  it('is in the package: exported as l402-paywall/proxy-config.schema.json and in its files', () => {
    expect((packageJson.exports as Record<string, unknown>)['./proxy-config.schema.json']).toBe('./proxy-config.schema.json');
    expect(packageJson.files).toContain('proxy-config.schema.json');
  });
});

describe('parseProxyConfig', () => {
  it("takes the issue's example and fills in the defaults", () => {
    const config = parseProxyConfig({
      upstream: 'http://127.0.0.1:8000',
      routes: [
        { path: '/v1/chat/completions', methods: ['POST'], session: { unitSats: 1, depositUnits: 100 }, meter: 'openai-usage' },
        { path: '/*', priceSats: 2 },
      ],
    });
    expect(config.timeoutSeconds).toBe(30);
    expect(config.maxBodyBytes).toBe(10 * 1024 * 1024);
    expect(config.routes[0]!.meter).toBe('openai-usage');
  });

  it('names each bad field', () => {
    expect(issuesOf({ upstream: 'ftp://x', routes: [] })).toEqual([
      'upstream: must be an http(s) URL, such as http://127.0.0.1:8000',
      'routes: Too small: expected array to have >=1 items',
    ]);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a', priceSats: 0 }] })).toEqual(['routes[0].priceSats: Too small: expected number to be >=1']);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a', priceSats: 1.5 }] })[0]).toMatch(/^routes\[0\]\.priceSats: /);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a', session: { unitSats: 1, deposit: 3 } }] })[0]).toMatch(
      /^routes\[0\]\.session: Unrecognized key: "deposit"/,
    );
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: 'a', free: true }] })[0]).toMatch(/^routes\[0\]\.path: must start with "\/"/);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a*', free: true }] })).toEqual([
      'routes[0].path: may end with "/*" (this path and everything under it), and hold no other "*"',
    ]);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a' }] })).toEqual(['routes[0]: needs one of "priceSats", "session" or "free": true']);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a', free: true, priceSats: 2 }] })).toEqual([
      'routes[0].free: takes one of "priceSats", "session" or "free", not priceSats and free',
    ]);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a', priceSats: 2, meter: 'openai-usage' }] })).toEqual([
      'routes[0].meter: goes with "session": a meter charges units of a session',
    ]);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/a', priceSats: 2, uses: 3, schemes: { payment: true } }] })).toEqual([
      'routes[0].schemes.payment: a Payment charge opens one request: with "uses" above 1, L402 only',
    ]);
    expect(issuesOf({ upstream: 'http://x?q=1', routes: [{ path: '/*', free: true }] })).toEqual(['upstream: must have no query or fragment']);
    expect(issuesOf({ upstream: 'http://x', routes: [{ path: '/*', free: true }], extra: 1 })).toEqual(['(the configuration): Unrecognized key: "extra"']);
    expect(issuesOf('nonsense')).toEqual(['(the configuration): Invalid input: expected object, received string']);
  });
});

describe('routes', () => {
  const routes = [
    matchingRoute({ path: '/v1/chat/completions', methods: ['POST'] }, 'chat'),
    matchingRoute({ path: '/v1/*' }, 'v1'),
    matchingRoute({ path: '/*' }, 'all'),
  ];
  const which = (method: string, path: string) => firstMatch(routes, method, path)?.value;

  it('the first whose path and method match', () => {
    expect(which('POST', '/v1/chat/completions')).toBe('chat');
    expect(which('GET', '/v1/chat/completions')).toBe('v1');
    expect(which('GET', '/v1')).toBe('v1');
    expect(which('GET', '/v1/models')).toBe('v1');
    expect(which('GET', '/v10')).toBe('all');
    expect(which('GET', '/')).toBe('all');
  });

  it('an exact path matches itself only', () => {
    const exact = [matchingRoute({ path: '/a' }, 'a')];
    expect(firstMatch(exact, 'GET', '/a')?.value).toBe('a');
    expect(firstMatch(exact, 'GET', '/a/')).toBeUndefined();
    expect(firstMatch(exact, 'GET', '/ab')).toBeUndefined();
  });
});

describe('forwarding, the pure parts', () => {
  const upstream = new URL('http://10.0.0.5:8000/base');

  it("appends the request's path and query to the upstream's path", () => {
    expect(upstreamUrl(upstream, new URL('http://proxy/v1/x?a=1&b=2')).href).toBe('http://10.0.0.5:8000/base/v1/x?a=1&b=2');
    expect(upstreamUrl(new URL('http://u:1/'), new URL('http://proxy/'))).toEqual(new URL('http://u:1/'));
  });

  it('drops hop-by-hop headers, those Connection names, and the credential; keeps the rest; sets X-Forwarded-*', () => {
    const request = new Request('http://proxy.example/x', {
      headers: { authorization: 'L402 a:b', 'x-a': '1', 'x-hop': 'h', 'accept-encoding': 'gzip, zstd, br;q=0.5', 'x-forwarded-for': '203.0.113.9' },
    });
    request.headers.set('connection', 'close, x-hop');
    const sent = forwardedHeaders(request, new URL(request.url), { upstream, timeoutMs: 1000, dropCredential: true, clientAddress: '198.51.100.7' });
    expect(sent.get('authorization')).toBeNull();
    expect(sent.get('x-hop')).toBeNull();
    expect(sent.get('connection')).toBeNull();
    expect(sent.get('x-a')).toBe('1');
    expect(sent.get('accept-encoding')).toBe('gzip, br;q=0.5');
    expect(sent.get('x-forwarded-for')).toBe('203.0.113.9, 198.51.100.7');
    expect(sent.get('x-forwarded-host')).toBe('proxy.example');
    expect(sent.get('x-forwarded-proto')).toBe('http');
    const free = forwardedHeaders(request, new URL(request.url), { upstream, timeoutMs: 1000, dropCredential: false });
    expect(free.get('authorization')).toBe('L402 a:b');
  });

  it('labels an answer fetch has decoded as not encoded, and keeps a coding fetch passes through', () => {
    const decoded = answeredHeaders(
      new Response('x', { headers: { 'content-encoding': 'gzip', 'content-length': '20', 'x-b': '2' } }),
      upstream,
      new URL('http://proxy/'),
    );
    expect(decoded.get('content-encoding')).toBeNull();
    expect(decoded.get('content-length')).toBeNull();
    expect(decoded.get('x-b')).toBe('2');
    const raw = answeredHeaders(new Response('x', { headers: { 'content-encoding': 'zstd' } }), upstream, new URL('http://proxy/'));
    expect(raw.get('content-encoding')).toBe('zstd');
  });

  it("rewrites a Location on the upstream's origin and base path, and leaves every other", () => {
    const requestUrl = new URL('https://api.example.com/anything');
    expect(rewriteLocation('http://10.0.0.5:8000/base/next?x=1', upstream, requestUrl)).toBe('https://api.example.com/next?x=1');
    expect(rewriteLocation('http://10.0.0.5:8000/base', upstream, requestUrl)).toBe('https://api.example.com/');
    expect(rewriteLocation('http://10.0.0.5:8000/other', upstream, requestUrl)).toBe('http://10.0.0.5:8000/other');
    expect(rewriteLocation('http://10.0.0.5:8000/basement', upstream, requestUrl)).toBe('http://10.0.0.5:8000/basement');
    expect(rewriteLocation('/relative', upstream, requestUrl)).toBe('/relative');
    expect(rewriteLocation('https://elsewhere.example/', upstream, requestUrl)).toBe('https://elsewhere.example/');
  });

  it("drops a cookie's Domain naming the upstream and takes its base path off the Path", () => {
    expect(rewriteCookie('sid=1; Domain=10.0.0.5; Path=/base/app; Secure', upstream)).toBe('sid=1; Path=/app; Secure');
    expect(rewriteCookie('sid=1; Path=/base', upstream)).toBe('sid=1; Path=/');
    expect(rewriteCookie('sid=1; Domain=other.example; Path=/x', upstream)).toBe('sid=1; Domain=other.example; Path=/x');
  });
});
