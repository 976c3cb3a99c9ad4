import { json } from '../lib/http/errors.js';
import { linkedAddresses, readSession, revokeSession } from '../lib/service/accounts/auth.js';
import { serviceRoute } from '../lib/service/deployment.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

// The dashboard session (Authorization: Bearer <token> from the LNURL-auth login):
//   GET    /api/session         -> 200 {pubkey, admin, addresses, expiresAt}
//   DELETE /api/session[?all=1] -> 200 {revoked: n}: logs out this session, or every session of the key
//   401 SESSION_REQUIRED | SESSION_INVALID | SESSION_EXPIRED | SESSION_REVOKED
export default serviceRoute({
  async GET(request, deployment) {
    const ctx = deployment.context();
    const { session, expiresAt } = await readSession(ctx, request);
    const addresses = await linkedAddresses(await ctx.database(), session.pubkey);
    return json({ ...session, addresses, expiresAt }, { headers: NO_STORE });
  },
  async DELETE(request, deployment) {
    const all = new URL(request.url).searchParams.get('all');
    const everywhere = all === '1' || all === 'true';
    return json({ revoked: await revokeSession(deployment.context(), request, everywhere) }, { headers: NO_STORE });
  },
});
