import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { route } from '../lib/http/route.js';
import { serviceContext } from '../lib/service/context.js';
import { Registration, enforceRegisterRateLimit, registerApi } from '../lib/service/directory.js';

// POST /api/register: add or update an entry of the public directory.
// 200 {ok, id}; 400 invalid field; 409 URL_OWNED; 413; 429; 503 DATABASE_UNAVAILABLE.
export default route({
  async POST(request) {
    const ctx = serviceContext();
    await enforceRegisterRateLimit(ctx, clientIp(request));
    const entry = await readJson(request, Registration);
    const { id } = await registerApi(ctx, entry);
    return json({ ok: true, id }, { headers: { 'Cache-Control': 'no-store' } });
  },
});
