// The guarded client against real local sockets: what it refuses never opens a
// connection, what it allows connects to the address it checked.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardedFetch, guardedGet, OutboundError, type OutboundPolicy, type ResolvedAddress } from '../../lib/http/outbound.js';
import { recordOutgoingSockets } from '../support/owner-server.js';
import { rejection } from '../../packages/l402-paywall/tests/support/l402.js';

const DEV: OutboundPolicy = { allowLoopback: true, timeoutMs: 2000, maxBytes: 1024 };
const PRODUCTION: OutboundPolicy = { ...DEV, allowLoopback: false };

type Route = (res: ServerResponse, headers: IncomingHttpHeaders) => void;
const routes = new Map<string, Route>();
const seen: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
let server: Server;
let base = '';
let port = 0;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ path: req.url ?? '', headers: req.headers });
    const route = routes.get(new URL(req.url ?? '/', 'http://x').pathname);
    if (route) return route(res, req.headers);
    res.writeHead(200, { 'content-type': 'application/json', 'set-cookie': 'session=secret; Path=/' });
    res.end('{"ok":true}');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
  base = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((done) => server.close(done));
});
afterEach(() => {
  routes.clear();
  seen.length = 0;
});

const redirect =
  (to: string): Route =>
  (res) => {
    res.writeHead(302, { location: to, 'set-cookie': 'tracking=1; Path=/' });
    res.end();
  };

const refusal = (run: () => Promise<unknown>) => rejection(run(), OutboundError);

describe('guardedGet', () => {
  it('fetches http from loopback in development, sending no cookie or credential', async () => {
    const answer = await guardedGet(`${base}/hello`, DEV);
    expect(answer).toMatchObject({ status: 200, body: '{"ok":true}', url: `${base}/hello` });
    expect(seen[0]!.headers.cookie).toBeUndefined();
    expect(seen[0]!.headers.authorization).toBeUndefined();
  });

  it('production refuses loopback and plain http without opening a socket', async () => {
    const sockets = recordOutgoingSockets();
    try {
      for (const url of [`${base}/`, `https://127.0.0.1:${port}/`, `https://localhost:${port}/`, `https://[::1]:${port}/`, `http://example.com/`]) {
        const error = await refusal(() => guardedGet(url, PRODUCTION));
        expect(error.code, url).toBe('HOST_REFUSED');
        expect(error.retryable).toBe(false);
      }
      expect(sockets.opened).toBe(0);
    } finally {
      sockets.stop();
    }
    expect(seen).toHaveLength(0);
  });

  it('refuses private, link-local, CGNAT, metadata and disguised forms of them, in any policy, without a socket', async () => {
    const sockets = recordOutgoingSockets();
    try {
      const hosts = [
        '10.0.0.1',
        '192.168.0.1',
        '172.20.0.1',
        '169.254.169.254',
        '100.100.100.200',
        '0.0.0.0',
        '224.0.0.1',
        '[::ffff:169.254.169.254]',
        '[::ffff:a00:1]',
        '[2002:a9fe:a9fe::1]',
        '[fd00:ec2::254]',
        '[fe80::1]',
        '[::]',
        '0xa9fea9fe', // 169.254.169.254 as one hex number
        '2852039166', // the same in decimal
        '10.1', // 10.0.0.1 in short form
      ];
      for (const host of hosts) {
        for (const policy of [DEV, PRODUCTION]) {
          const error = await refusal(() => guardedGet(`https://${host}/latest/meta-data/`, policy));
          expect(error.code, host).toBe('HOST_REFUSED');
        }
      }
      expect(sockets.opened).toBe(0);
    } finally {
      sockets.stop();
    }
  });

  it('refuses URLs with credentials and schemes other than http(s)', async () => {
    for (const url of [`http://user:pass@127.0.0.1:${port}/`, 'file:///etc/passwd', 'ftp://example.com/', 'gopher://127.0.0.1/', 'not a url']) {
      expect((await refusal(() => guardedGet(url, DEV))).code, url).toBe('HOST_REFUSED');
    }
    expect(seen).toHaveLength(0);
  });

  it('checks names by what they resolve to, and connects to the address it checked (no second lookup)', async () => {
    let lookups = 0;
    // A rebinding resolver: loopback first, the metadata address on every later look-up.
    const rebinding = async (): Promise<ResolvedAddress[]> =>
      lookups++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '169.254.169.254', family: 4 }];
    const answer = await guardedGet(`http://owner.test:${port}/named`, DEV, { resolve: rebinding });
    expect(answer.status).toBe(200);
    expect(lookups).toBe(1);
    expect(seen[0]!.headers.host).toBe(`owner.test:${port}`);

    const mixed = async (): Promise<ResolvedAddress[]> => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ];
    expect((await refusal(() => guardedGet('https://mixed.test/', PRODUCTION, { resolve: mixed }))).code).toBe('HOST_REFUSED');
    const publicName = async (): Promise<ResolvedAddress[]> => [{ address: '93.184.216.34', family: 4 }];
    // Plain http to a public host is refused even in development.
    expect((await refusal(() => guardedGet('http://public.test/', DEV, { resolve: publicName }))).code).toBe('HOST_REFUSED');
    const failing = async (): Promise<ResolvedAddress[]> => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    const unresolved = await refusal(() => guardedGet('https://nowhere.test/', PRODUCTION, { resolve: failing }));
    expect(unresolved).toMatchObject({ code: 'UNREACHABLE', retryable: true });
  });

  it('follows at most 3 redirects, checking each hop, and never forwards cookies', async () => {
    routes.set('/r1', redirect('/r2'));
    routes.set('/r2', redirect(`${base}/r3`));
    routes.set('/r3', redirect('/end'));
    const answer = await guardedGet(`${base}/r1`, DEV);
    expect(answer).toMatchObject({ status: 200, url: `${base}/end` });
    expect(seen.map((s) => s.path)).toEqual(['/r1', '/r2', '/r3', '/end']);
    expect(seen.every((s) => s.headers.cookie === undefined)).toBe(true);

    seen.length = 0;
    routes.set('/r0', redirect('/r1'));
    expect(await refusal(() => guardedGet(`${base}/r0`, DEV))).toMatchObject({ code: 'BAD_RESPONSE', retryable: false });
    expect(seen).toHaveLength(4); // r0 r1 r2 r3: the fourth redirect is not followed

    for (const target of ['http://10.0.0.1/', 'https://169.254.169.254/latest/meta-data/', 'http://[::ffff:127.0.0.1]@10.0.0.1/', 'file:///etc/passwd']) {
      seen.length = 0;
      routes.set('/evil', redirect(target));
      const sockets = recordOutgoingSockets();
      try {
        expect((await refusal(() => guardedGet(`${base}/evil`, DEV))).code, target).toBe('HOST_REFUSED');
        expect(sockets.opened).toBe(1); // the one to our server
        expect(sockets.connectedTo).toEqual(['127.0.0.1']);
      } finally {
        sockets.stop();
      }
    }
  });

  it('times out over the whole request, even when the server trickles bytes', async () => {
    routes.set('/silent', () => {});
    routes.set('/trickle', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => (res.destroyed ? clearInterval(timer) : res.write(' ')), 20);
      res.on('close', () => clearInterval(timer));
    });
    // The trickle never pauses 300 ms: only a limit over the whole request ends it
    // (a per-read limit would run into the test's own timeout and fail it).
    for (const path of ['/silent', '/trickle']) {
      const error = await refusal(() => guardedGet(`${base}${path}`, { ...DEV, timeoutMs: 300, maxBytes: 1_000_000 }));
      expect(error).toMatchObject({ code: 'TIMEOUT', retryable: true });
    }
  });

  it('caps the body: by declared length, and by counting streamed bytes', async () => {
    routes.set('/declared', (res) => {
      res.writeHead(200, { 'content-length': '5000' });
      res.end('x'.repeat(5000));
    });
    routes.set('/chunked', (res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      for (let i = 0; i < 10; i++) res.write('y'.repeat(200));
      res.end();
    });
    routes.set('/exact', (res) => {
      res.writeHead(200);
      res.end('z'.repeat(1024));
    });
    for (const path of ['/declared', '/chunked']) {
      expect(await refusal(() => guardedGet(`${base}${path}`, DEV)), path).toMatchObject({ code: 'RESPONSE_TOO_LARGE', retryable: false });
    }
    expect((await guardedGet(`${base}/exact`, DEV)).body).toHaveLength(1024);
  });

  it('an unreachable host is retryable', async () => {
    const closed = createServer();
    closed.listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((done) => closed.close(done));
    expect(await refusal(() => guardedGet(`http://127.0.0.1:${closedPort}/`, DEV))).toMatchObject({ code: 'UNREACHABLE', retryable: true });
  });
});

