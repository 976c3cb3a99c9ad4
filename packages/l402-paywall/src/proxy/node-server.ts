/// <reference types="node" />
// The proxy's fetch handler on a Node HTTP server (what `l402-paywall proxy`
// runs): each IncomingMessage becomes a Web Request whose body streams from
// the socket and whose signal aborts when the client hangs up; the Response
// is written back as it streams, with backpressure, its Set-Cookie values
// kept apart. Node only: the handler itself (handler.ts) is not.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ProxyHandler } from './handler.js';

export interface ProxyServer {
  /** http://host:port, as it listens. */
  readonly url: string;
  readonly server: Server;
  /** Stops listening and ends open connections. */
  close(): Promise<void>;
}

export interface ListenOptions {
  port: number;
  host: string;
  onError?: (error: unknown, context: string) => void;
}

/** Serves `handler` on a Node HTTP server; resolves once it listens (port 0: a free one). */
export function listenProxy(handler: ProxyHandler, options: ListenOptions): Promise<ProxyServer> {
  const onError = options.onError ?? ((error, context) => console.error(`[l402 proxy] ${context}:`, error instanceof Error ? error.message : error));
  const server = createServer((req, res) => {
    void serveOne(handler, req, res, onError);
  });
  // Streamed answers (a model's completion) may run long: no whole-request timeout of Node's own.
  server.requestTimeout = 0;
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      const { port, address } = server.address() as AddressInfo;
      const host = address.includes(':') ? `[${address}]` : address;
      resolve({
        url: `http://${host}:${port}`,
        server,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

async function serveOne(handler: ProxyHandler, req: IncomingMessage, res: ServerResponse, onError: (error: unknown, context: string) => void): Promise<void> {
  const hangUp = new AbortController();
  // 'close' on the response before it finished: the client went away (the upstream is told through the signal).
  res.once('close', () => {
    if (!res.writableFinished) hangUp.abort();
  });
  let request: Request;
  try {
    request = webRequest(req, hangUp.signal);
  } catch {
    writeJson(res, 400, { error: 'The request line or Host header cannot be read as a URL', code: 'BAD_REQUEST' });
    return;
  }
  let response: Response;
  try {
    response = await handler(request, { clientAddress: req.socket.remoteAddress });
  } catch (error) {
    onError(error, 'the proxy failed on a request');
    if (!res.headersSent) writeJson(res, 500, { error: 'internal error', code: 'INTERNAL' });
    else res.destroy();
    return;
  }
  await writeResponse(res, response, onError);
}

/** The Web Request for an IncomingMessage; throws on a method or URL a Request cannot carry. */
function webRequest(req: IncomingMessage, signal: AbortSignal): Request {
  const host = req.headers.host ?? 'localhost';
  const url = new URL(req.url ?? '/', `http://${host}`);
  if (!req.url?.startsWith('/')) throw new TypeError('not an origin-form request target');
  const headers = new Headers();
  for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i]!, req.rawHeaders[i + 1]!);
  const method = req.method ?? 'GET';
  const hasBody = method !== 'GET' && method !== 'HEAD';
  return new Request(url, {
    method,
    headers,
    signal,
    ...(hasBody && { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: 'half' }),
  } as RequestInit);
}

async function writeResponse(res: ServerResponse, response: Response, onError: (error: unknown, context: string) => void): Promise<void> {
  const headers: [string, string][] = [];
  for (const [name, value] of response.headers) if (name !== 'set-cookie') headers.push([name, value]);
  for (const cookie of response.headers.getSetCookie()) headers.push(['set-cookie', cookie]);
  res.writeHead(response.status, response.statusText || undefined, headers.flat());
  if (!response.body) {
    res.end();
    return;
  }
  // Headers out at once: a client of a streamed answer (SSE) sees them before the first event.
  res.flushHeaders();
  try {
    await pipeline(Readable.fromWeb(response.body as import('node:stream/web').ReadableStream<Uint8Array>), res);
  } catch (error) {
    // The client hung up (the pipeline cancelled the body, which stops the upstream), or the upstream died mid-answer.
    if (!res.destroyed) onError(error, 'streaming an answer failed');
    res.destroy();
  }
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' });
  res.end(JSON.stringify(body));
}
