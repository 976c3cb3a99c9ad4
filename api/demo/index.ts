import { json } from '../../lib/http/errors.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { DEMO_ROUTE } from '../../lib/service/demo.js';
import { devLoginKey } from '../../lib/service/accounts/dev-login-key.js';

export default serviceRoute({
  GET(request, deployment) {
    const ctx = deployment.context();
    const base = new URL(request.url).origin;
    return json({
      description: 'A live L402 paywall: pay a Lightning invoice, retry with the proof, get the answer.',
      endpoints: [
        { method: 'GET', path: DEMO_ROUTE, priceSats: ctx.config.demo.priceSats, returns: '{usd, source, fetchedAt}' },
        { method: 'GET', path: '/api/demo/preimage?hash=<paymentHash>', priceSats: 0, returns: '{preimage} once the demo invoice is paid (202 while pending)' },
      ],
      steps: [
        `curl -i ${base}${DEMO_ROUTE}  # 402 with WWW-Authenticate and {macaroon, invoice, paymentHash}`,
        'Pay the invoice with any Lightning wallet (or, locally, POST /api/dev/pay {"invoice": "..."})',
        `curl ${base}${DEMO_ROUTE} -H "Authorization: L402 <macaroon>:<preimage>"`,
      ],
      devWallet: ctx.devNode ? { method: 'POST', path: '/api/dev/pay', body: '{"invoice": "<bolt11>"}' } : null,
      // The dashboard offers "Log in with the dev wallet" when this is set (local runs only).
      devLogin: devLoginKey(ctx) ? { method: 'POST', path: '/api/dev/login', body: '{"k1": "<the challenge k1>"}' } : null,
    });
  },
});
