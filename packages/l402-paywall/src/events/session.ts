// The prepaid sessions' audit events (docs/events.md "Prepaid sessions"):
// session.opened, topped-up, topup-refused, spent, closed and refunded, one per observation
// that lightningSessions and the refunds tell their onSession
// (schemes/session/observer.ts). Apart from events/server.ts, so the paywall's lazily
// loaded builder does not carry them.
import type { SessionObservation, SessionObserver } from '../schemes/session/observer.js';
import { childSpan, makeEvent, serverSource } from './cloudevent.js';
import { dispatcher, type ErrorReporter, type EventHandler } from './dispatch.js';
import { EVENT_TYPES, PAYMENT_VERIFICATION, type L402EventData, type L402EventType, type PrepaidSessionFacts, type ServerEventOptions } from './types.js';

/**
 * A session event's id: the same observation told twice (a retried refund
 * report, say) makes the same id, which receivers already deduplicate on
 * (webhook-id).
 */
export function sessionEventId(observation: SessionObservation): string {
  const base = `session-${observation.sessionId}`;
  switch (observation.type) {
    case 'opened':
      return `${base}-opened`;
    case 'topped-up':
      return `${base}-topped-up-${observation.paymentHash}`;
    case 'topup-refused':
      return `${base}-topup-refused-${observation.paymentHash}`;
    case 'spent':
      return `${base}-spent-${observation.spentMsat}`;
    case 'closed':
      return `${base}-closed`;
    case 'refunded':
      return `${base}-refund-${observation.attempt}-${observation.state}`;
  }
}

const SESSION_EVENT_TYPES: Record<SessionObservation['type'], L402EventType> = {
  opened: EVENT_TYPES.sessionOpened,
  'topped-up': EVENT_TYPES.sessionToppedUp,
  'topup-refused': EVENT_TYPES.sessionTopUpRefused,
  spent: EVENT_TYPES.sessionSpent,
  closed: EVENT_TYPES.sessionClosed,
  refunded: EVENT_TYPES.sessionRefunded,
};

/** What a session event says of the money, by the observation's type. */
function prepaidFacts(observation: SessionObservation): { facts: PrepaidSessionFacts; payment?: { paymentHash: string; amountMsat: number } } {
  switch (observation.type) {
    case 'opened':
      return { facts: { unitPriceMsat: observation.unitPriceMsat }, payment: { paymentHash: observation.sessionId, amountMsat: observation.depositMsat } };
    case 'topped-up':
      return { facts: { closedBeforehand: observation.closed }, payment: { paymentHash: observation.paymentHash, amountMsat: observation.amountMsat } };
    case 'topup-refused':
      return {
        facts: { refundState: observation.refundState },
        payment: { paymentHash: observation.paymentHash, amountMsat: observation.amountMsat },
      };
    case 'spent':
      return {
        facts: {
          units: observation.units,
          amountMsat: observation.amountMsat,
          paidMsat: observation.paidMsat,
          spentMsat: observation.spentMsat,
          ...(observation.metered && { metered: { ...observation.metered } }),
        },
      };
    case 'closed':
      return {
        facts: { because: observation.because, paidMsat: observation.paidMsat, spentMsat: observation.spentMsat, refundMsat: observation.refundMsat },
      };
    case 'refunded': {
      const refund: NonNullable<PrepaidSessionFacts['refund']> = { state: observation.state, amountMsat: observation.amountMsat, attempt: observation.attempt };
      if (observation.retryAt !== undefined) refund.retryAt = new Date(observation.retryAt).toISOString();
      if (observation.error !== undefined) refund.error = observation.error;
      if (observation.reason !== undefined) refund.reason = observation.reason;
      return { facts: { refund } };
    }
  }
}

/**
 * An observer that emits each observation as a signed-ready CloudEvent to
 * `onEvent`: pass it as lightningSessions' and the refunds' `onSession`.
 */
export function sessionEvents(onEvent: EventHandler, options: ServerEventOptions & { onError: ErrorReporter }): SessionObserver {
  const emit = dispatcher(onEvent, options.onError, options.maxPending);
  const source = serverSource(options);
  const agent: L402EventData['agent'] = options.agentId ? { id: options.agentId } : {};
  const proof = (paymentHash: string, amountMsat: number) => ({ paymentHash, amountMsat, verification: PAYMENT_VERIFICATION });
  return (observation) => {
    const { facts, payment } = prepaidFacts(observation);
    const id = observation.sessionId;
    // The session's events share one trace, named by its id (a public payment hash): each a span of its own.
    const traceparent = childSpan(`00-${id.slice(0, 32)}-0000000000000001-01`);
    const causationId = observation.type === 'opened' ? undefined : observation.type === 'refunded' ? `session-${id}-closed` : `session-${id}-opened`;
    const data: L402EventData = {
      agent,
      session: { id, kind: 'prepaid' },
      causation: { traceparent, traceStarted: true, ...(causationId && { causationId }) },
      ...(payment && { payment: proof(payment.paymentHash, payment.amountMsat) }),
      prepaid: facts,
      timing: {},
      context: {},
    };
    emit(
      makeEvent({
        id: sessionEventId(observation),
        type: SESSION_EVENT_TYPES[observation.type],
        time: observation.at,
        source,
        // The route it was sold on; a close or refund by the cron knows only the session.
        subject: ('route' in observation && observation.route) || `session:${id}`,
        data,
      }),
    );
  };
}
