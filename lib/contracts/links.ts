// GET, POST, DELETE /api/links (api/links.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { lightningAddressSchema } from 'l402-paywall/lightning';
import { loose } from './common.js';
import { routeContract } from '../http/openapi.js';

// Loopback addresses (name@127.0.0.1:3000) only outside production, as the payer allows.
const bodySchemas = (allowLoopback: boolean) => {
  const address = z
    .string({
      error: (issue) => (issue.input === undefined ? 'address is required (a Lightning Address like name@example.com)' : 'address must be a Lightning Address'),
    })
    .pipe(lightningAddressSchema({ allowLoopback }));
  return {
    link: z.strictObject({
      address,
      code: z.string({ error: 'code must be the code from the 1-sat payment comment' }).trim().min(1, 'code must not be empty').max(32).optional(),
    }),
    unlink: z.strictObject({ address }),
  };
};
export const schemas = { production: bodySchemas(false), development: bodySchemas(true) };

export const contract = routeContract('/api/links', {
  GET: {
    summary: 'Lightning Addresses linked to the session',
    tags: ['dashboard'],
    security: ['login'],
    responses: { 200: { description: 'Addresses', schema: loose({ addresses: z.array(z.string()) }) } },
  },
  POST: {
    summary: 'Link a Lightning Address (a 1-sat code, then the code)',
    tags: ['dashboard'],
    security: ['login'],
    body: schemas.production.link,
    responses: { 200: { description: 'Code sent, or linked', schema: loose({ address: z.string(), status: z.enum(['code-sent', 'linked']) }) } },
  },
  DELETE: {
    summary: 'Unlink a Lightning Address',
    tags: ['dashboard'],
    security: ['login'],
    body: schemas.production.unlink,
    responses: { 200: { description: 'Removed', schema: loose({ address: z.string(), removed: z.boolean() }) } },
  },
});
