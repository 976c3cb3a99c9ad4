import { HttpError, json } from '../lib/http/errors.js';
import { clientIp } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { answerWallet, collectLogin, createChallenge } from '../lib/service/accounts/lnurl-auth.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

// One URL, three callers (LUD-04 puts the wallet's callback at the challenge URL):
//   GET /api/lnurl-auth                         -> 200 {k1, lnurl, expiresAt, pollToken, qr (SVG of lnurl)}; 429
//   GET ?k1&sig&key  (the wallet)               -> 200 {status: "OK"} | {status: "ERROR", reason}; 429/503 also carry status ERROR
//   GET ?k1&pollToken (the page that asked)     -> 202 {status: "pending", expiresAt}
//                                                  200 {status: "ok", token, pubkey, admin, expiresAt} (once)
//                                                  401 POLL_TOKEN_INVALID, 404 CHALLENGE_NOT_FOUND, 410 ALREADY_COLLECTED
export default serviceRoute({
  async GET(request, deployment) {
    const ctx = deployment.context();
    const query = Object.fromEntries(new URL(request.url).searchParams);
    if ('sig' in query || 'key' in query || ('k1' in query && !('pollToken' in query))) {
      try {
        return json(await answerWallet(ctx, query, clientIp(request)), { headers: NO_STORE });
      } catch (error) {
        if (!(error instanceof HttpError)) throw error;
        // Wallets read only LUD-04's {status, reason}; people and logs read {error, code}.
        return json(
          { status: 'ERROR', reason: error.message, error: error.message, code: error.code, ...error.extra },
          { status: error.status, headers: { ...error.headers, ...NO_STORE } },
        );
      }
    }
    if ('pollToken' in query) {
      const result = await collectLogin(ctx, query);
      return json(result, { status: result.status === 'pending' ? 202 : 200, headers: NO_STORE });
    }
    return json(await createChallenge(ctx, request.url, clientIp(request), 'login'), { headers: NO_STORE });
  },
});
