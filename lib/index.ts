// The public surface (README "The library"); everything else is internal.
export * from './l402/index.js';
// managed mode: withL402 also takes `managed: {lightningAddress, serviceUrl}` (and `register`); this export wins over the core one.
export { withL402, managedInvoiceProvider, ManagedServiceError } from './client/managed.js';
export type { ManagedMode, ManagedL402Options, DirectoryRegistration } from './client/managed.js';
export { l402Middleware } from './l402/adapters/node.js';
export { kvReplayStore } from './store/replay.js';
export { createMemoryStore } from './store/memory.js';
export { createUpstashStore } from './store/upstash.js';
export type { KeyValueStore } from './store/types.js';
export { decodeInvoice, InvalidInvoice } from './lightning/bolt11.js';
export type { DecodedInvoice } from './lightning/bolt11.js';
export type { LightningProvider } from './lightning/provider.js';
