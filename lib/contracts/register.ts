// POST /api/register (api/register.ts): what it takes and what it answers, declared once. The route
// validates its body with the same schema (lib/service/directory/entry.ts); /api/openapi.json is assembled from the contracts.
import { z } from 'zod';
import { Registration } from '../service/directory/entry.js';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

export const contract = routeContract('/api/register', {
  POST: {
    summary: 'Add or update a directory entry',
    tags: ['directory'],
    body: Registration,
    responses: { 200: { description: 'Registered', schema: loose({ ok: z.literal(true), id: z.string() }) } },
  },
});
