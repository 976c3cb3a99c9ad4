// A recording upstream for the proxy's tests: a real Node HTTP server that
// keeps every request it receives (method, URL, headers, body) and answers
// by path: /echo (201 with the request as JSON, headers and cookies of its
// own), /redirect (a Location on its own address), /stream (an event stream,
// one event every `gapMs`), /fail (500), /slow (answers after `slowMs` the first time, at once after),
// /empty (204), anything else 200.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface Upstream {
  url: string;
  received: Received[];
  /** Resolves when the /stream answer was closed from the other end before it finished. */
  streamAbandoned: Promise<void>;
  close(): Promise<void>;
}

export interface UpstreamOptions {
  /** Base path the upstream serves under (the proxy's upstream URL then ends with it). */
  base?: string;
  gapMs?: number;
  slowMs?: number;
  port?: number;
}

export async function recordingUpstream(options: UpstreamOptions = {}): Promise<Upstream> {
  const base = options.base ?? '';
  const received: Received[] = [];
  let slowCalls = 0;
  let abandoned!: () => void;
  const streamAbandoned = new Promise<void>((resolve) => {
    abandoned = resolve;
  });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const record = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      received.push(record);
      const path = new URL(req.url!, 'http://upstream').pathname.slice(base.length);
      const self = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      switch (path) {
        case '/echo':
          res.setHeader('Set-Cookie', [`sid=abc; Path=${base || '/'}/app; Domain=127.0.0.1; HttpOnly`, 'theme=dark']);
          res.writeHead(201, { 'Content-Type': 'application/json', 'X-Upstream': 'yes', ETag: '"v1"' });
          res.end(JSON.stringify(record));
          return;
        case '/redirect':
          res.writeHead(302, { Location: `${self}${base}/echo?from=redirect` }).end();
          return;
        case '/redirect-away':
          res.writeHead(302, { Location: 'https://elsewhere.example/x' }).end();
          return;
        case '/stream': {
          res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
          let sent = 0;
          const timer = setInterval(() => {
            sent++;
            res.write(`data: ${sent}\n\n`);
            if (sent === 5) {
              clearInterval(timer);
              res.end();
            }
          }, options.gapMs ?? 50);
          res.on('close', () => {
            clearInterval(timer);
            if (!res.writableFinished) abandoned();
          });
          return;
        }
        case '/fail':
          res.writeHead(500, { 'Content-Type': 'application/json' }).end('{"error":"upstream broke"}');
          return;
        case '/slow':
          // Slow the first time only: a retry is answered at once.
          slowCalls++;
          if (slowCalls === 1) setTimeout(() => res.writeHead(200).end('late'), options.slowMs ?? 5000).unref();
          else res.writeHead(200).end('in time');
          return;
        case '/empty':
          res.writeHead(204).end();
          return;
        default:
          res.writeHead(200, { 'Content-Type': 'text/plain' }).end(`ok ${path}`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(options.port ?? 0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${base}`,
    received,
    streamAbandoned,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** The 402's L402 challenge, paid with the dev wallet at `proxy`'s POST /api/dev/pay: the Authorization value that spends it. */
export async function payL402(proxy: string, challenge: Response): Promise<string> {
  const { macaroon, invoice } = (await challenge.json()) as { macaroon: string; invoice: string };
  const paid = await fetch(`${proxy}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice }) });
  if (paid.status !== 200) throw new Error(`dev pay answered ${paid.status}: ${await paid.text()}`);
  const { preimage } = (await paid.json()) as { preimage: string };
  return `L402 ${macaroon}:${preimage}`;
}
