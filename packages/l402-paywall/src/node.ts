/// <reference types="node" />
// `l402-paywall/node`: what only Node can do. Today one thing: a fetch that
// trusts a private certificate authority, for a backend with a self-signed
// certificate (lnd's tls.cert), which Web fetch cannot be told to trust.
import { Agent, request } from 'node:https';
import { Readable } from 'node:stream';

type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/**
 * A fetch for https URLs that trusts `certificate` (PEM, or base64 of the PEM
 * file as lnd's tls.cert is often stored in an environment variable) besides
 * nothing else. Pass it as a backend's `fetch` option.
 */
export function fetchTrustingCa(certificate: string): Fetch {
  const agent = new Agent({ ca: pem(certificate), keepAlive: true });
  return (input, init = {}) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      if (url.protocol !== 'https:') return reject(new TypeError(`fetchTrustingCa only fetches https URLs, not ${url.protocol}`));
      if (init.body != null && typeof init.body !== 'string') return reject(new TypeError('fetchTrustingCa sends string bodies only'));
      const headers = Object.fromEntries(new Headers(init.headers).entries());
      const outgoing = request(url, { method: init.method ?? 'GET', headers, agent, ...(init.signal ? { signal: init.signal } : {}) }, (incoming) => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          if (value === undefined) continue;
          for (const one of Array.isArray(value) ? value : [value]) answerHeaders.append(name, one);
        }
        const status = incoming.statusCode ?? 502;
        const noBody = status === 204 || status === 205 || status === 304 || init.method === 'HEAD';
        if (noBody) incoming.resume();
        resolve(new Response(noBody ? null : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>), { status, headers: answerHeaders }));
      });
      // The same shape as fetch's own failures: a TypeError whose cause carries the code (ECONNREFUSED, a certificate error).
      outgoing.on('error', (error) => reject(init.signal?.aborted ? init.signal.reason : new TypeError('fetch failed', { cause: error })));
      outgoing.end(init.body ?? undefined);
    });
}

/** PEM text as given, with escaped newlines undone, or decoded from base64. */
function pem(certificate: string): string {
  const text = certificate.replace(/\\n/g, '\n').trim();
  if (text.startsWith('-----BEGIN')) return text + '\n';
  return Buffer.from(text, 'base64').toString('utf8');
}
