// `l402-paywall/proxy`: sells an HTTP service you did not write, as a reverse
// proxy (docs/proxy.md). createProxy(config, services) is a fetch-style
// handler (a Vercel function, Bun, Deno, or `l402-paywall proxy` on Node);
// the configuration's schema is ProxyConfig (zod), published as JSON Schema
// in l402-paywall/proxy-config.schema.json. Edge-safe.
export { createProxy } from './proxy/handler.js';
export type { ProxyHandler, ProxyRequestContext, ProxyServices } from './proxy/handler.js';
export { PROXY_METERS, PROXY_METHODS, ProxyConfig, ProxyConfigError, ProxyRoute, parseProxyConfig, proxyConfigJsonSchema } from './proxy/config.js';
export type { ProxyConfigInput } from './proxy/config.js';
