// Scheduled by vercel.json "crons": closes idle prepaid sessions and pays due
// session refunds (lib/service/money/session-refunds.ts), confirms managed
// payments whose webhook never came, then retries due payouts with backoff
// (lib/service/money/payouts.ts).
// Vercel calls it with `Authorization: Bearer <CRON_SECRET>`; nothing else may.
// Bounded: it starts no new work after BUDGET_MS.
import { json } from '../../lib/http/errors.js';
import { requireCronSecret } from '../../lib/http/secrets.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { reconcileManagedInvoices } from '../../lib/service/money/managed.js';
import { runDuePayouts } from '../../lib/service/money/payouts.js';
import { sweepSessions } from '../../lib/service/money/session-refunds.js';

const BUDGET_MS = 20_000;
/** Sessions go first, with their own share: they need no database, so an outage there does not hold clients' refunds back. */
const SESSIONS_BUDGET_MS = 5_000;

export default serviceRoute({
  async GET(request, deployment) {
    requireCronSecret(deployment.config().cron.secret, request.headers.get('authorization'));
    const ctx = deployment.context();
    const started = Date.now();
    const sessions = await sweepSessions(ctx, { deadline: started + SESSIONS_BUDGET_MS });
    const reconciled = await reconcileManagedInvoices(ctx, { deadline: started + BUDGET_MS / 2 });
    const payouts = await runDuePayouts(ctx, { budgetMs: Math.max(1000, BUDGET_MS - (Date.now() - started)) });
    return json({ sessions, reconciled, payouts }, { headers: { 'Cache-Control': 'no-store' } });
  },
});
