// Forwarding one request to the upstream and its answer back, as reverse
// proxies do (RFC 9110 section 7.6): the method, path, query, headers and
// body go through, but the hop-by-hop headers (those of one connection) and,
// on a paid route, the payment credential; X-Forwarded-For, -Host and -Proto
// say who asked and where; the body is streamed both ways. The answer comes
// back as the upstream gave it, its Location and cookies rewritten from the
// upstream's address to the proxy's. An upstream that cannot be reached is a
// 502, one that does not answer in time a 504: both are 5xx, so the paywall
// gives the payment's use back, as for a handler that fails.

/** Headers of one connection, never forwarded (RFC 9110 section 7.6.1), and those fetch sets itself. */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

/** The codings fetch decodes by itself: an answer in them arrives decoded, so it must not be labelled encoded. */
const DECODED_BY_FETCH = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

export interface ForwardOptions {
  /** The upstream's base URL: the request's path is appended to its path. */
  upstream: URL;
  /** How long the upstream has to answer with its status and headers, in ms. */
  timeoutMs: number;
  /** Drops the Authorization header (it carried the payment credential). */
  dropCredential: boolean;
  /** The address of the client that asked, for X-Forwarded-For. */
  clientAddress?: string | undefined;
  fetch?: typeof fetch;
}

/** The upstream's URL for a request to the proxy: its base path, then the request's path and query. */
export function upstreamUrl(upstream: URL, requestUrl: URL): URL {
  const base = upstream.pathname.endsWith('/') ? upstream.pathname.slice(0, -1) : upstream.pathname;
  const target = new URL(upstream.href);
  target.pathname = `${base}${requestUrl.pathname}`;
  target.search = requestUrl.search;
  return target;
}

/** The headers sent upstream: the client's, less the hop-by-hop ones (and the credential), with X-Forwarded-* set. */
export function forwardedHeaders(request: Request, requestUrl: URL, options: ForwardOptions): Headers {
  const headers = new Headers(request.headers);
  for (const name of connectionScoped(request.headers)) headers.delete(name);
  if (options.dropCredential) headers.delete('authorization');
  // Only the codings fetch decodes: an answer in any other would arrive encoded and be passed on mislabelled.
  const accepted = acceptedCodings(request.headers.get('accept-encoding'));
  if (accepted === undefined) headers.delete('accept-encoding');
  else headers.set('accept-encoding', accepted);
  if (options.clientAddress) {
    const earlier = request.headers.get('x-forwarded-for');
    headers.set('x-forwarded-for', earlier ? `${earlier}, ${options.clientAddress}` : options.clientAddress);
  }
  const host = request.headers.get('host') ?? requestUrl.host;
  headers.set('x-forwarded-host', host);
  headers.set('x-forwarded-proto', requestUrl.protocol.slice(0, -1));
  return headers;
}

/** Forwards `request` and answers the upstream's answer, or a 502/504 of our own. Never throws. */
export async function forward(request: Request, options: ForwardOptions): Promise<Response> {
  const requestUrl = new URL(request.url);
  const target = upstreamUrl(options.upstream, requestUrl);
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), options.timeoutMs);
  // The client hanging up stops the upstream's work too.
  const signal = AbortSignal.any([deadline.signal, request.signal]);
  const hasBody = request.body !== null && request.method !== 'GET' && request.method !== 'HEAD';
  let answer: Response;
  try {
    answer = await (options.fetch ?? fetch)(target, {
      method: request.method,
      headers: forwardedHeaders(request, requestUrl, options),
      body: hasBody ? request.body : null,
      redirect: 'manual',
      signal,
      ...(hasBody && { duplex: 'half' }),
    } as RequestInit);
  } catch (error) {
    if (deadline.signal.aborted) return upstreamFailure(504, 'UPSTREAM_TIMEOUT', `The upstream did not answer within ${options.timeoutMs / 1000} s`);
    if (request.signal.aborted) return upstreamFailure(502, 'CLIENT_GONE', 'The client hung up before the upstream answered');
    return upstreamFailure(502, 'UPSTREAM_UNAVAILABLE', `The upstream could not be reached: ${describe(error)}`);
  } finally {
    clearTimeout(timer);
  }
  return new Response(nullBodyStatus(answer.status) || request.method === 'HEAD' ? null : answer.body, {
    status: answer.status,
    statusText: answer.statusText,
    headers: answeredHeaders(answer, options.upstream, requestUrl),
  });
}

