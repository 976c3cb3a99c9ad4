// GET /api/demo/stream (api/demo/stream.ts): what it takes and what it answers, declared once. The route
// validates its query with the service's schema (before any unit is spent); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { NO_CACHE } from '../common.js';
import { routeContract } from '../../http/openapi.js';
import { StreamQuery } from '../../service/demo-stream-query.js';

export const contract = routeContract('/api/demo/stream', {
  GET: {
    summary: 'Metered stream (prepaid session)',
    description:
      'Server-Sent Events, one chunk per DEMO_PRICE_SATS (1 by default) spent from a prepaid session: sold by the session only. When the balance runs out the stream sends `payment-need-topup` and holds up to 30 s for a top-up (`session-timeout` without one; one held stream per session, another that runs dry meanwhile ends at once with `session-timeout`); it ends with `payment-receipt` and `data: [DONE]` (docs/sessions.md).',
    tags: ['demo'],
    session: true,
    query: StreamQuery,
    responses: {
      200: {
        description: 'The stream: `data: {"chunk","of","word"}` events',
        headers: NO_CACHE,
        contentType: 'text/event-stream',
        schema: z.string(),
      },
    },
  },
});
