// GET /api/openapi.json: the service's REST interface as OpenAPI 3.1, for
// agents and their tools, assembled from the routes' contracts
// (lib/contracts/): each route's request schemas (the ones it validates with)
// and answers are declared once, there. Built once per instance. A test checks
// that every api/ file's methods are in it and that the running service's
// answers validate.
import { ROUTE_CONTRACTS } from '../lib/contracts/index.js';
import { openApiDocument } from '../lib/http/openapi.js';
import { route } from '../lib/http/route.js';

let document: string | undefined;

export default route({
  GET() {
    document ??= JSON.stringify(
      openApiDocument(
        {
          title: 'L402 paywall service',
          version: '1',
          description:
            'Pay-per-request HTTP APIs on the Bitcoin Lightning Network: invoices, token verification, a directory of paid APIs for agents (GET /api/apis.json), Pro, managed mode, a live demo. ' +
            'Errors are {error, code} with a 4xx or 503 (Retry-After on 429 and 503). Paid routes answer 402 with an L402 challenge and a Payment challenge for the same invoice (see the L402 and Payment security schemes).',
        },
        ROUTE_CONTRACTS,
      ),
    );
    return new Response(document, { headers: { 'Content-Type': 'application/json', 'Cache-Control': 'public, max-age=300' } });
  },
});