/** The upstream's headers for the client: less the hop-by-hop ones and a coding fetch has decoded, Location and cookies rewritten. */
export function answeredHeaders(answer: Response, upstream: URL, requestUrl: URL): Headers {
  const headers = new Headers();
  const dropped = new Set(connectionScoped(answer.headers));
  const codings = (answer.headers.get('content-encoding') ?? '')
    .split(',')
    .map((coding) => coding.trim().toLowerCase())
    .filter(Boolean);
  const decoded = codings.length > 0 && codings.every((coding) => DECODED_BY_FETCH.has(coding));
  if (decoded) dropped.add('content-encoding').add('content-length');
  for (const [name, value] of answer.headers) {
    if (dropped.has(name) || name === 'set-cookie') continue;
    headers.append(name, name === 'location' ? rewriteLocation(value, upstream, requestUrl) : value);
  }
  for (const cookie of answer.headers.getSetCookie()) headers.append('set-cookie', rewriteCookie(cookie, upstream));
  return headers;
}

/**
 * A Location on the upstream's origin and under its base path, as the client
 * must ask the proxy for it; any other (relative, or another site) unchanged.
 */
export function rewriteLocation(location: string, upstream: URL, requestUrl: URL): string {
  if (!/^[a-z][a-z0-9+.-]*:|^\/\//i.test(location)) return location;
  let target: URL;
  try {
    target = new URL(location);
  } catch {
    return location;
  }
  if (target.origin !== upstream.origin) return location;
  const base = upstream.pathname.endsWith('/') ? upstream.pathname.slice(0, -1) : upstream.pathname;
  if (base && target.pathname !== base && !target.pathname.startsWith(`${base}/`)) return location;
  const path = target.pathname.slice(base.length) || '/';
  return `${requestUrl.origin}${path}${target.search}${target.hash}`;
}

/** A Set-Cookie for the proxy's host: a Domain naming the upstream's host dropped, a Path under its base path taken off it. */
export function rewriteCookie(cookie: string, upstream: URL): string {
  const base = upstream.pathname.endsWith('/') ? upstream.pathname.slice(0, -1) : upstream.pathname;
  const [pair, ...attributes] = cookie.split(';');
  const kept: string[] = [];
  for (const attribute of attributes) {
    const [rawName, ...rest] = attribute.split('=');
    const name = rawName!.trim().toLowerCase();
    const value = rest.join('=').trim();
    if (name === 'domain' && value.replace(/^\./, '').toLowerCase() === upstream.hostname.toLowerCase()) continue;
    if (name === 'path' && base && (value === base || value.startsWith(`${base}/`))) {
      kept.push(` Path=${value.slice(base.length) || '/'}`);
      continue;
    }
    kept.push(attribute);
  }
  return [pair, ...kept].join(';');
}

/** The hop-by-hop headers of a message: the fixed ones and those its Connection header names. */
function connectionScoped(headers: Headers): string[] {
  const named = (headers.get('connection') ?? '')
    .split(',')
    .map((name) => name.trim().toLowerCase())
    .filter(Boolean);
  return [...HOP_BY_HOP, ...named];
}

/** The client's Accept-Encoding reduced to the codings fetch decodes; undefined when none is left. */
function acceptedCodings(value: string | null): string | undefined {
  if (value === null) return undefined;
  const kept = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => DECODED_BY_FETCH.has(item.split(';')[0]!.trim().toLowerCase()));
  return kept.length > 0 ? kept.join(', ') : undefined;
}

function nullBodyStatus(status: number): boolean {
  return status === 101 || status === 204 || status === 205 || status === 304;
}

/** The reason a fetch failed, without the URL's query or credentials: undici puts the cause's code in `cause`. */
function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })?.cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  return error instanceof Error ? error.message : 'unknown error';
}

/** The proxy's own JSON answer for an upstream that failed. */
export function upstreamFailure(status: 502 | 504, code: string, message: string): Response {
  return Response.json({ error: message, code }, { status, headers: { 'Cache-Control': 'no-store' } });
}
