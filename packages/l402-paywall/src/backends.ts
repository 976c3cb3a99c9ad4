// `l402-paywall/backends`: Lightning backends built from plain options, on
// fetch and Web Crypto, so they run wherever the core does. NWC has its own
// entry (`l402-paywall/nwc`) because it needs @getalby/sdk.
export { createLnbitsProvider } from './lightning/providers/lnbits.js';
export type { LnbitsOptions } from './lightning/providers/lnbits.js';
export { createPhoenixdProvider, PHOENIX_SIGNATURE_HEADER } from './lightning/providers/phoenixd.js';
export type { PhoenixdOptions } from './lightning/providers/phoenixd.js';
export { createLndProvider } from './lightning/providers/lnd.js';
export type { LndOptions } from './lightning/providers/lnd.js';
export { createClnProvider } from './lightning/providers/cln.js';
export type { ClnOptions } from './lightning/providers/cln.js';
export { createBlinkProvider } from './lightning/providers/blink.js';
export type { BlinkOptions } from './lightning/providers/blink.js';
export { createDevNode, memoryDevNodeStore, DevPaymentError, DEV_WEBHOOK_SIGNATURE_HEADER } from './lightning/providers/dev.js';
export type { DevNode, DevNodeOptions, DevNodeStore } from './lightning/providers/dev.js';
export { DevNodeInProduction } from './lightning/providers/dev-environment.js';
export { createDevPayHandler, createDevReceiveHandler, DevPayRequest, DevReceiveRequest } from './lightning/providers/dev-pay.js';
export type { DevPayHandlerOptions } from './lightning/providers/dev-pay.js';
export type { InvoiceSigner } from './lightning/bolt11.js';
