// Sending one request of a call: a fresh copy each time (the same request may
// go out two or three times), within the caller's deadline and destination
// policy; and the wait a 503's Retry-After asks before a paid request goes again.
import { deadline } from '../http/deadline.js';
import type { Fetch } from '../http/fetch-type.js';
import { fetchWithinPolicy } from './destinations.js';
import { DEFAULT_TIMEOUT_MS, type FetchWithL402Options } from './options.js';

/** Sends the call's request once, with this Authorization when given. */
export type Send = (request: Request, authorization?: string) => Promise<Response>;

/** The fetch the options name, else the global one (looked up when called, so a replaced globalThis.fetch is used). */
export function fetchOf(options: FetchWithL402Options): Fetch {
  return options.fetch ?? ((input, init) => globalThis.fetch(input, init));
}

export function sendOnce(
  doFetch: Fetch,
  options: FetchWithL402Options,
  request: Request,
  authorization: string | undefined,
  callerSignal?: AbortSignal,
): Promise<Response> {
  // A clone each time: the request (and its body) may have to go out twice.
  const attempt = request.clone();
  if (authorization) attempt.headers.set('authorization', authorization);
  const accepted = acceptPaymentOf(options);
  if (accepted && !attempt.headers.has('accept-payment')) attempt.headers.set('accept-payment', accepted);
  const signal = deadline(options.timeoutMs ?? DEFAULT_TIMEOUT_MS, callerSignal);
  return options.destinations ? fetchWithinPolicy(doFetch, attempt, options.destinations, signal) : doFetch(attempt, { signal });
}

/**
 * The Accept-Payment header (the MPP core draft) of a client asked to pay in
 * the Payment scheme: the challenges it pays, so a server that honours it
 * sends them first. The session first when it holds sessions (it opens one
 * whenever one is offered), else the charge alone. None for an L402 client,
 * and a caller's own header is left as it is.
 */
export function acceptPaymentOf(options: Pick<FetchWithL402Options, 'scheme' | 'sessions'>): string | undefined {
  if (options.scheme !== 'Payment') return undefined;
  return options.sessions ? 'lightning/session, lightning/charge;q=0.9' : 'lightning/charge';
}

/** Seconds to wait before sending a paid request again: its answer was 503 with a Retry-After of at most `maxSeconds`. */
export function unavailableFor(response: Response, maxSeconds: number): number | undefined {
  if (response.status !== 503 || !(maxSeconds > 0)) return undefined;
  const header = response.headers.get('retry-after')?.trim();
  if (!header) return undefined;
  const seconds = /^\d+$/.test(header) ? Number(header) : (Date.parse(header) - Date.now()) / 1000;
  if (!Number.isFinite(seconds)) return undefined;
  const wait = Math.max(0, seconds);
  return wait <= maxSeconds ? wait : undefined;
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', abort, { once: true });
  });
}
