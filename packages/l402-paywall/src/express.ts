// `l402-paywall/express`: the paywall as Express/Connect middleware.
export { l402Middleware } from './l402/adapters/node.js';
