// Requests to hosts someone else chose (Lightning Address servers, operators'
// webhook receivers), made so
// that they cannot be turned against us (docs/architecture.md decision 7): https only
// (plain http only to loopback, and only in development); every address the
// name resolves to must be public; the connection goes to an address we
// checked, with no second DNS answer in between (no rebinding window); each
// redirect hop is checked the same way; one time budget for the whole fetch;
// the body is counted as it streams and cut off at the cap; no cookies, no
// credentials, no connection reuse.
import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { classifyAddress } from 'l402-paywall/client';
import { withTimeout } from '../util/async.js';

// The classification is the library's (its client applies the same rules to agents' requests).
export { classifyAddress, type AddressKind } from 'l402-paywall/client';

export interface OutboundPolicy {
  /** Development only: allow http:// and loopback hosts (127.0.0.0/8, ::1, localhost). Never in production. */
  allowLoopback: boolean;
  /** Whole request budget per fetch (every hop, DNS included), ms. */
  timeoutMs: number;
  /** Response body cap, bytes. */
  maxBytes: number;
}

export type OutboundErrorCode = 'HOST_REFUSED' | 'UNREACHABLE' | 'TIMEOUT' | 'RESPONSE_TOO_LARGE' | 'BAD_RESPONSE';

/**
 * A host someone else chose did not give what we needed: a code the caller
 * answers or records, and whether asking again later may help.
 */
