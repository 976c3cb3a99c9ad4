// The dashboard login's route (Authorization: Bearer <token> from the LNURL-auth login),
// answered at two paths by one set of handlers: /api/login (api/login.ts) and its first
// path /api/session (api/session.ts), kept for the scripts and clients told to read it.
//   GET    -> 200 {pubkey, admin, addresses, expiresAt}
//   DELETE [?all=1] -> 200 {revoked: n}: logs out this login, or every login of the key
//   401 SESSION_REQUIRED | SESSION_INVALID | SESSION_EXPIRED | SESSION_REVOKED (the codes' first names, kept for clients)
import { json } from '../../http/errors.js';
import type { Handler } from '../../http/route.js';
import type { Deployment } from '../deployment.js';
import { linkedAddresses, logOut, readLogin } from './auth.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

export const loginRouteMethods: { GET: Handler<Deployment>; DELETE: Handler<Deployment> } = {
  async GET(request, deployment) {
    const ctx = deployment.context();
    const { login, expiresAt } = await readLogin(ctx, request);
    const addresses = await linkedAddresses(await ctx.database(), login.pubkey);
    return json({ ...login, addresses, expiresAt }, { headers: NO_STORE });
  },
  async DELETE(request, deployment) {
    const all = new URL(request.url).searchParams.get('all');
    const everywhere = all === '1' || all === 'true';
    return json({ revoked: await logOut(deployment.context(), request, everywhere) }, { headers: NO_STORE });
  },
};
