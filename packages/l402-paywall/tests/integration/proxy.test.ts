// The proxy (l402-paywall/proxy) over real sockets: a recording upstream (a
// Node HTTP server), the proxy's fetch handler on its Node server, selling
// with the embedded dev node whose wallet the proxy answers at POST
// /api/dev/pay. Unpaid requests never reach the upstream; a paid one reaches
// it once, intact but for the credential and hop-by-hop headers; its answer
// comes back (status, headers, streamed body), Location and cookies
// rewritten; an upstream that is down, slow or failing answers 502, 504 or
// its 5xx and gives the use back, so the same credential then buys the request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { createBudget, createSessions, devWallet, fetchWithL402 } from 'l402-paywall/client';
import { createProxy, type ProxyConfigInput } from 'l402-paywall/proxy';
import { listenProxy, type ProxyServer } from '../../src/proxy/node-server.js';
import { request as httpRequest } from 'node:http';
import { closedPort } from '../support/ports.js';
import { payL402, recordingUpstream, type Upstream } from '../support/proxy-upstream.js';

const SECRET = 'proxy-test-secret-0123456789abcdef0123456789abcdef';

let upstream: Upstream;
let proxy: ProxyServer;

async function startProxy(config: Omit<ProxyConfigInput, 'upstream'> & { upstream?: string }): Promise<ProxyServer> {
  const devNode = createDevNode({ store: memoryDevNodeStore() });
  const handler = createProxy({ upstream: upstream.url, ...config }, { provider: devNode, devNode, secret: SECRET, onError: () => {} });
  return listenProxy(handler, { port: 0, host: '127.0.0.1', onError: () => {} });
}

beforeAll(async () => {
  upstream = await recordingUpstream({ base: '/base' });
  proxy = await startProxy({
    timeoutSeconds: 1,
    routes: [
      { path: '/public/*', free: true },
      { path: '/session/*', session: { unitSats: 1, depositUnits: 10 } },
      { path: '/*', methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'], priceSats: 2 },
    ],
  });
});

afterAll(async () => {
  await proxy?.close();
  await upstream?.close();
});

/** A request sent with node:http (any header), its answer as a Response. */
function rawRequest(url: string, method: string, body: string, headers: Record<string, string>): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const answerHeaders = new Headers();
        for (let i = 0; i < res.rawHeaders.length; i += 2) answerHeaders.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode!, headers: answerHeaders }));
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Requests the upstream saw for `path` (under its base). */
const seen = (path: string) => upstream.received.filter((r) => new URL(r.url, 'http://x').pathname === `/base${path}`);

