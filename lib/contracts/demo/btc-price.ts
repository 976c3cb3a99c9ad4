// GET /api/demo/btc-price (api/demo/btc-price.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { isoTime, loose, NO_CACHE } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const contract = routeContract('/api/demo/btc-price', {
  GET: {
    summary: 'Live BTC price (paid)',
    description: 'Costs DEMO_PRICE_SATS (1 by default). `source` names where the price came from (`simulated` offline).',
    tags: ['demo'],
    paid: true,
    responses: { 200: { description: 'The price', headers: NO_CACHE, schema: loose({ usd: z.number(), source: z.string(), fetchedAt: isoTime }) } },
  },
});
