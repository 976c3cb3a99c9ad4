// The proxy's own added latency (issue 39), over HTTP on this machine, in one
// run and interleaved round by round: the same small GET answered by a local
// upstream directly; through `l402-paywall proxy`'s handler on its Node server
// (a fresh paid credential each, memory replay store); through the same proxy
// on a free route (forwarding alone); and through a Node server whose handler
// is withL402 around a fetch to the same upstream (what an operator writes by
// hand with the library). And metering: a completion POSTed to an
// OpenAI-compatible upstream directly, and through a session route metered by
// its reported usage (`"meter": "openai-usage"`: a bearer credential, the body
// read for max_tokens, a reservation and its settle on the memory ledger).
// p50 and p99 of the client's round trip, one request at a time on kept-alive
// connections; "added" is each minus its direct call's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, withL402 } from 'l402-paywall';
import { createDevNode } from 'l402-paywall/backends';
import { formatSessionCredential, parsePaymentChallenges, readLightningSession } from 'l402-paywall/mpp';
import { listenProxy } from 'l402-paywall/node';
import { createProxy } from 'l402-paywall/proxy';
import { paidAuthorization } from './credentials.js';

export interface LatencyRow {
  name: string;
  /** The row it adds to: the direct call of the same request. */
  base: string;
  p50Micros: number;
  p99Micros: number;
}

export interface ProxyBench {
  rows: LatencyRow[];
  requests: number;
}

const BODY = JSON.stringify({ usd: 100_000, source: 'simulated' });
const COMPLETION = JSON.stringify({
  id: 'cmpl',
  object: 'chat.completion',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' } }],
  usage: { total_tokens: 3 },
});
const COMPLETION_REQUEST = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 });
const noInvoices = { createInvoice: () => Promise.reject(new Error('every request here is paid')) };

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

/** withL402 around a handler that fetches the upstream, on a plain Node server (Web Request and Response converted by hand). */
function withL402Server(upstream: string, secret: string): Server {
  const handler = withL402(
    async (request: Request) => {
      const answer = await fetch(`${upstream}${new URL(request.url).pathname}`);
      return new Response(answer.body, { status: answer.status, headers: { 'content-type': answer.headers.get('content-type') ?? 'application/json' } });
    },
    { priceSats: 1, provider: noInvoices, secret, route: '/api/paid' },
  );
  return createServer(async (req, res) => {
    const response = await handler(new Request(`http://127.0.0.1${req.url}`, { headers: req.headers as Record<string, string> }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>).pipe(res);
    else res.end();
  });
}

export async function benchProxy(requests = 2000, rounds = 5): Promise<ProxyBench> {
  const secret = bytesToHex(randomBytes(32));
  const keyring = new Keyring([secret]);
  const upstreamServer = createServer((req, res) => {
    if (req.method !== 'POST') return void res.writeHead(200, { 'content-type': 'application/json' }).end(BODY);
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end(COMPLETION));
  });
  const upstream = await listen(upstreamServer);
  const proxy = await listenProxy(
    createProxy(
      {
        upstream,
        routes: [
          { path: '/free/*', free: true },
          { path: '/*', priceSats: 1 },
        ],
      },
      { provider: { name: 'none', ...noInvoices } as never, secret },
    ),
    { port: 0, host: '127.0.0.1' },
  );
  const library = withL402Server(upstream, secret);
  const libraryUrl = await listen(library);
  const metered = await meteredProxy(upstream, requests, secret);

  const completion = { method: 'POST', body: COMPLETION_REQUEST, headers: { 'content-type': 'application/json' } };
  const sides: { name: string; base: string; url: string; paid?: boolean; init?: typeof completion & { headers: Record<string, string> } }[] = [
    { name: 'direct', base: 'direct', url: `${upstream}/api/paid` },
    { name: 'proxy, free route', base: 'direct', url: `${proxy.url}/free/x` },
    { name: 'proxy, paid', base: 'direct', url: `${proxy.url}/api/paid`, paid: true },
    { name: 'withL402 + fetch', base: 'direct', url: `${libraryUrl}/api/paid`, paid: true },
    { name: 'direct completion', base: 'direct completion', url: `${upstream}/v1/chat/completions`, init: completion },
    {
      name: 'proxy, metered',
      base: 'direct completion',
      url: `${metered.url}/v1/chat/completions`,
      init: { ...completion, headers: { ...completion.headers, authorization: metered.bearer } },
    },
  ];
  const samples = new Map<string, number[]>(sides.map((side) => [side.name, []]));
  const once = async (side: (typeof sides)[number], record: boolean) => {
    const init = side.init ?? (side.paid ? { headers: { authorization: paidAuthorization(keyring) } } : {});
    const started = performance.now();
    const answer = await fetch(side.url, init);
    await answer.arrayBuffer();
    const micros = (performance.now() - started) * 1000;
    if (answer.status !== 200) throw new Error(`${side.name} answered ${answer.status}`);
    if (record) samples.get(side.name)!.push(micros);
  };
  for (const side of sides) for (let i = 0; i < 300; i++) await once(side, false);
  for (let round = 0; round < rounds; round++) {
    const order = round % 2 === 0 ? sides : [...sides].reverse();
    for (const side of order) for (let i = 0; i < requests / rounds; i++) await once(side, true);
  }
  await proxy.close();
  await metered.close();
  await new Promise((resolve) => library.close(resolve));
  library.closeAllConnections();
  await new Promise((resolve) => upstreamServer.close(resolve));
  upstreamServer.closeAllConnections();
  const quantile = (values: number[], q: number) => values.sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(values.length * q))]!;
  return {
    requests,
    rows: sides.map((side) => ({
      name: side.name,
      base: side.base,
      p50Micros: quantile(samples.get(side.name)!, 0.5),
      p99Micros: quantile(samples.get(side.name)!, 0.99),
    })),
  };
}

