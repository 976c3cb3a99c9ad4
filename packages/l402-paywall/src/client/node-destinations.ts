/// <reference types="node" />
// fetchWithL402's destination policy on Node: host names resolved by the
// system resolver and connections pinned to the addresses judged.
import { lookup } from 'node:dns/promises';
import { pinnedLookup, nodeFetch } from '../http/node-fetch.js';
import type { DestinationPolicy } from './destinations.js';

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
