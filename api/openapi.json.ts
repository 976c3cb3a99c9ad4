// GET /api/openapi.json: the service's REST interface as OpenAPI 3.1, for
// agents and their tools, assembled from the routes' contracts
// (lib/contracts/): each route's request schemas (the ones it validates with)
// and answers are declared once, there; with MPP discovery's `x-payment-info`
// on each paid operation and `x-service-info` (lib/contracts/discovery.ts).
// Built once per service context. A test checks that every api/ file's
// methods are in it, that the running service's answers validate, and that
// each offer is what the operation's 402 asks.
import { serviceRoute } from '../lib/service/deployment.js';
import { serviceOpenApiDocument } from '../lib/contracts/discovery.js';

export default serviceRoute({
  GET: (_request, deployment) =>
    new Response(serviceOpenApiDocument(deployment), { headers: { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300' } }),
});
