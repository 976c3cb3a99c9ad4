// A streamed answer metered per chunk on the request's prepaid session
// (draft-lightning-session-00, "Streaming"): each chunk is sent as a
// Server-Sent Event once its units are spent from the session, in one atomic
// step of the ledger. When the balance runs out the stream sends
// `payment-need-topup` and holds, trying again (less and less often) until a
// top-up lands (on any instance sharing the ledger) or the wait runs out
// (`session-timeout`, then the stream ends). One stream per session is held
// at a time, marked in the paywall's replay store (SessionUse.claimTopUpWait):
// another that runs dry meanwhile ends at once with `session-timeout`. A
// finished stream ends with `payment-receipt` (what this stream spent) and
// `data: [DONE]`. Web streams only: Node, edge runtimes and Express (through
// its adapter) alike.
//
// Where the ledger keeps reservations (SessionUse.reserve, batched: batched-reserve.ts), the stream pays
// chunks ahead in batches rather than one ledger step a chunk (on Redis, a
// round trip each): it reserves the units of several chunks at once (4, then
// 8, up to `reserveChunks`, or what the balance covers), sends from the
// reservation, and settles it to the chunks it sent, giving back the rest.
// What a batch reserved and did not send is lost only when the process dies
// mid-stream, or the session is closed under it (its close counts the open
// reservation as spent): `reserveChunks: 1` spends chunk by chunk instead.
import type { SessionReservation, SessionUse } from '../../core/metering.js';
import { RESERVE_BATCHED, type BatchingSessionUse } from './batched-reserve.js';

export interface MeteredStreamOptions {
  /** Units spent per chunk; default 1. */
  unitsPerChunk?: number;
  /**
   * How long the stream holds for a top-up when the session still has some
   * balance, short of the chunk (chunks of several units), before it ends
   * with `session-timeout`; default 60 s (the draft's recommendation).
   */
  topUpTimeoutMs?: number;
  /**
   * How long it holds when the balance is empty (less than one unit left,
   * which is how a stream of one-unit chunks always runs dry); default 30 s,
   * or `topUpTimeoutMs` if that is shorter:
   * a paying client tops up at once (a 402, one payment, one request), and a
   * person paying a QR code from a phone wallet has time to.
   */
  emptyTopUpTimeoutMs?: number;
  /** The first wait of a held stream before it tries to spend again; default 250 ms, doubling after each try up to `maxPollMs`. */
  pollMs?: number;
  /** The longest wait between tries; default 2 s: a top-up is seen within 2 s, and a 30 s hold costs about 17 tries, not 120. */
  maxPollMs?: number;
  /**
   * The most chunks one reservation pays ahead, when the session's ledger
   * keeps reservations; default 16. 1 spends chunk by chunk (a ledger step each).
   */
  reserveChunks?: number;
}

/** The first batch a stream reserves, in chunks; each next one doubles, up to reserveChunks. */
const FIRST_BATCH_CHUNKS = 4;

/** The headers of a metered stream's answer. */
export const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' } as const;

const encoder = new TextEncoder();

/** One Server-Sent Event: an `event:` line when named, then one `data:` line per line of `data`. */
export const sseEvent = (name: string | undefined, data: string): Uint8Array =>
  encoder.encode(
    `${name ? `event: ${name}\n` : ''}${data
      .split(/\r\n|\r|\n/)
      .map((line) => `data: ${line}\n`)
      .join('')}\n`,
  );

/**
 * `chunks` as an SSE body metered on `session` (`getPayment(request).session`
 * in a route sold by the session): `new Response(meteredEventStream(session,
 * chunks), { headers: EVENT_STREAM_HEADERS })`. A chunk is sent only after
 * its units are spent; a chunk never paid is never sent. The unit the request
 * itself spent (its open or bearer) pays for the first chunk's first unit, so
 * a deposit of 20 units streams 20 one-unit chunks. The source is read
 * one chunk ahead of what is sent, no further, and is stopped (its `return`)
 * when the client hangs up or the stream ends early.
 */
