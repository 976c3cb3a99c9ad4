// POST /api/provider-webhook: signed payment confirmations from the Lightning
// provider. 200 once the payment is logged and split (payout attempted);
// 401 WEBHOOK_REJECTED (bad, missing or stale signature: nothing happens);
// 404 UNKNOWN_INVOICE / 409 NOT_SETTLED (the provider does not confirm it:
// nothing moves); 501 when the provider sends no webhooks; 503 + Retry-After
// when the provider or database is down, so the provider delivers again.
import { json } from '../lib/http/errors.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { handleProviderWebhook } from '../lib/service/money/webhook.js';

export default serviceRoute({
  async POST(request, deployment) {
    const confirmed = await handleProviderWebhook(deployment.context(), request);
    if (!confirmed) return json({ ok: true, ignored: true }, { headers: { 'Cache-Control': 'no-store' } });
    return json(
      {
        ok: true,
        paymentHash: confirmed.paymentHash,
        managed: confirmed.managed,
        ...(confirmed.split ? { split: { ownerMsat: confirmed.split.ownerMsat, feeMsat: confirmed.split.feeMsat, duplicate: !confirmed.split.created } } : {}),
      },
      { headers: { 'Cache-Control': 'no-store' } },
    );
  },
});
