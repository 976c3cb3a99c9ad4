import { json } from '../lib/http/errors.js';
import { clientIp } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { collectErasure, createChallenge } from '../lib/service/accounts/lnurl-auth.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

// Right to erasure, proved by an LNURL-auth signature (the wallet calls back GET /api/lnurl-auth):
//   POST /api/delete-data                  -> 200 {k1, lnurl, expiresAt, pollToken, qr} (LUD-04 action "auth"); 429
//   GET  /api/delete-data?k1&pollToken     -> 202 {status: "pending", expiresAt}
//                                             200 {status: "ok", deleted: {payments, links, sessions}} (once)
//                                             401 POLL_TOKEN_INVALID, 404 CHALLENGE_NOT_FOUND, 410 ALREADY_COLLECTED
export default serviceRoute({
  async POST(request, deployment) {
    return json(await createChallenge(deployment.context(), request.url, clientIp(request), 'erase'), { headers: NO_STORE });
  },
  async GET(request, deployment) {
    const result = await collectErasure(deployment.context(), Object.fromEntries(new URL(request.url).searchParams));
    return json(result, { status: result.status === 'pending' ? 202 : 200, headers: NO_STORE });
  },
});
