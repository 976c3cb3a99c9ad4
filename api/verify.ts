import { json } from '../lib/http/errors.js';
import { readJson } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { verifyTokenString } from '../lib/service/verify.js';
import { Body } from '../lib/contracts/verify.js';

// POST /api/verify {token, consume?, route?, priceSats?, caveats?}
//   token: "<macaroon>:<preimage>", "L402 <macaroon>:<preimage>" or a whole "Payment <credential>" header value (docs/mpp.md)
//   -> 200 {valid: true, paymentHash, expiresAt, amountSats, amountMsat, route, caveats, uses[, scheme: "Payment", challengeId]}
//   -> 200 {valid: false, error, code}; 400 for a bad body.
export default serviceRoute({
  async POST(request, deployment) {
    const { token, consume, ...expect } = await readJson(request, Body);
    return json(await verifyTokenString(deployment.context(), token, consume, expect), { headers: { 'Cache-Control': 'no-store' } });
  },
});