/**
 * A proxy selling /v1/* by the session, metered by the usage the upstream
 * reports, with the embedded dev node; a session opened on it with a deposit
 * room for every timed request: its bearer credential.
 */
async function meteredProxy(upstream: string, requests: number, secret: string) {
  const devNode = createDevNode();
  const unitsEach = 3; // the completion's reported usage
  const server = await listenProxy(
    createProxy(
      { upstream, routes: [{ path: '/v1/*', methods: ['POST'], session: { unitSats: 1, depositUnits: (requests + 400) * unitsEach }, meter: 'openai-usage' }] },
      { provider: devNode, secret },
    ),
    { port: 0, host: '127.0.0.1' },
  );
  const url = `${server.url}/v1/chat/completions`;
  const offered = await fetch(url, { method: 'POST', body: COMPLETION_REQUEST, headers: { 'content-type': 'application/json' } });
  const challenge = parsePaymentChallenges(offered.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session');
  if (!challenge) throw new Error(`the metered route offered no session (${offered.status})`);
  const read = readLightningSession(challenge);
  if (!read.ok) throw new Error(read.detail);
  const { preimage } = await devNode.pay(read.session.depositInvoice);
  const { invoice: returnInvoice } = await devNode.createAmountlessInvoice({ memo: 'refund', expirySeconds: 86_400 });
  const open = formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice });
  const opened = await fetch(url, { method: 'POST', body: COMPLETION_REQUEST, headers: { 'content-type': 'application/json', authorization: open } });
  await opened.arrayBuffer();
  if (opened.status !== 200) throw new Error(`opening the session answered ${opened.status}`);
  const bearer = formatSessionCredential(challenge, { action: 'bearer', sessionId: read.session.paymentHash, preimage });
  return { url: server.url, bearer, close: () => server.close() };
}

export function printProxyBench(bench: ProxyBench): void {
  const rowOf = new Map(bench.rows.map((row) => [row.name, row]));
  console.log(`\nThe proxy's added latency (client round trip over HTTP, ${bench.requests} requests per side, one at a time, interleaved):`);
  console.log(`  ${'side'.padEnd(20)} ${'p50'.padStart(9)} ${'p99'.padStart(9)}   added p50 / p99 (minus its direct call)`);
  for (const row of bench.rows) {
    const direct = rowOf.get(row.base)!;
    const added = row === direct ? '' : `+${(row.p50Micros - direct.p50Micros).toFixed(0)} / +${(row.p99Micros - direct.p99Micros).toFixed(0)} us`;
    console.log(`  ${row.name.padEnd(20)} ${`${row.p50Micros.toFixed(0)} us`.padStart(9)} ${`${row.p99Micros.toFixed(0)} us`.padStart(9)}   ${added}`);
  }
  console.log('  (GETs of a small JSON answer above; below, a completion POSTed, metered by its reported usage of 3 tokens through a session)');
}

if (import.meta.url === `file://${process.argv[1]}`) printProxyBench(await benchProxy());
