// Scheduled by vercel.json "crons": writes the payments kept in the key-value
// store while the database was down (lib/service/records/payment-outbox.ts). Vercel
// calls it with `Authorization: Bearer <CRON_SECRET>`; nothing else may.
import { HttpError, json } from '../../lib/http/errors.js';
import { requireCronSecret } from '../../lib/http/secrets.js';
import { serviceRoute } from '../../lib/service/deployment.js';
import { servicePaymentLog } from '../../lib/service/records/payment-log.js';

export default serviceRoute({
  async GET(request, deployment) {
    requireCronSecret(deployment.config().cron.secret, request.headers.get('authorization'));
    const paymentLog = servicePaymentLog(deployment.context());
    if (!paymentLog)
      return json({ written: 0, pending: 0, note: 'No database is configured, so no payments are logged' }, { headers: { 'Cache-Control': 'no-store' } });
    const result = await paymentLog.drain({ budgetMs: 20_000 });
    if (result.error !== undefined) {
      throw new HttpError(
        503,
        'DATABASE_UNAVAILABLE',
        'The database is unavailable; kept payments stay in the key-value store for the next flush',
        { written: result.written, pending: result.pending, retryAfter: 60 },
        { 'Retry-After': '60' },
      );
    }
    return json({ written: result.written, pending: result.pending }, { headers: { 'Cache-Control': 'no-store' } });
  },
});
