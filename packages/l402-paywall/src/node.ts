/// <reference types="node" />
// `l402-paywall/node`: what only Node can do. A fetch that trusts a private
// certificate authority, for a backend with a self-signed certificate (lnd's
// tls.cert), which Web fetch cannot be told to trust; and fetchWithL402's
// destination policy with host names resolved and connections pinned to the
// addresses judged, which needs DNS and control of the socket.
export { fetchTrustingCa } from './http/node-trust.js';
export { nodeDestinations } from './client/node-destinations.js';
