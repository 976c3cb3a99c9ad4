/// <reference types="node" />
// `l402-paywall/node`: what only Node can do. A fetch that trusts a private
// certificate authority, for a backend with a self-signed certificate (lnd's
// tls.cert), which Web fetch cannot be told to trust; and fetchWithL402's
// destination policy with host names resolved and connections pinned to the
// addresses judged, which needs DNS and control of the socket.
import { lookup } from 'node:dns/promises';
import { Agent } from 'node:https';
import type { DestinationPolicy } from './client/destinations.js';
import type { Fetch } from './http/fetch-type.js';
import { nodeFetch, pinnedLookup } from './http/node-fetch.js';

/**
 * A fetch for https URLs that trusts `certificate` (PEM, or base64 of the PEM
 * file as lnd's tls.cert is often stored in an environment variable) besides
 * nothing else. Pass it as a backend's `fetch` option.
 */
export function fetchTrustingCa(certificate: string): Fetch {
  return nodeFetch({ httpsAgent: new Agent({ ca: pem(certificate), keepAlive: true }), httpsOnly: true, name: 'fetchTrustingCa' });
}

/**
 * fetchWithL402's `destinations` on Node, complete: every address a host name
 * resolves to (system resolver) is judged, and the request connects to those
 * addresses only, never to a second DNS answer (no rebinding in between).
 * `allowPrivate` and `allowRequestedPrivate` as in DestinationPolicy.
 */
export function nodeDestinations(policy: Pick<DestinationPolicy, 'allowPrivate' | 'allowRequestedPrivate'> = {}): DestinationPolicy {
  return {
    ...policy,
    resolve: async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map(({ address }) => address),
    connectTo: (addresses) => nodeFetch({ lookup: pinnedLookup(addresses) }),
  };
}

/** PEM text as given, with escaped newlines undone, or decoded from base64. */
function pem(certificate: string): string {
  const text = certificate.replace(/\\n/g, '\n').trim();
  if (text.startsWith('-----BEGIN')) return text + '\n';
  return Buffer.from(text, 'base64').toString('utf8');
}
