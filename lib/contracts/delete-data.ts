// POST, GET /api/delete-data (api/delete-data.ts): what it takes and what it answers, declared once. The route
// reads its query with the same schema (lib/service/accounts/lnurl-auth.ts); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { PollQuery } from '../service/accounts/lnurl-auth.js';
import { loose, LnurlAuthChallenge, Pending } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/delete-data', {
  POST: {
    summary: 'Start erasing your data (LNURL-auth)',
    tags: ['dashboard'],
    responses: { 200: { description: 'An LNURL-auth challenge to sign', schema: LnurlAuthChallenge } },
  },
  GET: {
    summary: 'Collect the erasure once signed',
    tags: ['dashboard'],
    query: PollQuery,
    responses: {
      200: {
        description: 'Deleted',
        schema: loose({ status: z.literal('ok'), deleted: loose({ payments: z.number().int(), links: z.number().int(), sessions: z.number().int() }) }),
      },
      202: { description: 'Not signed yet', schema: Pending },
    },
  },
});
