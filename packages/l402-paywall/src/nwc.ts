// `l402-paywall/nwc`: Nostr Wallet Connect (NIP-47) as a Lightning backend,
// through @getalby/sdk (an optional peer dependency: install it to use this entry).
export { createNwcProvider, parseNwcUrl } from './lightning/providers/nwc.js';
export type { NwcConnection } from './lightning/providers/nwc.js';
// The same connection as a wallet that pays for fetchWithL402 (l402-paywall/client).
export { nwcWallet } from './client/nwc-wallet.js';
export type { NwcWalletOptions } from './client/nwc-wallet.js';
