// Reads a Server-Sent Events body one event at a time, as it arrives: a
// metered stream's tests see each event when it is sent, not at the end.

/** One event as the library's metered streams write it: for tests of readers (a page's, a client's) against the writer. */
export { sseEvent } from '../../src/schemes/session/meter.js';

export interface ServerSentEvent {
  /** `message` when the event names none. */
  event: string;
  data: string;
}

/** A reader of `body`'s events: each call answers the next one, undefined once the body has ended; `cancel` hangs up. */
export function sseEvents(body: ReadableStream<Uint8Array>): (() => Promise<ServerSentEvent | undefined>) & { cancel(): Promise<void> } {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  const next = async (): Promise<ServerSentEvent | undefined> => {
    for (;;) {
      const end = buffer.indexOf('\n\n');
      if (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const lines = block.split('\n');
        const event = lines.find((l) => l.startsWith('event: '))?.slice(7) ?? 'message';
        const data = lines
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n');
        return { event, data };
      }
      const { value, done } = await reader.read();
      if (done) return undefined;
      buffer += decoder.decode(value, { stream: true });
    }
  };
  return Object.assign(next, { cancel: () => reader.cancel() });
}
