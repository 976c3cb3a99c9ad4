// GET, DELETE /api/login (api/login.ts), and the same at its first path /api/session
// (api/session.ts): what they take and what they answer, declared once. The route
// reads ?all itself (any other value: this login only); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { isoTime, loose } from './common.js';
import { routeContract, type PathSpec } from '../http/openapi.js';

function loginMethods(summary: (what: string) => string, deprecated: boolean): PathSpec {
  return {
    GET: {
      summary: summary('The current dashboard login'),
      tags: ['dashboard'],
      security: ['login'],
      ...(deprecated && { deprecated }),
      responses: {
        200: { description: 'Login', schema: loose({ pubkey: z.string(), admin: z.boolean(), addresses: z.array(z.string()), expiresAt: isoTime }) },
      },
    },
    DELETE: {
      summary: summary('Log out (?all=1: every login of the key)'),
      tags: ['dashboard'],
      security: ['login'],
      ...(deprecated && { deprecated }),
      query: z.object({ all: z.enum(['1', 'true', '0', 'false']).optional() }),
      responses: { 200: { description: 'Revoked', schema: loose({ revoked: z.number().int() }) } },
    },
  };
}

export const contract = routeContract(
  '/api/login',
  loginMethods((what) => what, false),
);

/** The first path, answered the same; operation ids stay distinct through their summaries. */
export const firstPathContract = routeContract(
  '/api/session',
  loginMethods((what) => `${what}, at its first path (use /api/login)`, true),
);
