// GET /api/demo/btc-price (api/demo/btc-price.ts): what it answers, declared once (it takes no query or
// body); /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { isoTime, loose, NO_CACHE } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const contract = routeContract('/api/demo/btc-price', {
  GET: {
    summary: 'Live BTC price (paid)',
    description:
      'Costs DEMO_PRICE_SATS (1 by default), paid per request (L402 or a Payment charge) or from a prepaid session (a deposit of DEMO_SESSION_DEPOSIT_UNITS calls, 20 by default; docs/sessions.md). `source` names where the price came from (`simulated` offline).',
    tags: ['demo'],
    paid: true,
    session: true,
    responses: { 200: { description: 'The price', headers: NO_CACHE, schema: loose({ usd: z.number(), source: z.string(), fetchedAt: isoTime }) } },
  },
});
