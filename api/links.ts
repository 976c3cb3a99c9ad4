import { json } from '../lib/http/errors.js';
import { clientIp, readJson } from '../lib/http/input.js';
import { linkedAddresses, requireLogin } from '../lib/service/accounts/auth.js';
import type { ServiceContext } from '../lib/service/context.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { confirmLink, startLink, unlink } from '../lib/service/accounts/links.js';
import { schemas } from '../lib/contracts/links.js';

const NO_STORE = { 'Cache-Control': 'no-store' };

const schemasFor = (ctx: ServiceContext) => (ctx.config.production ? schemas.production : schemas.development);

// Lightning Addresses linked to the login's key (Authorization: Bearer <token>):
//   GET    /api/links                  -> 200 {addresses}
//   POST   /api/links {address}        -> 200 {address, status: "code-sent", expiresAt, attempts} (1 sat paid, code in its comment)
//                                         | {address, status: "linked"} when already linked
//          422 COMMENT_NOT_SUPPORTED, ADDRESS_REFUSED; 429 RATE_LIMITED (per key, client IP, address, service);
//          503 ADDRESS_UNREACHABLE, LINK_PAYMENT_*
//   POST   /api/links {address, code}  -> 200 {address, status: "linked"}
//          400 WRONG_CODE {attemptsLeft}; 404 LINK_CODE_NOT_FOUND; 429 TOO_MANY_ATTEMPTS
//   DELETE /api/links {address}        -> 200 {address, removed}
//   401 without a valid login.
export default serviceRoute({
  async GET(request, deployment) {
    const ctx = deployment.context();
    const login = await requireLogin(ctx, request);
    return json({ addresses: await linkedAddresses(await ctx.database(), login.pubkey) }, { headers: NO_STORE });
  },
  async POST(request, deployment) {
    const ctx = deployment.context();
    const login = await requireLogin(ctx, request);
    const body = await readJson(request, schemasFor(ctx).link);
    const result =
      body.code === undefined ? await startLink(ctx, login, body.address, clientIp(request)) : await confirmLink(ctx, login, body.address, body.code);
    return json(result, { headers: NO_STORE });
  },
  async DELETE(request, deployment) {
    const ctx = deployment.context();
    const login = await requireLogin(ctx, request);
    const { address } = await readJson(request, schemasFor(ctx).unlink);
    return json({ address, removed: await unlink(ctx, login, address) }, { headers: NO_STORE });
  },
});
