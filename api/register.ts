import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { Registration } from '../lib/service/directory/entry.js';
import { enforceRegisterRateLimit, registerApi } from '../lib/service/directory/registration.js';

// POST /api/register: add or update an entry of the public directory, proving
// control of the url (proof_token) or of the address (Authorization: Bearer <session>).
// 200 {ok, id, proof}; 400 invalid field, URL_NOT_ALLOWED (not a public host); 401 SESSION_*; 403 OWNERSHIP_UNPROVEN, ADDRESS_NOT_LINKED;
// 409 URL_OWNED; 413; 429; 503 DATABASE_UNAVAILABLE.
export default serviceRoute({
  async POST(request, deployment) {
    const ctx = deployment.context();
    await enforceRegisterRateLimit(ctx, clientIp(request));
    const entry = await readJson(request, Registration);
    const { id, proof } = await registerApi(ctx, entry, request);
    return json({ ok: true, id, proof }, { headers: { 'Cache-Control': 'no-store' } });
  },
});