export class RemoteHostError<Code extends string> extends Error {
  constructor(
    readonly code: Code,
    message: string,
    /** Worth trying again later: the host may answer next time. */
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export class OutboundError extends RemoteHostError<OutboundErrorCode> {
  override readonly name = 'OutboundError';
}

export interface OutboundResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The URL that answered, after redirects. */
  url: string;
  body: string;
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

export const MAX_REDIRECTS = 3;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

const systemResolver: Resolver = async (hostname) =>
  (await dnsLookup(hostname, { all: true, verbatim: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/**
 * GETs `url` under `policy`. Throws OutboundError: HOST_REFUSED (scheme, host or
 * an address we never connect to), UNREACHABLE, TIMEOUT, RESPONSE_TOO_LARGE,
 * BAD_RESPONSE (too many redirects, a body that is not UTF-8). Any HTTP status
 * is returned: the caller decides what a 404 or 500 means.
 * `resolve` replaces DNS (tests).
 */
export async function guardedGet(
  url: string,
  policy: OutboundPolicy,
  options: { accept?: string; resolve?: Resolver; headers?: Record<string, string>; followRedirects?: boolean } = {},
): Promise<OutboundResponse> {
  return guardedRequest(url, policy, options);
}

export interface GuardedRequestOptions {
  /** Default GET. Only GET follows redirects; any other method gets the 3xx as its answer. */
  method?: string;
  accept?: string;
  /** Sent besides accept and user-agent (never cookies or credentials of ours). */
  headers?: Record<string, string>;
  body?: string;
  resolve?: Resolver;
  /** false: a redirect is an error (an answer that must come from this very URL, such as a proof of control). */
  followRedirects?: boolean;
}

/** guardedGet for any method: the same checks, and a body sent as given. */
export async function guardedRequest(url: string, policy: OutboundPolicy, options: GuardedRequestOptions = {}): Promise<OutboundResponse> {
  const resolve = options.resolve ?? systemResolver;
  const deadline = Date.now() + policy.timeoutMs;
  const method = options.method ?? 'GET';
  const headers = { ...options.headers, accept: options.accept ?? 'application/json', 'user-agent': 'l402-paywall (+LNURL)' };
  let target = parseTarget(url);
  for (let hop = 0; ; hop++) {
    const addresses = await withTimeout(checkTarget(target, policy, resolve), Math.max(0, deadline - Date.now()), () => timeoutError(policy));
    const response = await fetchPinned(target, addresses, policy, deadline, { method, headers, body: options.body });
    if (!('location' in response)) return response;
    // An answer that must come from this very URL (a proof of control) cannot be handed on.
    if (options.followRedirects === false) throw new OutboundError('BAD_RESPONSE', `${target.host} answered with a redirect`, false);
    if (hop >= MAX_REDIRECTS) throw new OutboundError('BAD_RESPONSE', `${target.host} redirected more than ${MAX_REDIRECTS} times`, false);
    target = parseTarget(response.location, target);
  }
}

function parseTarget(text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw new OutboundError('HOST_REFUSED', base ? 'Redirect to an invalid URL' : 'Not a valid URL', false);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundError('HOST_REFUSED', `Only https URLs are fetched, not ${url.protocol}`, false);
  // Credentials in a URL would be sent as Authorization; nobody we pay needs them.
  if (url.username || url.password) throw new OutboundError('HOST_REFUSED', 'URLs carrying credentials are not fetched', false);
  url.hash = '';
  return url;
}

/** Resolves the host and returns the addresses we may connect to; every one must pass. */
async function checkTarget(url: URL, policy: OutboundPolicy, resolve: Resolver): Promise<ResolvedAddress[]> {
  const hostname = url.hostname.replace(/^\[(.*)\]$/, '$1');
  // Before any DNS query: production never speaks plain http.
  if (url.protocol === 'http:' && !policy.allowLoopback) throw new OutboundError('HOST_REFUSED', 'Only https URLs are fetched', false);
  let addresses: ResolvedAddress[];
  const literal = isIP(hostname);
  if (literal) {
    addresses = [{ address: hostname, family: literal === 6 ? 6 : 4 }];
  } else {
    try {
      addresses = await resolve(hostname);
    } catch (error) {
      throw new OutboundError('UNREACHABLE', `Could not resolve ${hostname}`, true, { cause: error });
    }
    if (addresses.length === 0) throw new OutboundError('UNREACHABLE', `${hostname} has no address`, true);
  }
  for (const { address } of addresses) {
    const kind = classifyAddress(address);
    if (kind === 'public') continue;
    if (kind === 'loopback' && policy.allowLoopback) continue;
    throw new OutboundError('HOST_REFUSED', `${hostname} is a ${kind} address; only public hosts are fetched`, false);
  }
  if (url.protocol === 'http:') {
    const loopbackOnly = addresses.every(({ address }) => classifyAddress(address) === 'loopback');
    if (!(policy.allowLoopback && loopbackOnly)) throw new OutboundError('HOST_REFUSED', 'Only https URLs are fetched', false);
  }
  return addresses;
}

type Answer = OutboundResponse | { location: string };

interface Outgoing {
  method: string;
  headers: Record<string, string>;
  body?: string;
}

function fetchPinned(url: URL, addresses: ResolvedAddress[], policy: OutboundPolicy, deadline: number, outgoing: Outgoing): Promise<Answer> {
  // The socket connects only to addresses checkTarget passed: this lookup never asks DNS again.
  const pinned: LookupFunction = (_hostname, options, callback) => {
    const allowed = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
    if (allowed.length === 0) return callback(Object.assign(new Error('no checked address of that family'), { code: 'ENOTFOUND' }), '', 4);
    if (options.all) return (callback as unknown as (e: null, all: ResolvedAddress[]) => void)(null, allowed);
    callback(null, allowed[0]!.address, allowed[0]!.family);
  };
  const remaining = deadline - Date.now();
  if (remaining <= 0) return Promise.reject(timeoutError(policy));
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;

  return new Promise<Answer>((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };
    const request = send(url, {
      method: outgoing.method,
      // No Cookie, no Authorization: nothing but what the protocol needs.
      headers: outgoing.body !== undefined ? { ...outgoing.headers, 'content-length': String(Buffer.byteLength(outgoing.body)) } : outgoing.headers,
      lookup: pinned,
      agent: false,
    });
    const timer = setTimeout(() => {
      finish(() => reject(timeoutError(policy)));
      request.destroy();
    }, remaining);
    request.on('error', (error: NodeJS.ErrnoException) => {
      finish(() => reject(new OutboundError('UNREACHABLE', `Could not reach ${url.host} (${error.code ?? error.message})`, true, { cause: error })));
    });
    request.on('response', (response: IncomingMessage) => {
      const status = response.statusCode ?? 0;
      const location = response.headers.location;
      if (REDIRECT_STATUSES.has(status) && location && outgoing.method === 'GET') {
        response.resume();
        request.destroy();
        return finish(() => resolve({ location }));
      }
      const tooLarge = () => {
        finish(() => reject(new OutboundError('RESPONSE_TOO_LARGE', `${url.host} answered more than ${policy.maxBytes} bytes`, false)));
        request.destroy();
      };
      if (Number(response.headers['content-length'] ?? 0) > policy.maxBytes) return tooLarge();
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > policy.maxBytes) return tooLarge();
        chunks.push(chunk);
      });
      response.on('error', (error) => finish(() => reject(new OutboundError('UNREACHABLE', `${url.host} broke off its answer`, true, { cause: error }))));
      response.on('end', () => {
        let body: string;
        try {
          body = new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
        } catch {
          return finish(() => reject(new OutboundError('BAD_RESPONSE', `${url.host} answered a body that is not UTF-8`, false)));
        }
        finish(() => resolve({ status, headers: response.headers, url: url.href, body }));
      });
    });
    request.end(outgoing.body);
  });
}

/**
 * A fetch for code that takes one (httpEventSink's `fetch` option) that sends
 * through guardedRequest: the same policy for every hop, its time budget in
 * place of the caller's signal. String bodies only.
 */
export function guardedFetch(policy: OutboundPolicy, options: { resolve?: Resolver } = {}): (input: string, init?: RequestInit) => Promise<Response> {
  return async (input, init = {}) => {
    if (init.body !== undefined && init.body !== null && typeof init.body !== 'string') throw new TypeError('guardedFetch sends string bodies only');
    const headers = Object.fromEntries(new Headers(init.headers).entries());
    const { accept = '*/*', ...rest } = headers;
    const answer = await guardedRequest(input, policy, {
      method: init.method ?? 'GET',
      accept,
      headers: rest,
      body: init.body ?? undefined,
      resolve: options.resolve,
    });
    const responseHeaders = new Headers();
    for (const [key, value] of Object.entries(answer.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) responseHeaders.append(key, v);
    }
    const empty = answer.status === 204 || answer.status === 304 || answer.body === '';
    return new Response(empty ? null : answer.body, { status: answer.status, headers: responseHeaders });
  };
}

function timeoutError(policy: OutboundPolicy): OutboundError {
  return new OutboundError('TIMEOUT', `No complete answer within ${policy.timeoutMs} ms`, true);
}
