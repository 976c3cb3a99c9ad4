// What GET /api/demo/stream takes: the service validates its query with this schema
// (before any unit is spent), and its contract (lib/contracts/demo/stream.ts) declares it.
// Here, beside the demo, so the service imports nothing from the contracts: they describe it.
import { z } from 'zod';

export const MAX_STREAM_CHUNKS = 200;

export const StreamQuery = z.object({
  chunks: z.coerce
    .number({ error: `chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}` })
    .int(`chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}`)
    .min(1, `chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}`)
    .max(MAX_STREAM_CHUNKS, `chunks must be a whole number from 1 to ${MAX_STREAM_CHUNKS}`)
    .default(30),
});
