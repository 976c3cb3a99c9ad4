// A minimal NIP-01 relay over `ws` for NWC tests: it verifies event signatures,
// stores regular and replaceable events (ephemeral kinds 20000-29999, which
// NIP-47 requests and replies use, are only forwarded, as real relays do), answers
// REQ with stored matches then EOSE, and forwards new events to open
// subscriptions. `mute()` turns it into a relay that accepts connections and
// never answers anything: the case a provider must bound by its own timeout.
import type { AddressInfo } from 'node:net';
import { verifyEvent, type Event, type Filter } from 'nostr-tools';
import { WebSocketServer, type WebSocket } from 'ws';

export interface NostrRelay {
  /** ws://127.0.0.1:<port> */
  url: string;
  /** Every event accepted, in order (ephemeral ones included), for assertions. */
  readonly received: Event[];
  /** Stop answering (connections stay open, messages are swallowed). */
  mute(): void;
  unmute(): void;
  /** How many client connections are open now. */
  connectionCount(): number;
  close(): Promise<void>;
}

function matches(filter: Filter, event: Event): boolean {
  if (filter.ids && !filter.ids.includes(event.id)) return false;
  if (filter.authors && !filter.authors.includes(event.pubkey)) return false;
  if (filter.kinds && !filter.kinds.includes(event.kind)) return false;
  if (filter.since !== undefined && event.created_at < filter.since) return false;
  if (filter.until !== undefined && event.created_at > filter.until) return false;
  for (const [key, values] of Object.entries(filter)) {
    if (!key.startsWith('#') || !Array.isArray(values)) continue;
    const name = key.slice(1);
    if (!event.tags.some((tag) => tag[0] === name && (values as string[]).includes(tag[1]!))) return false;
  }
  return true;
}

const isEphemeral = (kind: number) => kind >= 20000 && kind < 30000;
const isReplaceable = (kind: number) => kind === 0 || kind === 3 || (kind >= 10000 && kind < 20000);

export async function startNostrRelay(): Promise<NostrRelay> {
  const server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => server.once('listening', resolve));
  const stored: Event[] = [];
  const received: Event[] = [];
  const subscriptions = new Map<WebSocket, Map<string, Filter[]>>();
  let muted = false;

  const send = (socket: WebSocket, message: unknown[]) => {
    if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(message));
  };

  function store(event: Event) {
    if (isEphemeral(event.kind)) return;
    if (isReplaceable(event.kind)) {
      const old = stored.findIndex((e) => e.kind === event.kind && e.pubkey === event.pubkey);
      if (old !== -1) {
        if (stored[old]!.created_at > event.created_at) return;
        stored.splice(old, 1);
      }
    }
    stored.push(event);
  }

  function handle(socket: WebSocket, message: unknown) {
    if (!Array.isArray(message) || typeof message[0] !== 'string') return send(socket, ['NOTICE', 'invalid: not a NIP-01 message']);
    const subs = subscriptions.get(socket)!;
    switch (message[0]) {
      case 'EVENT': {
        const event = message[1] as Event;
        if (!event || typeof event !== 'object' || !verifyEvent(event)) {
          return send(socket, ['OK', (event as Partial<Event>)?.id ?? '', false, 'invalid: bad signature or id']);
        }
        received.push(event);
        store(event);
        send(socket, ['OK', event.id, true, '']);
        for (const [client, clientSubs] of subscriptions) {
          for (const [id, filters] of clientSubs) {
            if (filters.some((f) => matches(f, event))) send(client, ['EVENT', id, event]);
          }
        }
        return;
      }
      case 'REQ': {
        const [, id, ...filters] = message as [string, string, ...Filter[]];
        if (typeof id !== 'string') return send(socket, ['NOTICE', 'invalid: REQ without subscription id']);
        subs.set(id, filters);
        for (const filter of filters) {
          // Newest first, as NIP-01 asks for `limit`.
          const found = stored.filter((e) => matches(filter, e)).sort((a, b) => b.created_at - a.created_at);
          for (const event of found.slice(0, filter.limit ?? found.length)) send(socket, ['EVENT', id, event]);
        }
        return send(socket, ['EOSE', id]);
      }
      case 'CLOSE': {
        subs.delete(String(message[1]));
        return;
      }
      default:
        return send(socket, ['NOTICE', `unsupported: ${message[0]}`]);
    }
  }

  server.on('connection', (socket) => {
    subscriptions.set(socket, new Map());
    socket.on('close', () => subscriptions.delete(socket));
    socket.on('message', (data) => {
      if (muted) return;
      let message: unknown;
      try {
        message = JSON.parse(data.toString());
      } catch {
        return send(socket, ['NOTICE', 'invalid: not JSON']);
      }
      handle(socket, message);
    });
  });

  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    mute: () => void (muted = true),
    unmute: () => void (muted = false),
    connectionCount: () => server.clients.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of server.clients) client.terminate();
        server.close(() => resolve());
      }),
  };
}
