// `l402-paywall/nwc`: Nostr Wallet Connect (NIP-47) as a Lightning backend,
// through @getalby/sdk (an optional peer dependency: install it to use this entry).
export { createNwcProvider, parseNwcUrl } from './lightning/providers/nwc.js';
export type { NwcConnection } from './lightning/providers/nwc.js';
