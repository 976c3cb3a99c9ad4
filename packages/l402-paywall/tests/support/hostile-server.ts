// A server on loopback that answers the way a hostile API or directory
// would, for the client, the command line and the MCP server to meet: an
// internal endpoint that must never be reached, open redirects, endless and
// trickling answers, silence. It records what it was asked and how much of
// an answer it got out before the client hung up.
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { listenNode } from './listen.js';

export const MIB = 1024 * 1024;
export const SECRET_BODY = 'internal secret: the admin macaroon';

export interface HostileServer {
  /** http://127.0.0.1:<port> */
  readonly url: string;
  readonly port: number;
  /** Path and query of every request, in order. */
  readonly requests: string[];
  /** The headers of every request, in order. */
  readonly headers: Record<string, string | string[] | undefined>[];
  /** Bytes of the last streamed answer written before it ended or the client hung up, once it has. */
  streamed(): Promise<{ bytes: number; clientHungUp: boolean }>;
  close(): Promise<void>;
}

/**
 * Routes:
 * - /secret                       200 with SECRET_BODY (what must stay unreachable)
 * - /redirect?to=URL[&status=302] a redirect to URL
 * - /stream?mib=N[&status=S][&json=1]
 *                                 S (default 200) with N MiB of 'a' (0: without end),
 *                                 written as the client takes it; with json=1 a JSON content type
 * - /trickle                      200, then one byte every 200 ms, without end
 * - /silent                       never answers
 */
export async function startHostileServer(): Promise<HostileServer> {
  const requests: string[] = [];
  const headers: HostileServer['headers'] = [];
  let lastStream: Promise<{ bytes: number; clientHungUp: boolean }> = Promise.resolve({ bytes: 0, clientHungUp: false });
  const timers = new Set<NodeJS.Timeout>();

  const served = await listenNode((req, res) => {
    requests.push(req.url ?? '');
    headers.push(req.headers);
    req.resume();
    const url = new URL(req.url ?? '/', 'http://x');
    switch (url.pathname) {
      case '/secret':
        return res.writeHead(200, { 'content-type': 'text/plain' }).end(SECRET_BODY);
      case '/redirect':
        return res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to') ?? '/' }).end();
      case '/stream':
        lastStream = stream(res, Number(url.searchParams.get('mib') ?? 0), Number(url.searchParams.get('status') ?? 200), url.searchParams.has('json'));
        return;
      case '/trickle': {
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 200);
        timers.add(timer);
        res.once('close', () => {
          clearInterval(timer);
          timers.delete(timer);
        });
        return;
      }
      case '/silent':
        return; // no answer, ever
      default:
        return res.writeHead(404).end();
    }
  });
  return {
    url: served.url,
    port: (served.server.address() as AddressInfo).port,
    requests,
    headers,
    streamed: () => lastStream,
    close: async () => {
      for (const timer of timers) clearInterval(timer);
      await served.close();
    },
  };
}

/** Writes `mib` MiB (0: without end) as fast as the client takes it; resolves with what got out. */
async function stream(res: ServerResponse, mib: number, status: number, json: boolean): Promise<{ bytes: number; clientHungUp: boolean }> {
  res.writeHead(status, { 'content-type': json ? 'application/json' : 'text/plain' });
  const chunk = Buffer.alloc(64 * 1024, 'a');
  let bytes = 0;
  let hungUp = false;
  const closed = new Promise<void>((resolve) =>
    res.once('close', () => {
      hungUp = !res.writableFinished;
      resolve();
    }),
  );
  while (!hungUp && (mib === 0 || bytes < mib * MIB)) {
    bytes += chunk.length;
    if (!res.write(chunk)) await Promise.race([new Promise((resolve) => res.once('drain', resolve)), closed]);
  }
  if (!hungUp) res.end();
  await closed;
  return { bytes, clientHungUp: hungUp };
}
