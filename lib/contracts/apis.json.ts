// GET /api/apis.json (api/apis.json.ts): what it takes and what it answers, declared once. The route
// validates its query with the same schema (lib/service/directory/entry.ts); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { ApisQuery } from '../service/directory/entry.js';
import { isoTime, loose, CATEGORY } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/apis.json', {
  GET: {
    summary: 'Directory of paid APIs',
    tags: ['directory'],
    query: ApisQuery,
    responses: {
      200: {
        description: 'Newest first; cached up to 60 s',
        schema: loose({
          version: z.literal('1'),
          count: z.number().int().nonnegative(),
          apis: z.array(
            loose({
              url: z.string(),
              name: z.string(),
              description: z.string().nullable(),
              price_sats: z.number().int().positive(),
              category: CATEGORY.nullable(),
              created_at: isoTime,
              demo: z.literal(true).optional().describe("only on the service's own demo"),
            }),
          ),
        }),
      },
    },
  },
});