export function meteredEventStream(
  session: SessionUse,
  chunks: AsyncIterable<string> | Iterable<string>,
  options: MeteredStreamOptions = {},
): ReadableStream<Uint8Array> {
  if (!session || typeof session.spend !== 'function')
    throw new TypeError('meteredEventStream: pass getPayment(request).session of a request served by a session');
  const units = options.unitsPerChunk ?? 1;
  if (!Number.isSafeInteger(units) || units <= 0) throw new RangeError('unitsPerChunk must be a positive whole number');
  const timeoutMs = options.topUpTimeoutMs ?? 60_000;
  // Never longer than the hold with a balance left, unless asked for.
  const emptyTimeoutMs = options.emptyTopUpTimeoutMs ?? Math.min(30_000, timeoutMs);
  const pollMs = options.pollMs ?? 250;
  const maxPollMs = Math.max(pollMs, options.maxPollMs ?? 2_000);
  const reserveChunks = options.reserveChunks ?? 16;
  if (!Number.isSafeInteger(reserveChunks) || reserveChunks <= 0) throw new RangeError('reserveChunks must be a positive whole number');
  for (const [name, value] of Object.entries({ topUpTimeoutMs: timeoutMs, emptyTopUpTimeoutMs: emptyTimeoutMs, pollMs, maxPollMs }))
    if (!Number.isFinite(value) || value < 0) throw new RangeError(`${name} must be a number of milliseconds, 0 or more`);
  const iterator = Symbol.asyncIterator in chunks ? chunks[Symbol.asyncIterator]() : (chunks as Iterable<string>)[Symbol.iterator]();
  let sentChunks = 0;
  let hungUp = false;
  // A held stream's wait between tries, cut short when the client hangs up.
  let wake: (() => void) | undefined;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  // What this stream spends is reported once it is done, not when its answer's head goes out.
  const done = session.hold?.() ?? (() => {});
  // The unit the request itself spent (open or bearer) pays for the first chunk's first unit.
  let prepaidUnits = 1;
  const unitMsat = session.unitPriceSats * 1000;
  // Chunks paid ahead (see the top): the open reservation, its units not yet sent, and those sent.
  const reserveBatched = (session as BatchingSessionUse)[RESERVE_BATCHED];
  const batching = reserveChunks > 1 && typeof reserveBatched === 'function';
  let batch: SessionReservation | undefined;
  let batchLeft = 0;
  let batchSent = 0;
  let nextBatchChunks = Math.min(FIRST_BATCH_CHUNKS, reserveChunks);
  /** Settles the open reservation to what was sent from it (never throws). */
  const settleBatch = async () => {
    const open = batch;
    batch = undefined;
    if (open) await open.settle(batchSent);
  };
  /**
   * The next chunk paid from a reservation: from the open one, else from a
   * new one (as many chunks as the balance covers, up to the batch size).
   * Whether it was; when not, the chunk is spent on its own (which holds for
   * a top-up, or ends the stream).
   */
  async function payFromBatch(): Promise<boolean> {
    if (batch && batchLeft >= units) {
      batchLeft -= units;
      batchSent += units;
      return true;
    }
    if (batch) void settleBatch(); // used up: settling it changes no balance, so the stream does not wait for it
    let chunks = nextBatchChunks;
    for (let attempt = 0; attempt < 2 && chunks > 0; attempt++) {
      const answer = await reserveBatched!(chunks * units);
      if (answer.ok) {
        batch = answer.reservation;
        batchLeft = chunks * units - units;
        batchSent = units;
        nextBatchChunks = Math.min(nextBatchChunks * 2, reserveChunks);
        if (!hungUp) return true;
        // The client hung up while it was being made (cancel settled the one before): nothing of it is sent.
        batchSent = 0;
        await settleBatch();
        return false;
      }
      if (answer.reason !== 'insufficient') return false;
      chunks = Math.min(chunks - 1, Math.floor(answer.balanceMsat / unitMsat / units));
    }
    return false;
  }
  const stopSource = async () => {
    try {
      await iterator.return?.();
    } catch {
      // the source's own clean-up failing changes nothing for the client
    }
  };
  const balance = (spentMsat: number | undefined, need: number) =>
    JSON.stringify({ sessionId: session.id, balanceSpent: (spentMsat ?? 0) / 1000, balanceRequired: need * session.unitPriceSats });

  /** Spends the next chunk's units, holding for a top-up when short: whether it was paid (else the stream has been ended). */
  async function pay(controller: ReadableStreamDefaultController<Uint8Array>): Promise<boolean> {
    const need = units - Math.min(prepaidUnits, units);
    prepaidUnits = Math.max(0, prepaidUnits - units);
    // A chunk the request's own unit pays takes no ledger step (so a stream that starts reserves nothing yet).
    if (need === 0) return true;
    if (need === units && batching && (await payFromBatch())) return true;
    if (hungUp) return false;
    let answer = await session.spend(need);
    if (answer.ok) return true;
    if (answer.reason === 'insufficient') {
      const empty = answer.balanceMsat < session.unitPriceSats * 1000;
      const deadline = Date.now() + (empty ? emptyTimeoutMs : timeoutMs);
      // One held stream per session: another already waits for the top-up (here or on another instance), so this one ends now.
      const release = session.claimTopUpWait ? await session.claimTopUpWait(deadline) : async () => {};
      if (hungUp) {
        await release?.();
        return false;
      }
      if (!release) {
        controller.enqueue(sseEvent('session-timeout', balance(answer.session?.spentMsat, need)));
        return false;
      }
      try {
        controller.enqueue(sseEvent('payment-need-topup', balance(answer.session?.spentMsat, need)));
        for (let wait = pollMs; !hungUp && Date.now() < deadline; wait = Math.min(wait * 2, maxPollMs)) {
          await sleep(Math.min(wait, Math.max(0, deadline - Date.now())));
          if (hungUp) return false;
          answer = await session.spend(need);
          if (answer.ok) return true;
          if (answer.reason !== 'insufficient') break;
        }
      } finally {
        await release();
      }
      if (hungUp) return false;
      if (answer.reason === 'insufficient') {
        controller.enqueue(sseEvent('session-timeout', balance(answer.session?.spentMsat, need)));
        return false;
      }
    }
    // Closed (by the client, or for idleness) or gone: nothing more is sold on it.
    controller.enqueue(sseEvent('session-closed', JSON.stringify({ sessionId: session.id, reason: answer.reason })));
    return false;
  }

  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<string>;
      try {
        next = await iterator.next();
      } catch (error) {
        // A source that fails ends the stream: what it spent so far is reported all the same.
        await settleBatch();
        done();
        throw error;
      }
      // Hung up while the source was producing: the chunk goes nowhere, so it is not charged.
      if (hungUp) return;
      if (next.done) {
        await settleBatch();
        const receipt = {
          method: 'lightning',
          reference: session.id,
          status: 'success',
          timestamp: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          spent: sentChunks * units * session.unitPriceSats,
          units: sentChunks,
        };
        controller.enqueue(sseEvent('payment-receipt', JSON.stringify(receipt)));
        controller.enqueue(sseEvent(undefined, '[DONE]'));
        controller.close();
        done();
        return;
      }
      if (!(await pay(controller))) {
        await settleBatch();
        await stopSource();
        if (!hungUp) controller.close();
        done();
        return;
      }
      sentChunks += 1;
      controller.enqueue(sseEvent(undefined, String(next.value)));
    },
    async cancel() {
      hungUp = true;
      wake?.();
      await settleBatch();
      done();
      await stopSource();
    },
  });
}
