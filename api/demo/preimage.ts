import { z } from 'zod';
import { readQuery } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { demoPreimage } from '../../lib/service/demo.js';

export const Query = z.object({
  hash: z
    .string({ error: 'hash is required (the payment hash, 64 hex characters)' })
    .trim()
    .toLowerCase()
    .regex(/^[0-9a-f]{64}$/, 'hash must be 64 hex characters'),
});

export default serviceRoute({
  GET: (request, deployment) => demoPreimage(deployment.context(), readQuery(request, Query).hash),
});
