/// <reference types="node" />
// A fetch over node:http and node:https, for what Web fetch cannot be told:
// which certificate authority to trust (lnd's self-signed tls.cert), and which
// addresses to connect to (those a destination policy judged). Node only:
// reached from l402-paywall/node and the command line, never from an
// edge-safe entry. No redirects are followed (the destination policy follows
// them itself) and nothing is decompressed (no Accept-Encoding is added).
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest, type Agent } from 'node:https';
import type { LookupFunction } from 'node:net';
import { Readable } from 'node:stream';
import type { Fetch } from './fetch-type.js';

export interface NodeFetchOptions {
  /** The agent for https requests (a private CA, keep-alive); default none: a connection of its own per request. */
  httpsAgent?: Agent;
  /** Refuse plain http (a backend whose certificate we pin has no business with it). */
  httpsOnly?: boolean;
  /** Where the connection's host name leads, instead of DNS. */
  lookup?: LookupFunction;
  /** Who refuses an unsupported URL, in its error message. */
  name?: string;
}

const REASON_PHRASE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * A fetch whose answer streams its body; the signal (of `init` or of the
 * Request) aborts the request and the body alike, with the signal's reason.
 * Failures to connect are TypeErrors whose cause carries the code, as fetch's.
 */
export function nodeFetch(options: NodeFetchOptions = {}): Fetch {
  return async (input, init = {}) => {
    const request = input instanceof Request ? input : undefined;
    const url = new URL(request?.url ?? String(input));
    if (url.protocol !== 'https:' && (options.httpsOnly || url.protocol !== 'http:')) {
      throw new TypeError(`${options.name ?? 'fetch'} only fetches ${options.httpsOnly ? 'https' : 'http and https'} URLs, not ${url.protocol}`);
    }
    const method = init.method ?? request?.method ?? 'GET';
    // What fetch would send when the caller says nothing (some servers refuse a request without a User-Agent).
    const headers = { accept: '*/*', 'user-agent': 'l402-paywall', ...Object.fromEntries(new Headers(init.headers ?? request?.headers).entries()) };
    const body =
      init.body != null ? new Uint8Array(await new Response(init.body).arrayBuffer()) : request?.body ? new Uint8Array(await request.arrayBuffer()) : undefined;
    const signal = init.signal ?? request?.signal;
    signal?.throwIfAborted();
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;

    return new Promise<Response>((resolve, reject) => {
      let answer: IncomingMessage | undefined;
      // Not node:http's own signal option: it would end the body with its AbortError instead of the signal's reason.
      const abort = () => {
        answer?.destroy(signal!.reason);
        outgoing.destroy(signal!.reason);
      };
      const done = () => signal?.removeEventListener('abort', abort);
      const agent = url.protocol === 'https:' && options.httpsAgent ? options.httpsAgent : false;
      const outgoing = send(url, { method, headers, agent, ...(options.lookup && { lookup: options.lookup }) }, (incoming) => {
        const status = incoming.statusCode ?? 0;
        if (status < 200 || status > 599) {
          incoming.destroy();
          return reject(new TypeError('fetch failed', { cause: new Error(`${url.host} answered status ${status}`) }));
        }
        answer = incoming;
        incoming.once('close', done);
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          if (value === undefined) continue;
          for (const one of Array.isArray(value) ? value : [value]) {
            try {
              answerHeaders.append(name, one);
            } catch {
              // a value Headers refuses is left out
            }
          }
        }
        const noBody = status === 204 || status === 205 || status === 304 || method === 'HEAD';
        if (noBody) incoming.resume();
        const stream = noBody ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>);
        // A reason phrase Response would refuse is left out rather than thrown from inside node:http.
        const statusText = REASON_PHRASE.test(incoming.statusMessage ?? '') ? incoming.statusMessage : '';
        resolve(new Response(stream, { status, statusText, headers: answerHeaders }));
      });
      signal?.addEventListener('abort', abort, { once: true });
      // The same shape as fetch's own failures: a TypeError whose cause carries the code (ECONNREFUSED, a certificate error).
      outgoing.on('error', (error) => {
        if (!answer) done();
        reject(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error }));
      });
      outgoing.end(body);
    });
  };
}

/** A lookup that answers these addresses and never asks DNS: the connection goes where a check was made. */
export function pinnedLookup(addresses: readonly string[]): LookupFunction {
  const all = addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  return (_hostname, options, callback) => {
    const allowed = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
    if (allowed.length === 0) return callback(Object.assign(new Error('no judged address of that family'), { code: 'ENOTFOUND' }), '', 4);
    if (options.all) return (callback as unknown as (error: null, all: { address: string; family: number }[]) => void)(null, allowed);
    callback(null, allowed[0]!.address, allowed[0]!.family);
  };
}
