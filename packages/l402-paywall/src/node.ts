/// <reference types="node" />
// `l402-paywall/node`: what only Node can do. A fetch that trusts a private
// certificate authority, for a backend with a self-signed certificate (lnd's
// tls.cert), which Web fetch cannot be told to trust; and fetchWithL402's
// destination policy with host names resolved and connections pinned to the
// addresses judged, which needs DNS and control of the socket; and listenProxy,
// the proxy's handler on a Node HTTP server.
export { fetchTrustingCa } from './http/node-trust.js';
export { nodeDestinations } from './client/node-destinations.js';
// The proxy's fetch handler (l402-paywall/proxy) on a Node HTTP server: what `l402-paywall proxy` runs.
export { listenProxy } from './proxy/node-server.js';
export type { ListenOptions, ProxyServer } from './proxy/node-server.js';
