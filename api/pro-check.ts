import { json } from '../lib/http/errors.js';
import { readQuery } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { proStatus } from '../lib/service/accounts/pro.js';
import { Query } from '../lib/contracts/pro-check.js';

// GET /api/pro-check?address= -> {active: true, expiresAt} | {active: false}; 400; 503.
export default serviceRoute({
  async GET(request, deployment) {
    const { address } = readQuery(request, Query);
    return json(await proStatus(deployment.context(), address), { headers: { 'Cache-Control': 'no-store' } });
  },
});
