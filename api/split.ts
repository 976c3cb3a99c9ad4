// POST /api/split: manual recovery. Header x-split-secret (401 when
// missing or wrong, 503 NOT_CONFIGURED when SPLIT_SECRET is unset); body
// {amountSats, ownerAddress, paymentHash?, idempotencyKey?} (400). The same
// ledger as the webhook (lib/service/money/managed.ts manualSplit), so it cannot
// split or pay a payment hash twice. 200 {ok, ownerSats, ...}, with skipped: true
// when the owner's accrued shares are still below the payout minimum
// (SPLIT_MIN_SATS, and a fee earned on them of PAYOUT_MIN_FEE_MSAT): it accrues.
import { HttpError, json, notConfigured } from '../lib/http/errors.js';
import { readJson } from '../lib/http/input.js';
import { sameSecret } from '../lib/http/secrets.js';
import { outboundPolicy } from '../lib/lightning/lnurl.js';
import { serviceRoute } from '../lib/service/deployment.js';
import { manualSplit } from '../lib/service/money/managed.js';
import { Body, DevBody } from '../lib/contracts/split.js';

export default serviceRoute({
  async POST(request, deployment) {
    const secret = deployment.config().payouts.splitSecret;
    if (!secret) throw notConfigured('Manual splits are not configured: set SPLIT_SECRET', ['SPLIT_SECRET'], 3600);
    if (!sameSecret(request.headers.get('x-split-secret'), secret)) throw new HttpError(401, 'UNAUTHORIZED', 'Missing or wrong x-split-secret header');
    const ctx = deployment.context();
    const body = await readJson(request, outboundPolicy(ctx.config).allowLoopback ? DevBody : Body);
    const result = await manualSplit(ctx, body);
    const payout = result.payouts.find((p) => p.outcome !== 'skipped');
    // Every answer says what the owner is owed (the spec's ownerSats), paid now or accrued.
    return json(
      {
        ok: true,
        ...(result.accrued ? { skipped: true } : {}),
        ownerSats: Math.floor(result.ownerMsat / 1000),
        ownerMsat: result.ownerMsat,
        ledgerKey: result.ledgerKey,
        duplicate: result.duplicate,
        state: result.split.state,
        ...(payout && (payout.outcome === 'retry' || payout.outcome === 'failed') ? { reason: payout.reason } : {}),
      },
      { headers: { 'Cache-Control': 'no-store' } },
    );
  },
});
