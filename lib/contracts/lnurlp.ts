// GET /api/lnurlp/{username} (api/lnurlp/[username].ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const Query = z.object({ username: z.string().optional(), amount: z.string().optional(), comment: z.string().optional() });

export const contract = routeContract('/api/lnurlp/{username}', {
  GET: {
    summary: "The service's Lightning Addresses (LUD-06/LUD-16)",
    description: 'Also at /.well-known/lnurlp/{username}. Errors are {status: "ERROR", reason, error, code}.',
    tags: ['managed'],
    pathParameters: { username: 'One of LNURLP_USERNAMES' },
    query: Query,
    responses: {
      200: {
        description: 'A payRequest, or with amount the callback {pr, routes}',
        schema: z.union([
          loose({ tag: z.literal('payRequest'), callback: z.string(), minSendable: z.number().int(), maxSendable: z.number().int(), metadata: z.string() }),
          loose({ pr: z.string(), routes: z.array(z.unknown()) }),
        ]),
      },
    },
  },
});
