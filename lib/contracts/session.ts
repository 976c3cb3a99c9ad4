// GET, DELETE /api/session (api/session.ts): what it takes and what it answers, declared once. The route
// reads ?all itself (any other value: this session only); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { isoTime, loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/session', {
  GET: {
    summary: 'The current dashboard session',
    tags: ['dashboard'],
    security: ['session'],
    responses: {
      200: { description: 'Session', schema: loose({ pubkey: z.string(), admin: z.boolean(), addresses: z.array(z.string()), expiresAt: isoTime }) },
    },
  },
  DELETE: {
    summary: 'Log out (?all=1: every session of the key)',
    tags: ['dashboard'],
    security: ['session'],
    query: z.object({ all: z.enum(['1', 'true', '0', 'false']).optional() }),
    responses: { 200: { description: 'Revoked', schema: loose({ revoked: z.number().int() }) } },
  },
});
