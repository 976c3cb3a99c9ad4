/// <reference types="node" />
// A fetch that trusts a private certificate authority (lnd's self-signed
// tls.cert), which Web fetch cannot be told to trust. Node only.
import { Agent } from 'node:https';
import type { Fetch } from './fetch-type.js';
import { nodeFetch } from './node-fetch.js';

/**
 * A fetch for https URLs that trusts `certificate` (PEM, or base64 of the PEM
 * file as lnd's tls.cert is often stored in an environment variable) besides
 * nothing else. Pass it as a backend's `fetch` option.
 */
export function fetchTrustingCa(certificate: string): Fetch {
  return nodeFetch({ httpsAgent: new Agent({ ca: pem(certificate), keepAlive: true }), httpsOnly: true, name: 'fetchTrustingCa' });
}

/** PEM text as given, with escaped newlines undone, or decoded from base64. */
function pem(certificate: string): string {
  const text = certificate.replace(/\\n/g, '\n').trim();
  if (text.startsWith('-----BEGIN')) return text + '\n';
  return Buffer.from(text, 'base64').toString('utf8');
}
