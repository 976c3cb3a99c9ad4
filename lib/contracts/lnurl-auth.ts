// GET /api/lnurl-auth (api/lnurl-auth.ts): what it takes and what it answers, declared once. The route
// reads its query with the same schemas (lib/service/accounts/lnurl-auth.ts); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { PollQuery, WalletQuery } from '../service/accounts/lnurl-auth.js';
import { loose, LnurlAuthChallenge, Pending } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/lnurl-auth', {
  GET: {
    summary: 'LNURL-auth login (LUD-04)',
    description: 'Three callers: no query gives a challenge; the wallet calls back with ?k1&sig&key; the page polls with ?k1&pollToken.',
    tags: ['dashboard'],
    query: z.object({ ...PollQuery.partial().shape, ...WalletQuery.partial().shape }),
    responses: {
      200: {
        description: "A challenge, the wallet's LUD-04 answer, or the login's token once logged in",
        schema: z.union([LnurlAuthChallenge, loose({ status: z.enum(['OK', 'ERROR', 'ok']) })]),
      },
      202: { description: 'Not signed yet', schema: Pending },
    },
  },
});
