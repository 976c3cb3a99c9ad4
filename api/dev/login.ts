// POST /api/dev/login {k1}: the dashboard's "Log in with the dev wallet". The
// server signs that LNURL-auth challenge with its development key and answers
// as the wallet's callback would ({status:"OK"} or {status:"ERROR", reason});
// the page then collects its login token with its poll token, as after a phone
// wallet. 404 unless the embedded dev node is the provider outside production.
import { HttpError, json } from '../../lib/http/errors.js';
import { clientIp, readJson } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { signInWithDevWallet } from '../../lib/service/accounts/dev-login.js';
import { Body } from '../../lib/contracts/dev/login.js';

export default serviceRoute({
  async POST(request, deployment) {
    const config = deployment.config();
    // Checked before anything else: in production this path does not exist.
    if (config.production || config.lightning.provider !== 'dev')
      throw new HttpError(404, 'NOT_FOUND', 'No dev login here: it exists only with the embedded dev node outside production');
    const { k1 } = await readJson(request, Body);
    const answer = await signInWithDevWallet(deployment.context(), k1, clientIp(request));
    if (answer.status === 'OK') return json(answer, { headers: { 'Cache-Control': 'no-store' } });
    // The wallet's LUD-04 refusal, plus the {error, code} every error of this API carries.
    return json({ ...answer, error: answer.reason, code: 'LOGIN_REFUSED' }, { status: 400, headers: { 'Cache-Control': 'no-store' } });
  },
});
