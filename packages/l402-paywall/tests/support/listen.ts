// Test servers on loopback: a Node request listener (an Express app, or a
// fetch handler through @hono/node-server) served on 127.0.0.1 at a port of
// its own, and closed with its open connections dropped first.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';

export interface Listening {
  /** http://127.0.0.1:<port> */
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** Serves a Node request listener (an Express app) on 127.0.0.1 (a random port). */
export async function listenNode(listener: RequestListener): Promise<Listening> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    server,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/** Serves a fetch handler on 127.0.0.1 (a random port). */
export function listen(handler: (request: Request) => Promise<Response> | Response): Promise<Listening> {
  return listenNode(getRequestListener(handler));
}
