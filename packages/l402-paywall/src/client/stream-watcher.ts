// A Server-Sent Events answer served from a prepaid session, passed on byte
// for byte and read on the way for the server's demands of a top-up. It
// decides when a demand is refused unpaid; the paying is `topUp`'s, handed in.
import { L402ClientError } from './errors.js';
import type { HeldSession } from './sessions.js';

/** The longest line of a watched stream kept whole to be read; past it, the rest of that line passes unread. */
const MAX_WATCHED_LINE = 4096;

/**
 * Pays one top-up the stream's server demanded: throws at once (nothing
 * paid) when the call may pay no more top-ups, else resolves once the top-up
 * is credited, or rejects with why it was not.
 */
export type StreamTopUp = () => Promise<void>;

/**
 * A Server-Sent Events answer served from a session, passed on byte for byte
 * as it arrives, read on the way for `event: payment-need-topup` (the server
 * holds the stream until the balance is topped up, sessions.md "The metering
 * seam, and streams"): one top-up at a time is paid, as for a call refused for
 * balance, and the server's held stream resumes by itself. A demand is
 * refused unpaid (TOP_UP_REFUSED) when no chunk (a message event with data)
 * has arrived since this stream's last top-up (a server asking again without
 * delivering), or when the call has paid its maxTopUpsPerCall. A top-up not
 * made (refused, too dear, over budget, the wallet failed) ends the stream at
 * once, once what came before it has been read: the reader gets the error
 * (an L402ClientError for a refusal or a failed payment), the server's
 * stream is cancelled (it would only be held until its timeout), and
 * `held.topUpError` says why. Any other answer is returned as it is.
 */
export function watchStream(response: Response, held: HeldSession, url: URL, topUp: StreamTopUp): Response {
  if (!response.body || !/^text\/event-stream/i.test(response.headers.get('content-type') ?? '')) return response;
  const upstream = response.body.getReader();
  let toppingUp: Promise<void> | undefined;
  let failed: { error: unknown } | undefined;
  let topUpFailed: (failure: { error: unknown }) => void = () => {};
  const stopped = new Promise<{ error: unknown }>((resolve) => {
    topUpFailed = resolve;
  });
  const fail = (error: unknown) => {
    held.topUpError = error instanceof Error ? error.message : String(error);
    failed = { error };
    topUpFailed(failed);
  };
  let toppedUp = 0; // top-ups this stream paid
  let chunksSinceTopUp = 0;
  const demanded = () => {
    if (toppingUp || failed) return;
    if (toppedUp > 0 && chunksSinceTopUp === 0) {
      return fail(
        new L402ClientError(
          'TOP_UP_REFUSED',
          `Not paid: ${url.host} asked for another top-up of session ${held.sessionId} before sending a chunk for the last one`,
          { url: url.href, scheme: 'Payment', sessionId: held.sessionId },
        ),
      );
    }
    let payment: Promise<void>;
    try {
      payment = topUp();
    } catch (error) {
      return fail(error);
    }
    toppedUp++;
    chunksSinceTopUp = 0;
    toppingUp = payment
      .then(() => {
        held.topUpError = undefined;
      }, fail)
      .finally(() => {
        toppingUp = undefined;
      });
  };
  const scan = sseEvents((name, hasData) => {
    if (name === 'payment-need-topup') demanded();
    else if ((name === '' || name === 'message') && hasData) chunksSinceTopUp++;
  });
  const stop = async (controller: ReadableStreamDefaultController<Uint8Array>, error: unknown) => {
    controller.error(error);
    await upstream.cancel(error).catch(() => {});
  };
  // Pulled only as the caller reads (no queue of its own), so a failed top-up is raised after every byte before it was read.
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (failed) return stop(controller, failed.error);
        const read = upstream.read();
        // Raced only while a top-up is under way (each race leaves a reaction on `stopped` until it settles).
        const next = toppingUp ? await Promise.race([read, stopped]) : await read;
        if (!('done' in next)) return stop(controller, next.error);
        if (next.done) return controller.close();
        controller.enqueue(next.value);
        scan(next.value);
      },
      cancel: (reason) => upstream.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * Feeds `onEvent` each Server-Sent Event of a byte stream given in chunks, as
 * it is dispatched (at its blank line): its name ('' when unnamed) and
 * whether it carried data. Lines are read up to MAX_WATCHED_LINE characters;
 * the rest of a longer one passes unread (a field name is at its start).
 */
function sseEvents(onEvent: (name: string, hasData: boolean) => void): (chunk: Uint8Array) => void {
  let name = '';
  let hasData = false;
  return sseLines((raw) => {
    const line = raw.replace(/\r$/, '');
    if (line === '') {
      if (name !== '' || hasData) onEvent(name, hasData);
      name = '';
      hasData = false;
      return;
    }
    if (line.startsWith(':')) return; // a comment
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    if (field === 'event') name = line.slice(colon + 1).replace(/^ /, '');
    else if (field === 'data') hasData = true;
  });
}

/** Feeds `onLine` each whole line of a byte stream given in chunks, cut at MAX_WATCHED_LINE characters. */
function sseLines(onLine: (line: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  let line = '';
  return (chunk) => {
    const parts = decoder.decode(chunk, { stream: true }).split('\n');
    for (let i = 0; i < parts.length; i++) {
      if (line.length < MAX_WATCHED_LINE) line += parts[i]!.slice(0, MAX_WATCHED_LINE - line.length);
      if (i < parts.length - 1) {
        onLine(line);
        line = '';
      }
    }
  };
}
