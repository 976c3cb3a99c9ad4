import { z } from 'zod';
import { json } from '../lib/http/errors.js';
import { readJson } from '../lib/http/input.js';
import { route } from '../lib/http/route.js';
import { serviceContext } from '../lib/service/context.js';
import { verifyTokenString } from '../lib/service/verify.js';

export const Body = z.object({
  token: z.string({ error: 'token is required: "<macaroon>:<preimage>"' }).min(1).max(8192),
  consume: z.boolean().default(false),
});

export default route({
  async POST(request) {
    const { token, consume } = await readJson(request, Body);
    return json(await verifyTokenString(serviceContext(), token, consume), { headers: { 'Cache-Control': 'no-store' } });
  },
});
