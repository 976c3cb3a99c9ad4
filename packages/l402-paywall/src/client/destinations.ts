// Where fetchWithL402 may send a request when it is given a destination
// policy (docs/security.md "Where clients connect"). An agent's URLs come from
// directories and from a model: neither may turn the agent into a proxy into
// its own network (this machine, the LAN, the cloud metadata service). Every
// hop is judged before it goes out, the redirects too, which are followed
// here rather than by the fetch so that each Location is seen. Edge-safe:
// names are resolved only by a resolver the caller injects (Node:
// l402-paywall/node's nodeDestinations).
import { classifyAddress, classifyHost, isIpLiteral, type AddressKind } from '../http/address-kind.js';
import { discardBody } from '../http/discard-body.js';
import { DestinationRefused } from './errors.js';
import type { Fetch } from '../http/fetch-type.js';

export interface DestinationPolicy {
  /**
   * Non-public destinations (loopback, private, link-local, CGNAT, reserved)
   * that may be reached: true for all of them, or a list of origins
   * (`http://127.0.0.1:3000`) for those alone. Default none.
   */
  allowPrivate?: boolean | readonly string[];
  /**
   * The URL a call asks for may be non-public (a person typed it), and so may
   * a redirect from a non-public host; a redirect from a public host into a
   * non-public one stays refused.
   */
  allowRequestedPrivate?: boolean;
  /**
   * The addresses a host name stands for now; every one must be allowed.
   * Without it a name is judged by its spelling (localhost, *.internal, ...)
   * and the fetch's own resolution decides where it connects.
   */
  resolve?: (hostname: string) => Promise<string[]>;
  /**
   * A fetch that connects to these addresses only, used for every request
   * once its host is judged: no second DNS answer (a rebinding) between the
   * check and the connection. Without it, the call's `fetch` is used.
   */
  connectTo?: (addresses: readonly string[]) => Fetch;
}

/** Redirects followed at most within one request, as browsers do. */
const MAX_REDIRECTS = 20;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
// Headers that describe a body, dropped with it when a redirect turns the request into a GET.
const BODY_HEADERS = ['content-type', 'content-length', 'content-encoding', 'content-language', 'content-location'];

/**
 * Sends `request` under `policy`: each hop's host judged first, redirects
 * followed here as fetch would (at most MAX_REDIRECTS; 301/302 after POST and
 * 303 become a GET without body; Authorization dropped when the origin
 * changes), unless the request's `redirect` is 'manual' or 'error'. Throws
 * DestinationRefused for a hop the policy does not allow. `signal` (default
 * the request's) is handed to every hop's fetch as it is.
 */
export async function fetchWithinPolicy(doFetch: Fetch, request: Request, policy: DestinationPolicy, signal = request.signal): Promise<Response> {
  const allowedOrigins = new Set(Array.isArray(policy.allowPrivate) ? policy.allowPrivate.map((origin) => new URL(origin).origin) : []);
  let current = request;
  // The request itself comes from the caller, who may reach their own network when allowRequestedPrivate says so.
  let fromNonPublic = true;
  for (let hop = 0; ; hop++) {
    const url = new URL(current.url);
    const privateAllowed = policy.allowPrivate === true || allowedOrigins.has(url.origin) || (policy.allowRequestedPrivate === true && fromNonPublic);
    const { kind, addresses } = await judge(url, policy, privateAllowed, hop > 0);
    const send = policy.connectTo && addresses ? policy.connectTo(addresses) : doFetch;
    const response = await send(new Request(current.clone(), { redirect: 'manual' }), { signal });
    if (response.type === 'opaqueredirect') {
      throw new TypeError(`${url.origin} answered a redirect this runtime does not let us read, so it cannot be checked against the destination policy`);
    }
    const location = response.headers.get('location');
    if (!REDIRECT_STATUSES.has(response.status) || location === null || current.redirect === 'manual') return response;
    discardBody(response.body);
    if (current.redirect === 'error') throw new TypeError(`${url.origin} answered a redirect, and the request's redirect mode is 'error'`);
    if (hop >= MAX_REDIRECTS) throw new TypeError(`More than ${MAX_REDIRECTS} redirects from ${request.url}`);
    current = await redirected(current, response.status, new URL(location, url));
    fromNonPublic = kind !== 'public';
  }
}

/** The hop's kind (the least public of its spelling and its addresses) and the addresses judged; throws when it may not be reached. */
async function judge(url: URL, policy: DestinationPolicy, privateAllowed: boolean, redirected: boolean): Promise<{ kind: AddressKind; addresses?: string[] }> {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`Only http and https URLs are fetched, not ${url.protocol}`);
  const host = url.hostname;
  const refuse = (kind: AddressKind) => {
    if (kind === 'public' || privateAllowed) return;
    const through = redirected ? 'a redirect to ' : '';
    throw new DestinationRefused(`Refused ${through}${url.origin}: ${host} is a ${kind} address, not a public one`, url.href, kind, redirected);
  };
  // The spelling first: a name such as metadata.google.internal is refused without asking DNS.
  const spelled = classifyHost(host);
  refuse(spelled);
  if (isIpLiteral(host)) return { kind: spelled, addresses: [host.replace(/^\[(.*)\]$/, '$1')] };
  if (!policy.resolve) return { kind: spelled };
  let addresses: string[];
  try {
    addresses = await policy.resolve(host);
  } catch (error) {
    // As fetch reports a name it cannot resolve.
    throw new TypeError('fetch failed', { cause: error });
  }
  if (addresses.length === 0) throw new TypeError('fetch failed', { cause: new Error(`${host} has no address`) });
  const kind = [spelled, ...addresses.map(classifyAddress)].find((k) => k !== 'public') ?? 'public';
  refuse(kind);
  return { kind, addresses };
}

/** The request a redirect asks for, as fetch makes it. */
async function redirected(current: Request, status: number, location: URL): Promise<Request> {
  const toGet = ((status === 301 || status === 302) && current.method === 'POST') || (status === 303 && current.method !== 'GET' && current.method !== 'HEAD');
  const method = toGet ? 'GET' : current.method;
  const headers = new Headers(current.headers);
  if (toGet) for (const name of BODY_HEADERS) headers.delete(name);
  // A credential for one origin is never handed to another.
  if (location.origin !== new URL(current.url).origin) headers.delete('authorization');
  const body = method === 'GET' || method === 'HEAD' ? undefined : await current.clone().arrayBuffer();
  return new Request(location, { method, headers, body, redirect: current.redirect });
}
