// `l402-paywall`: the edge-safe core (Web APIs and @noble only).
export * from './l402/index.js';
