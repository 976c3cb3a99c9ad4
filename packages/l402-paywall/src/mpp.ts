// `l402-paywall/mpp`: the "Payment" HTTP authentication scheme's wire (the
// Machine Payments Protocol): its challenges, credentials and receipts, the
// Lightning charge and session intents' codecs and their binding keyring, for
// a client or a page that speaks the scheme without the paywall. Edge-safe:
// Web APIs, @noble and zod.
export * from './mpp/index.js';