describe('the proxy sells every request', () => {
  it('answers an unpaid request 402 with both schemes, and the upstream sees nothing', async () => {
    const before = upstream.received.length;
    const answer = await fetch(`${proxy.url}/echo?q=1`, { method: 'POST', body: 'secret body' });
    expect(answer.status).toBe(402);
    const authenticate = answer.headers.get('www-authenticate')!;
    expect(authenticate).toMatch(/^LSAT macaroon="[^"]+", invoice="[^"]+", L402 /);
    expect(authenticate).toContain('Payment id=');
    const body = (await answer.json()) as { code: string; priceSats: number };
    expect(body).toMatchObject({ code: 'PAYMENT_REQUIRED', priceSats: 2 });
    expect(upstream.received.length).toBe(before);
  });

  it('forwards a paid request once, intact, without the credential; the answer comes back; the credential again is refused unforwarded', async () => {
    const challenge = await fetch(`${proxy.url}/echo?q=1&r=two`, { method: 'POST', body: '{"hello":"world"}' });
    const authorization = await payL402(proxy.url, challenge);
    const before = seen('/echo').length;
    // node:http, not fetch: fetch refuses to send the hop-by-hop headers the proxy must drop.
    const answer = await rawRequest(`${proxy.url}/echo?q=1&r=two`, 'POST', '{"hello":"world"}', {
      authorization,
      'content-type': 'application/json',
      'x-custom': 'kept',
      connection: 'keep-alive, x-hop',
      'x-hop': 'dropped',
      'keep-alive': 'timeout=5',
      te: 'trailers',
    });
    expect(answer.status).toBe(201);
    expect(answer.headers.get('x-upstream')).toBe('yes');
    expect(answer.headers.get('etag')).toBe('"v1"');
    expect(answer.headers.get('content-type')).toBe('application/json');
    // The paywall's rule for every paid answer: for the payer alone.
    expect(answer.headers.get('cache-control')).toBe('no-store');
    const got = (await answer.json()) as { method: string; url: string; headers: Record<string, string>; body: string };
    expect(seen('/echo').length).toBe(before + 1);
    expect(got.method).toBe('POST');
    expect(got.url).toBe('/base/echo?q=1&r=two');
    expect(got.body).toBe('{"hello":"world"}');
    expect(got.headers['x-custom']).toBe('kept');
    expect(got.headers['content-type']).toBe('application/json');
    expect(got.headers.authorization).toBeUndefined();
    expect(got.headers['x-hop']).toBeUndefined();
    expect(got.headers['keep-alive']).toBeUndefined();
    expect(got.headers.te).toBeUndefined();
    expect(got.headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(got.headers['x-forwarded-host']).toBe(new URL(proxy.url).host);
    expect(got.headers['x-forwarded-proto']).toBe('http');
    expect(got.headers.host).toBe(new URL(upstream.url).host);

    const again = await fetch(`${proxy.url}/echo?q=1&r=two`, { method: 'POST', headers: { authorization }, body: 'x' });
    expect(again.status).toBe(402);
    expect(((await again.json()) as { code: string }).code).toBe('TOKEN_ALREADY_USED');
    expect(seen('/echo').length).toBe(before + 1);
  });

  it("rewrites the upstream's Location and cookies to the proxy's address", async () => {
    const paid = async (path: string) => {
      const authorization = await payL402(proxy.url, await fetch(`${proxy.url}${path}`));
      return fetch(`${proxy.url}${path}`, { headers: { authorization }, redirect: 'manual' });
    };
    const redirect = await paid('/redirect');
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe(`${proxy.url}/echo?from=redirect`);
    const away = await paid('/redirect-away');
    expect(away.headers.get('location')).toBe('https://elsewhere.example/x');
    const echo = await paid('/echo');
    expect(echo.headers.getSetCookie()).toEqual(['sid=abc; Path=/app; HttpOnly', 'theme=dark']);
  });

  it('streams a streamed answer as it comes', async () => {
    const authorization = await payL402(proxy.url, await fetch(`${proxy.url}/stream`));
    const answer = await fetch(`${proxy.url}/stream`, { headers: { authorization } });
    expect(answer.headers.get('content-type')).toBe('text/event-stream');
    const reader = answer.body!.getReader();
    const first = await reader.read();
    // The first event arrives while the upstream is still sending (five events, 50 ms apart).
    expect(new TextDecoder().decode(first.value)).toBe('data: 1\n\n');
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toBe('data: 2\n\ndata: 3\n\ndata: 4\n\ndata: 5\n\n');
  });

  it('passes 204 and HEAD answers without a body', async () => {
    const authorization = await payL402(proxy.url, await fetch(`${proxy.url}/empty`));
    const empty = await fetch(`${proxy.url}/empty`, { headers: { authorization } });
    expect(empty.status).toBe(204);
    expect(await empty.text()).toBe('');
    const headAuth = await payL402(proxy.url, await fetch(`${proxy.url}/echo`));
    const head = await fetch(`${proxy.url}/echo`, { method: 'HEAD', headers: { authorization: headAuth } });
    expect(head.status).toBe(201);
    expect(await head.text()).toBe('');
  });
});

describe('an upstream that fails gives the use back', () => {
  it('5xx from the upstream comes back as it is, and the same credential buys the retry', async () => {
    const authorization = await payL402(proxy.url, await fetch(`${proxy.url}/fail`));
    const first = await fetch(`${proxy.url}/fail`, { headers: { authorization } });
    expect(first.status).toBe(500);
    expect(await first.json()).toEqual({ error: 'upstream broke' });
    const second = await fetch(`${proxy.url}/fail`, { headers: { authorization } });
    expect(second.status).toBe(500);
    expect(seen('/fail').length).toBe(2);
  });

  it('answers 504 UPSTREAM_TIMEOUT when the upstream is slow, and the credential still buys the request', async () => {
    const authorization = await payL402(proxy.url, await fetch(`${proxy.url}/slow`));
    const started = Date.now();
    const answer = await fetch(`${proxy.url}/slow`, { headers: { authorization } });
    expect(answer.status).toBe(504);
    expect(await answer.json()).toMatchObject({ code: 'UPSTREAM_TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(4000);
    // Given back: the same credential is not refused as used.
    const retry = await fetch(`${proxy.url}/slow`, { headers: { authorization } });
    expect(retry.status).toBe(200);
    expect(await retry.text()).toBe('in time');
  });

  it('answers 502 UPSTREAM_UNAVAILABLE when nothing listens, and the credential buys the request once the upstream is back', async () => {
    const port = await closedPort();
    const down = await recordingUpstream({ port });
    await down.close();
    const devNode = createDevNode({ store: memoryDevNodeStore() });
    const handler = createProxy(
      { upstream: `http://127.0.0.1:${port}`, routes: [{ path: '/*', priceSats: 1 }] },
      { provider: devNode, devNode, secret: SECRET, onError: () => {} },
    );
    const server = await listenProxy(handler, { port: 0, host: '127.0.0.1' });
    try {
      const authorization = await payL402(server.url, await fetch(`${server.url}/echo`));
      const failed = await fetch(`${server.url}/echo`, { headers: { authorization } });
      expect(failed.status).toBe(502);
      const body = (await failed.json()) as { code: string; error: string };
      expect(body.code).toBe('UPSTREAM_UNAVAILABLE');
      expect(body.error).toContain('ECONNREFUSED');
      const back = await recordingUpstream({ port });
      try {
        const served = await fetch(`${server.url}/echo`, { headers: { authorization } });
        expect(served.status).toBe(201);
        expect(back.received.length).toBe(1);
      } finally {
        await back.close();
      }
    } finally {
      await server.close();
    }
  });
});

describe('routes', () => {
  it('forwards a free route with its Authorization header, unpaid', async () => {
    const answer = await fetch(`${proxy.url}/public/echo`, { headers: { authorization: 'Bearer upstream-own' } });
    expect(answer.status).toBe(200);
    expect(await answer.text()).toBe('ok /public/echo');
    expect(upstream.received.at(-1)!.headers.authorization).toBe('Bearer upstream-own');
  });

  it('answers 404 NO_ROUTE for a request no route matches, unforwarded', async () => {
    const before = upstream.received.length;
    const answer = await fetch(`${proxy.url}/echo`, { method: 'PATCH' });
    expect(answer.status).toBe(404);
    expect(await answer.json()).toMatchObject({ code: 'NO_ROUTE' });
    expect(upstream.received.length).toBe(before);
  });

  it('refuses a body larger than maxBodyBytes with 413, unforwarded', async () => {
    const small = await startProxy({ maxBodyBytes: 10, routes: [{ path: '/*', free: true }] });
    try {
      const before = upstream.received.length;
      const answer = await fetch(`${small.url}/echo`, { method: 'POST', body: 'x'.repeat(11) });
      expect(answer.status).toBe(413);
      expect(await answer.json()).toMatchObject({ code: 'BODY_TOO_LARGE' });
      expect(upstream.received.length).toBe(before);
    } finally {
      await small.close();
    }
  });

  it('sells a session route by the session: our client opens one, spends a unit a request, and closes with its refund', async () => {
    const sessions = createSessions({ maxDepositSats: 20 });
    const budget = createBudget({ totalSats: 50 });
    const wallet = devWallet({ serviceUrl: proxy.url });
    const before = seen('/session/echo').length;
    for (let i = 0; i < 3; i++) {
      const answer = await fetchWithL402(`${proxy.url}/session/echo`, undefined, { wallet, sessions, budget, maxPriceSats: 20 });
      expect(answer.status).toBe(200);
      expect(await answer.text()).toBe('ok /session/echo');
      expect(upstream.received.at(-1)!.headers.authorization).toBeUndefined();
    }
    expect(seen('/session/echo').length).toBe(before + 3);
    const closed = await sessions.closeAll();
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatchObject({ status: 200, refundSats: 7, refundSeen: true });
    expect(budget.spent().totalSats).toBe(3);
  });
});

describe('our client pays the proxy as it pays withL402', () => {
  it('fetchWithL402 with the dev wallet, in either scheme', async () => {
    for (const scheme of ['L402', 'Payment'] as const) {
      const answer = await fetchWithL402(
        `${proxy.url}/echo?scheme=${scheme}`,
        { method: 'PUT', body: 'b' },
        { wallet: devWallet({ serviceUrl: proxy.url }), scheme, maxPriceSats: 5 },
      );
      expect(answer.status).toBe(201);
      const got = (await answer.json()) as { method: string; body: string };
      expect(got).toMatchObject({ method: 'PUT', body: 'b' });
    }
  });
});
