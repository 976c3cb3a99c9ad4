// The sweep of prepaid sessions (docs/sessions.md) the payouts cron runs:
// sessions idle past their timeout are closed and refunded, and refunds that
// failed earlier are retried once their backoff has passed. The library does
// the paying, once per refund however many sweeps race (refunds.ts); this
// bounds it in time and counts what it did for the cron's answer.
import { canRefund, closeIdleSessions, refundDue, type RefundOptions, type RefundReport } from 'l402-paywall/lightning';
import type { ServiceContext } from '../context.js';
import { serviceSessionObserver } from '../session-observer.js';
import { describeError } from '../../util/describe-error.js';

export interface SessionSweepResult {
  /** Idle sessions closed by this sweep (their refunds are attempted at once and counted below). */
  closed: number;
  /** Refunds paid, or found paid by an earlier attempt that lost its answer. */
  refundsPaid: number;
  /** Refunds that failed this time; each is retried after its backoff. */
  failed: number;
  /** Refunds given up (attempts exhausted, or the return invoice expired): owed, for the operator. */
  givenUp: number;
  /** True when the time budget ran out, or the sweep failed, with work possibly left for the next run. */
  leftOver: boolean;
  /** Why the sweep stopped early: its ledger (the store) or its backend failed; the next run starts again. */
  error?: string;
}

/**
 * Few at a time, so the deadline is checked often: one refund is a Lightning
 * payment, which can take seconds.
 */
const BATCH = 5;

/** Closes idle sessions and pays the refunds due, starting nothing new after `deadline` (unix ms). */
export async function sweepSessions(ctx: ServiceContext, { deadline }: { deadline: number }): Promise<SessionSweepResult> {
  const result: SessionSweepResult = { closed: 0, refundsPaid: 0, failed: 0, givenUp: 0, leftOver: false };
  // A backend that cannot refund sells no sessions (lib/service/demo.ts), so none can be owed.
  if (!canRefund(ctx.provider)) return result;
  // The observer records closes and refunds in the payment log and the audit events, as the demo's own closes are.
  const onSession = serviceSessionObserver(ctx);
  const options: RefundOptions = { ledger: ctx.sessions, provider: ctx.provider, ...(onSession && { onSession }) };
  const count = (reports: RefundReport[]) => {
    for (const report of reports) {
      if (report.result === 'paid' || report.result === 'found-paid') result.refundsPaid += 1;
      else if (report.result === 'failed') result.failed += 1;
      else if (report.result === 'given-up') {
        result.givenUp += 1;
        // Money owed that no retry will pay: the operator must see it (the session id is public, its preimage is not).
        console.error(`[sessions] refund of ${report.amountMsat ?? 0} msat for session ${report.id} given up: ${report.detail ?? 'no reason'}`);
      }
    }
  };
  // Idle sessions first: closing one makes its refund due; refundDue then takes what is left. Each step
  // says whether it got anywhere: a closed session is progress even with nothing to refund, a refund only
  // when this sweep took it (a full batch all taken by a racing sweep would otherwise be asked for again).
  const steps: ((limit: number) => Promise<{ reports: RefundReport[]; progressed: boolean }>)[] = [
    async (limit) => {
      const reports = await closeIdleSessions(options, limit);
      result.closed += reports.length;
      return { reports, progressed: reports.length > 0 };
    },
    async (limit) => {
      const reports = await refundDue(options, limit);
      return { reports, progressed: reports.some((report) => report.result !== 'not-due') };
    },
  ];
  try {
    for (const step of steps) {
      for (;;) {
        if (Date.now() >= deadline) {
          result.leftOver = true;
          return result;
        }
        const { reports, progressed } = await step(BATCH);
        count(reports);
        if (reports.length < BATCH || !progressed) break;
      }
    }
  } catch (error) {
    // Said, not thrown: the cron's other work (managed payments, payouts) does not depend on the store.
    result.leftOver = true;
    result.error = describeError(error);
    console.error(`[sessions] the sweep stopped: ${result.error}`);
  }
  return result;
}
