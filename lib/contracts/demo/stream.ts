// GET /api/demo/stream (api/demo/stream.ts): what it takes and what it answers, declared once. The route
// validates its query with this schema (before any unit is spent); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { NO_CACHE } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const MAX_STREAM_CHUNKS = 200;

export const StreamQuery = z.object({
  chunks: z.coerce
    .number({ error: `chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}` })
    .int(`chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}`)
    .min(1, `chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}`)
    .max(MAX_STREAM_CHUNKS, `chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}`)
    .default(30),
});

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
