// httpEventSink: posts each event to a webhook URL in CloudEvents structured
// mode (application/cloudevents+json), signed the Standard Webhooks way, in the
// background. Sending costs the caller one push onto a bounded queue; workers
// post, retrying failures with backoff. A full queue drops its oldest event
// and counts it. Binary mode is not offered: its ce-* headers would sit
// outside the signature, which covers the body only.
import { discardBody } from '../http/discard-body.js';
import { secretKey, signEvent } from './signing.js';
import type { ErrorReporter } from './dispatch.js';
import type { L402Event } from './types.js';

export interface HttpEventSinkOptions {
  /** The receiver. */
  url: string | URL;
  /** whsec_ + base64 of 24 to 64 bytes (generateEventSecret()). */
  secret: string;
  /** Default globalThis.fetch; the hosted service passes one that follows its outbound policy. */
  fetch?: (input: string, init: RequestInit) => Promise<Response>;
  /** Keeps delivery alive after the response (Vercel: waitUntil from @vercel/functions; Workers: ctx.waitUntil). */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** Tries per event, the first included (default 4, at least 1). */
  maxAttempts?: number;
  /** Wait before the first retry; doubled for each next one (default 500 ms). */
  retryBaseMs?: number;
  /** Per attempt (default 10000 ms). */
  timeoutMs?: number;
  /** Events waiting at most; beyond, the oldest is dropped (default 1000). */
  maxQueue?: number;
  /** Posts in flight at once (default 4). */
  concurrency?: number;
  /** Delivery failures (after the last try) and drops; default console.error, message only. */
  onError?: ErrorReporter;
}

export interface EventSinkStats {
  /** Waiting to be posted. */
  queued: number;
  /** Being posted or waiting to retry. */
  inFlight: number;
  delivered: number;
  /** Given up after the last try, or refused by the receiver (4xx other than 408 and 429). */
  failed: number;
  /** Pushed out of a full queue. */
  dropped: number;
}

export interface HttpEventSink {
  /** Pass the sink itself as onEvent. Never throws, never waits. */
  (event: L402Event): void;
  send(event: L402Event): void;
  /** Resolves once every event sent so far is delivered, failed or dropped. */
  flush(): Promise<void>;
  stats(): EventSinkStats;
}

interface Pending {
  event: L402Event;
  /** Resolves the promise handed to waitUntil. */
  done?: () => void;
}

const RETRYABLE_STATUS = new Set([408, 425, 429]);

export function httpEventSink(options: HttpEventSinkOptions): HttpEventSink {
  const url = new URL(options.url);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError('httpEventSink: url must be an http(s) URL');
  const key = secretKey(options.secret);
  const doFetch = options.fetch ?? ((input: string, init: RequestInit) => globalThis.fetch(input, init));
  const maxAttempts = positive(options.maxAttempts ?? 4, 'maxAttempts');
  const retryBaseMs = options.retryBaseMs ?? 500;
  const timeoutMs = positive(options.timeoutMs ?? 10_000, 'timeoutMs');
  const maxQueue = positive(options.maxQueue ?? 1000, 'maxQueue');
  const concurrency = positive(options.concurrency ?? 4, 'concurrency');
  const onError: ErrorReporter =
    options.onError ?? ((error, context) => console.error(`[l402 events] ${context}:`, error instanceof Error ? error.message : error));
  const target = url.toString();

  const queue: Pending[] = [];
  let head = 0; // queue[head..] waits; the array is compacted now and then rather than shifted per event
  let active = 0; // workers running
  let inFlight = 0; // events taken by a worker and not yet settled
  const stats = { delivered: 0, failed: 0, dropped: 0 };
  let idleWaiters: Array<() => void> = [];

  const waiting = () => queue.length - head;

  function take(): Pending | undefined {
    if (head >= queue.length) return undefined;
    const item = queue[head]!;
    queue[head++] = undefined as unknown as Pending;
    if (head > 1024 && head * 2 > queue.length) {
      queue.splice(0, head);
      head = 0;
    }
    return item;
  }

  function settleIdle(): void {
    if (active > 0 || waiting() > 0) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  async function post(event: L402Event, body: string): Promise<'delivered' | 'retry' | 'refused'> {
    // Signed per attempt: a retry carries a fresh timestamp, so a late one is not stale; the id stays the event's.
    const headers = { 'content-type': 'application/cloudevents+json; charset=utf-8', ...signEvent(body, event.id, key) };
    const response = await doFetch(target, { method: 'POST', headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    discardBody(response.body);
    if (response.ok) return 'delivered';
    if (response.status >= 500 || RETRYABLE_STATUS.has(response.status)) return 'retry';
    return 'refused';
  }

  async function deliver(item: Pending): Promise<void> {
    const body = JSON.stringify(item.event);
    let lastProblem = '';
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (attempt > 1) await sleep(retryBaseMs * 2 ** (attempt - 2));
      let outcome: 'delivered' | 'retry' | 'refused';
      try {
        outcome = await post(item.event, body);
      } catch (error) {
        outcome = 'retry';
        lastProblem = error instanceof Error ? error.message : String(error);
      }
      if (outcome === 'delivered') {
        stats.delivered += 1;
        return;
      }
      if (outcome === 'refused') {
        lastProblem = 'the receiver refused it (4xx)';
        break;
      }
      lastProblem ||= 'the receiver answered an error';
    }
    stats.failed += 1;
    onError(new Error(`event ${item.event.id} (${item.event.type}) not delivered to ${url.host}: ${lastProblem}`), 'delivering an audit event failed');
  }

  async function work(): Promise<void> {
    try {
      for (let item = take(); item; item = take()) {
        inFlight += 1;
        try {
          await deliver(item);
        } catch (error) {
          stats.failed += 1;
          onError(error, 'delivering an audit event failed');
        } finally {
          inFlight -= 1;
          item.done?.();
        }
      }
    } finally {
      active -= 1;
      settleIdle();
    }
  }

  function send(event: L402Event): void {
    const item: Pending = { event };
    if (options.waitUntil) {
      const delivered = new Promise<void>((resolve) => {
        item.done = resolve;
      });
      try {
        options.waitUntil(delivered);
      } catch (error) {
        onError(error, 'waitUntil failed');
      }
    }
    if (waiting() >= maxQueue) {
      const oldest = take()!;
      stats.dropped += 1;
      oldest.done?.();
      if ((stats.dropped & (stats.dropped - 1)) === 0)
        onError(new Error(`the event queue is full (${maxQueue}); ${stats.dropped} event(s) dropped so far`), 'audit events dropped');
    }
    queue.push(item);
    if (active < concurrency) {
      active += 1;
      // Started in a later task: serialising, signing and starting a fetch
      // never run in the microtasks of the request that sent the event.
      setTimeout(() => void work(), 0);
    }
  }

  const sink = ((event: L402Event) => send(event)) as HttpEventSink;
  sink.send = send;
  sink.flush = () => (active === 0 && waiting() === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve)));
  sink.stats = () => ({ queued: waiting(), inFlight, ...stats });
  return sink;
}

function positive(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`httpEventSink: ${name} must be a positive integer, got ${value}`);
  return value;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
