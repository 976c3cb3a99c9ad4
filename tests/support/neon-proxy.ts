// A local stand-in for Neon's WebSocket proxy, so the Neon driver
// (@neondatabase/serverless) is tested against a real PostgreSQL: each
// WebSocket connection is piped byte for byte to a TCP connection to the
// Postgres the driver names, which is what Neon's wsproxy does.
//
// What the driver expects (read from its source and CONFIG.md, v1.2):
// - It opens `ws(s)://` + wsProxy(host, port) for each connection; with a
//   string wsProxy it appends `?address=host:port`. No subprotocol.
// - It sends and expects binary messages carrying the raw Postgres protocol
//   (binaryType 'arraybuffer'); a closed WebSocket is a closed connection.
// - The settings for a plain local server, all per client: useSecureWebSocket
//   false (ws://, no TLS here), pipelineConnect false (pipelining assumes
//   cleartext-password auth, which a trust or SCRAM server does not ask for),
//   pipelineTLS false and forceDisablePgSSL true (no Postgres-level TLS inside
//   the tunnel).
import { createServer, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { NeonSocketOptions } from '../../lib/db/neon.js';

export interface NeonProxy {
  /** Pass to createNeonDatabase(url, { socket }) to go through this proxy. */
  socket: NeonSocketOptions;
  /** WebSocket connections accepted so far (each is one Postgres connection). */
  readonly connections: number;
  close(): Promise<void>;
}

export async function startNeonProxy(): Promise<NeonProxy> {
  const http = createServer((_request, response) => {
    response.writeHead(426, { 'content-type': 'text/plain' }).end('WebSocket only\n');
  });
  const wss = new WebSocketServer({ noServer: true });
  const open = new Set<{ ws?: WebSocket; tcp: Socket }>();
  let connections = 0;

  http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const address = new URL(request.url ?? '/', 'http://proxy').searchParams.get('address') ?? '';
    const match = /^(.+):(\d+)$/.exec(address);
    if (!match) return refuse(socket, 400, 'address=host:port is required');
    // Dial first, as the real proxy does: an unreachable database refuses the upgrade.
    const tcp = connect({ host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) });
    const pair: { ws?: WebSocket; tcp: Socket } = { tcp };
    open.add(pair);
    tcp.once('error', () => {
      open.delete(pair);
      if (!pair.ws) refuse(socket, 502, `cannot reach ${address}`);
    });
    tcp.once('connect', () => {
      wss.handleUpgrade(request, socket, head, (ws) => {
        connections++;
        pair.ws = ws;
        tcp.setNoDelay(true);
        ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
          tcp.write(Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer));
        });
        tcp.on('data', (chunk) => ws.send(chunk, { binary: true }));
        const end = () => {
          open.delete(pair);
          tcp.destroy();
          if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close();
        };
        ws.on('close', end);
        ws.on('error', end);
        tcp.on('close', end);
        tcp.on('error', end);
      });
    });
  });

  http.listen(0, '127.0.0.1');
  await new Promise<void>((resolve, reject) => http.once('listening', resolve).once('error', reject));
  const { port } = http.address() as AddressInfo;

  return {
    socket: {
      wsProxy: (host, pgPort) => `127.0.0.1:${port}/v2?address=${host}:${pgPort}`,
      useSecureWebSocket: false,
      pipelineConnect: false,
      pipelineTLS: false,
      forceDisablePgSSL: true,
    },
    get connections() {
      return connections;
    },
    async close() {
      for (const { ws, tcp } of open) {
        ws?.terminate();
        tcp.destroy();
      }
      open.clear();
      wss.close();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}

function refuse(socket: Duplex, status: number, reason: string): void {
  socket.end(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}