describe('guardedFetch (webhook deliveries: POST through the same policy)', () => {
  it('posts the body and headers given to loopback in development, and hands back the status without following a redirect', async () => {
    let received = '';
    routes.set('/hook', (res) => {
      res.writeHead(204);
      res.end();
    });
    routes.set('/moved', redirect(`${base}/hook`));
    server.prependOnceListener('request', (req) => {
      req.setEncoding('utf8');
      req.on('data', (chunk: string) => (received += chunk));
    });
    const send = guardedFetch(DEV);
    const answer = await send(`${base}/hook`, {
      method: 'POST',
      headers: { 'content-type': 'application/cloudevents+json', 'webhook-id': 'evt-1' },
      body: '{"id":"evt-1"}',
    });
    expect(answer.status).toBe(204);
    expect(received).toBe('{"id":"evt-1"}');
    expect(seen[0]!.headers).toMatchObject({ 'content-type': 'application/cloudevents+json', 'webhook-id': 'evt-1', 'content-length': '14' });
    expect(seen[0]!.headers.cookie).toBeUndefined();
    const moved = await send(`${base}/moved`, { method: 'POST', body: '{}' });
    expect(moved.status).toBe(302);
    expect(seen.map((s) => s.path)).toEqual(['/hook', '/moved']);
  });

  it('production refuses loopback, private and plain-http receivers without opening a socket', async () => {
    const sockets = recordOutgoingSockets();
    try {
      const send = guardedFetch(PRODUCTION);
      for (const url of [`${base}/hook`, 'https://127.0.0.1/hook', 'https://10.0.0.8/hook', 'https://169.254.169.254/latest', 'http://hooks.example.com/']) {
        const error = await refusal(() => send(url, { method: 'POST', body: '{}' }));
        expect(error.code, url).toBe('HOST_REFUSED');
      }
      expect(sockets.opened).toBe(0);
    } finally {
      sockets.stop();
    }
  });
});
