// What the service does with news of its prepaid sessions (docs/sessions.md
// "Watching sessions"): deposits, top-ups, spending, closes and refunds go to
// the payment log (and so to GET /api/stats), and, when the operator set a
// webhook, out as signed audit events (docs/events.md). Each event leaves once:
// the demo's withL402 sends its sessions' events through its own onEvent (the
// service's sink), so its lightningSessions gets the payment log alone; the
// payouts cron's closeIdleSessions and refundDue, which no paywall sees, get
// both, so a refund is recorded and reported wherever it is paid.
import type { SessionObserver } from 'l402-paywall/lightning';
import { servicePart, type ServiceContext } from './context.js';
import { servicePaymentLog } from './records/payment-log.js';

const logObserver = servicePart('session log observer', (ctx): SessionObserver | undefined => {
  const log = servicePaymentLog(ctx);
  return log && ((observation) => log.onSession(observation));
});

const sweepObserver = servicePart('session sweep observer', (ctx): SessionObserver | undefined => {
  const log = servicePaymentLog(ctx);
  const events = ctx.events?.sessions;
  return log || events
    ? (observation) => {
        log?.onSession(observation);
        events?.(observation);
      }
    : undefined;
});

/** For the demo's lightningSessions: the payment log only (its events go out through withL402's onEvent); undefined without a database. */
export function sessionLogObserver(ctx: ServiceContext): SessionObserver | undefined {
  return ctx.part(logObserver);
}

/** For the cron's closeIdleSessions and refundDue: the payment log and the audit events; undefined when nothing is listening (no database, no webhook). */
export function serviceSessionObserver(ctx: ServiceContext): SessionObserver | undefined {
  return ctx.part(sweepObserver);
}
