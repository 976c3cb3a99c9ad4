// What the service does with news of its prepaid sessions (docs/sessions.md
// "Watching sessions"): deposits, top-ups, spending, closes and refunds go to
// the payment log (and so to GET /api/stats), and, when the operator set a
// webhook, out as signed audit events (docs/events.md). One observer per service
// context, given to the demo's lightningSessions and, by the payouts cron, to
// closeIdleSessions and refundDue, so a refund is recorded wherever it is paid.
import type { SessionObserver } from 'l402-paywall/lightning';
import { servicePart, type ServiceContext } from './context.js';
import { servicePaymentLog } from './records/payment-log.js';

const sessionObserver = servicePart('session observer', (ctx): SessionObserver | undefined => {
  const log = servicePaymentLog(ctx);
  const events = ctx.events?.sessions;
  return log || events
    ? (observation) => {
        log?.onSession(observation);
        events?.(observation);
      }
    : undefined;
});

/** The service's session observer; undefined when nothing is listening (no database, no webhook). */
export function serviceSessionObserver(ctx: ServiceContext): SessionObserver | undefined {
  return ctx.part(sessionObserver);
}
