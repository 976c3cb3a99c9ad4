// GET /api/dev/inbox?address=<username>@<this host>: what the dev node's own
// Lightning Addresses received (paid invoices, newest first, with their LUD-12
// comments), so local runs can read a link code (POST /api/links) or see a
// payout arrive. 404 unless the embedded dev node is the provider outside production.
import { HttpError, json } from '../../lib/http/errors.js';
import { readQuery } from '../../lib/http/input.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { paidToDevAddress } from '../../lib/service/money/lnurlp.js';
import { Query } from '../../lib/contracts/dev/inbox.js';

export default serviceRoute({
  async GET(request, deployment) {
    const config = deployment.config();
    if (config.production || config.lightning.provider !== 'dev')
      throw new HttpError(404, 'NOT_FOUND', 'No dev inbox here: it exists only with the embedded dev node outside production');
    const { address } = readQuery(request, Query);
    const received = await paidToDevAddress(deployment.context(), address);
    return json(
      {
        address,
        received: received.map((entry) => ({
          paymentHash: entry.paymentHash,
          amountMsat: entry.amountMsat,
          comment: entry.comment,
          createdAt: entry.createdAt,
        })),
      },
      { headers: { 'Cache-Control': 'no-store' } },
    );
  },
});
