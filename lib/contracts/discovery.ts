// The service's OpenAPI document (GET /api/openapi.json) as MPP discovery
// reads it: the routes' contracts (lib/contracts/), each paid operation's
// `x-payment-info` offers as its 402 asks them under this deployment's
// configuration (the demo's price, whether its backend can sell sessions),
// and `x-service-info` naming the documentation for agents (/llms.txt).
import { ROUTE_CONTRACTS } from './index.js';
import { openApiDocument, type PaymentOffer } from '../http/openapi.js';
import { servicePart } from '../service/context.js';
import { demoPaymentOffers } from '../service/demo.js';
import type { Deployment } from '../service/deployment.js';

const INFO = {
  title: 'L402 paywall service',
  version: '1',
  description:
    'Pay-per-request HTTP APIs on the Bitcoin Lightning Network: invoices, token verification, a directory of paid APIs for agents (GET /api/apis.json), Pro, managed mode, a live demo. ' +
    'Errors are {error, code} with a 4xx or 503 (Retry-After on 429 and 503). Paid routes answer 402 with an L402 challenge and a Payment challenge for the same invoice (see the L402 and Payment security schemes); ' +
    'a client that sends Accept-Payment (e.g. `lightning/*`) gets the Payment challenges it takes first. Each paid operation lists its offers in `x-payment-info`.',
};

const SERVICE_INFO = {
  categories: ['lightning', 'payments', 'demo'],
  docs: { llms: '/llms.txt', apiReference: '/api/openapi.json', homepage: '/' },
};

const document = (offers?: Record<string, readonly PaymentOffer[]>) =>
  JSON.stringify(openApiDocument(INFO, ROUTE_CONTRACTS, { offers, serviceInfo: SERVICE_INFO }));

/** Built once per service context: the offers follow its configuration. */
const withOffers = servicePart('openapi document', (ctx) => document(demoPaymentOffers(ctx)));

/**
 * The document's text for this deployment. A deployment whose context cannot
 * be built (production settings missing, a malformed value) sells nothing
 * now: its document names no offers, and is still served.
 */
export function serviceOpenApiDocument(deployment: Deployment): string {
  let ctx: ReturnType<Deployment['context']>;
  try {
    ctx = deployment.context();
  } catch {
    return document();
  }
  return ctx.part(withOffers);
}
