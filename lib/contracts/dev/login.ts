// POST /api/dev/login (api/dev/login.ts): what it takes and what it answers, declared once. The route
// validates its requests with these schemas; /api/openapi.json is assembled from the contracts (lib/contracts/index.ts).
import { z } from 'zod';
import { K1 } from '../../service/accounts/lnurl-auth.js';
import { loose } from '../common.js';
import { routeContract } from '../../http/openapi.js';

export const Body = z.strictObject({ k1: K1 });

export const contract = routeContract('/api/dev/login', {
  POST: {
    summary: 'Dev wallet: sign a dashboard login challenge',
    description:
      'Only with the embedded dev node outside production (404 otherwise). Signs the LNURL-auth login k1 with a development key, as a wallet would; the page then polls for its login token.',
    tags: ['demo'],
    body: Body,
    responses: {
      200: { description: 'Signed and accepted', schema: loose({ status: z.literal('OK'), pubkey: z.string() }) },
      400: { description: 'LOGIN_REFUSED (the callback refused it) or INVALID_REQUEST', schema: loose({ error: z.string(), code: z.string() }) },
    },
  },
});
