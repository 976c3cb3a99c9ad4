// GET /api/openapi.json (api/openapi.json.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/openapi.json', {
  GET: {
    summary: 'This document',
    tags: ['operations'],
    responses: { 200: { description: 'OpenAPI 3.1', schema: loose({ openapi: z.string(), paths: z.record(z.string(), z.unknown()) }) } },
  },
});
