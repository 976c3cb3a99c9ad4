// A webhook receiver on a random local port that keeps every delivery as it
// came off the wire (headers and raw body), and answers what a test scripts.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers one delivery: a status, or 'hang' (never answer until the receiver closes). */
export type ReceiverBehaviour = (delivery: Delivery, index: number) => number | 'hang';

export interface EventReceiver {
  url: string;
  deliveries: Delivery[];
  /** What the next deliveries get; default 204. */
  answer(behaviour: ReceiverBehaviour): void;
  close(): Promise<void>;
}

export async function startEventReceiver(): Promise<EventReceiver> {
  const deliveries: Delivery[] = [];
  const hanging: ServerResponse[] = [];
  let behaviour: ReceiverBehaviour = () => 204;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const delivery: Delivery = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      deliveries.push(delivery);
      const outcome = behaviour(delivery, deliveries.length - 1);
      if (outcome === 'hang') {
        hanging.push(res);
        return;
      }
      res.statusCode = outcome;
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/l402`,
    deliveries,
    answer(next) {
      behaviour = next;
    },
    close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Headers as the receiver got them, as a plain object of strings (what standardwebhooks' verify takes). */
export function plainHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const plain: Record<string, string> = {};
  for (const [key, value] of Object.entries(headers)) if (value !== undefined) plain[key] = Array.isArray(value) ? value.join(', ') : value;
  return plain;
}
