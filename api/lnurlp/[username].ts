// GET /.well-known/lnurlp/:username (vercel.json rewrite) and its callback: the service's own Lightning Addresses.
import { json } from '../../lib/http/errors.js';
import { clientIp } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { answerLnurlp } from '../../lib/service/money/lnurlp.js';
import { Query } from '../../lib/contracts/lnurlp.js';

export default serviceRoute({
  async GET(request, deployment) {
    // Never a zod 400 here: LUD-06 payers expect {status:"ERROR", reason}, which answerLnurlp gives.
    const query = Query.parse(Object.fromEntries(new URL(request.url).searchParams));
    return json(await answerLnurlp(deployment.context(), request.url, query, clientIp(request)), { headers: { 'Cache-Control': 'no-store' } });
  },
});
