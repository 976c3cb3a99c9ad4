// GET /api/demo (api/demo/index.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/demo', {
  GET: {
    summary: 'How the demo works',
    tags: ['demo'],
    responses: {
      200: {
        description: 'The demo endpoints and the steps to pay',
        schema: loose({
          description: z.string(),
          endpoints: z.array(loose({ method: z.string(), path: z.string(), priceSats: z.number() })),
          steps: z.array(z.string()),
        }),
      },
    },
  },
});
