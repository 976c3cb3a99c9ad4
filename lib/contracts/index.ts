// Every route's contract (lib/contracts/<route>.ts, imported by the route for its request schemas), in
// the order /api/openapi.json lists them. tests/integration/openapi.test.ts checks that every api/ file is described.
import type { RouteContract } from '../http/openapi.js';
import { contract as demo } from './demo.js';
import { contract as demoBtcPrice } from './demo/btc-price.js';
import { contract as demoPreimage } from './demo/preimage.js';
import { contract as demoStream } from './demo/stream.js';
import { contract as mcp } from './mcp.js';
import { contract as devPay } from './dev/pay.js';
import { contract as devReceive, statusContract as devReceiveStatus } from './dev/receive.js';
import { contract as devInbox } from './dev/inbox.js';
import { contract as devLogin } from './dev/login.js';
import { contract as invoice } from './invoice.js';
import { contract as verify } from './verify.js';
import { contract as apisJson } from './apis.json.js';
import { contract as register } from './register.js';
import { contract as devToken } from './dev-token.js';
import { contract as proCheck } from './pro-check.js';
import { contract as providerWebhook } from './provider-webhook.js';
import { contract as split } from './split.js';
import { contract as cronPayouts } from './cron/payouts.js';
import { contract as cronFlushPayments } from './cron/flush-payments.js';
import { contract as health } from './health.js';
import { contract as lnurlAuth } from './lnurl-auth.js';
import { contract as login, firstPathContract as loginFirstPath } from './login.js';
import { contract as links } from './links.js';
import { contract as stats } from './stats.js';
import { contract as deleteData } from './delete-data.js';
import { contract as lnurlp } from './lnurlp.js';
import { contract as openapiJson } from './openapi.json.js';

export const ROUTE_CONTRACTS: readonly RouteContract[] = [
  demo,
  demoBtcPrice,
  demoPreimage,
  demoStream,
  mcp,
  devPay,
  devReceive,
  devReceiveStatus,
  devInbox,
  devLogin,
  invoice,
  verify,
  apisJson,
  register,
  devToken,
  proCheck,
  providerWebhook,
  split,
  cronPayouts,
  cronFlushPayments,
  health,
  lnurlAuth,
  login,
  loginFirstPath,
  links,
  stats,
  deleteData,
  lnurlp,
  openapiJson,
];
