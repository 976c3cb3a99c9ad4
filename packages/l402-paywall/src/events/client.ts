// Client events: challenge.received, invoice.refused, payment.sent and
// request.served, for fetchWithL402's `onEvent`. A session is every call made
// with the same onEvent handler and sessionId (default: one per handler for
// the life of the process); its counters (paid, retries, refusals) are what
// the events' behavioural context reports.
import { declaredId, elapsedMs, eventMint, type EventMint } from './cloudevent.js';
import { dispatcher, type Dispatcher, type ErrorReporter, type EventHandler } from './dispatch.js';
import { AGENT_ID_HEADER, EVENT_TYPES, PAYMENT_VERIFICATION, SESSION_ID_HEADER, type L402EventData, type L402EventType, type PaymentProof } from './types.js';

export interface ClientEventOptions {
  /** This agent's id, as its operator names it (data.agent.id); also sent to servers as the l402-agent-id header. */
  agentId?: string;
  /** Groups calls into a session; also sent as the l402-session-id header. Default: one random id per onEvent handler. */
  sessionId?: string;
  /** The CloudEvents `source`; default urn:l402-paywall:agent:<agentId or "anonymous">. */
  source?: string;
  /** onEvent promises that may be pending at once before new events are dropped (default 1000). */
  maxPending?: number;
  /** Where a throwing onEvent or dropped events are reported; default console.error (message only). */
  onError?: ErrorReporter;
}

interface Session {
  id: string;
  kind: 'client' | 'declared';
  paidMsat: number;
  retries: number;
  refusals: number;
  emit: Dispatcher;
  /** The session's span ids and event times: one pool for all its calls, not one per call. */
  mint: EventMint;
}

// Per handler, so a session's counters live exactly as long as its handler does.
const sessions = new WeakMap<EventHandler, Map<string, Session>>();

function sessionOf(onEvent: EventHandler, options: ClientEventOptions): Session {
  let byId = sessions.get(onEvent);
  if (!byId) sessions.set(onEvent, (byId = new Map()));
  const declared = declaredId(options.sessionId);
  const key = declared ?? '';
  let session = byId.get(key);
  if (!session) {
    const onError = options.onError ?? ((error, context) => console.error(`[l402 events] ${context}:`, error instanceof Error ? error.message : error));
    session = {
      id: declared ?? crypto.randomUUID(),
      kind: declared ? 'declared' : 'client',
      paidMsat: 0,
      retries: 0,
      refusals: 0,
      emit: dispatcher(onEvent, onError, options.maxPending),
      mint: eventMint(),
    };
    byId.set(key, session);
  }
  return session;
}

/** What the client knows of the budget at the moment of an event. */
export interface BudgetView {
  spentMsat(): number;
  leftMsat(): number;
}

export interface ClientCall {
  /** challenge.received; answers its id. */
  challengeReceived(fields: { paymentHash?: string; amountMsat?: number | null; invoice?: string }): string;
  /** invoice.refused with the client's refusal code (PRICE_ABOVE_MAXIMUM, BUDGET_EXCEEDED, ...). */
  invoiceRefused(reason: string, fields: { paymentHash?: string; amountMsat?: number | null; invoice?: string }, causationId: string): void;
  /** payment.sent; answers its id. */
  paymentSent(fields: { paymentHash: string; amountMsat: number; invoice: string; feeMsat: number; payStartedAt: number }, causationId: string): string;
  /** request.served: the paid retry was answered. */
  requestServed(
    fields: { paymentHash: string; amountMsat: number; status: number; retryStartedAt: number; paidByThisCall: boolean },
    causationId: string,
  ): void;
}

/**
 * One fetchWithL402 call's events. Sets, on `request`, a traceparent when it
 * has none (so the server's events join this trace) and the agent and session
 * headers when those are configured.
 */
export function clientCall(onEvent: EventHandler, options: ClientEventOptions, request: Request, budget: BudgetView | undefined): ClientCall {
  const session = sessionOf(onEvent, options);
  const { makeEvent, newTraceparent, childSpan } = session.mint;
  const startedAt = performance.now();
  const url = new URL(request.url);
  const subject = url.origin + url.pathname; // never the query: it can carry keys
  const agentId = declaredId(options.agentId);
  const source = options.source ?? `urn:l402-paywall:agent:${agentId ?? 'anonymous'}`;
  const headers = request.headers;
  const incoming = headers.get('traceparent');
  const traceStarted = !incoming;
  const callSpan = incoming ?? newTraceparent();
  if (!incoming) headers.set('traceparent', callSpan);
  if (agentId && !headers.has(AGENT_ID_HEADER)) headers.set(AGENT_ID_HEADER, agentId);
  if (session.kind === 'declared' && !headers.has(SESSION_ID_HEADER)) headers.set(SESSION_ID_HEADER, session.id);
  let challengeMs: number | undefined;
  let payMs: number | undefined;

  const proof = (fields: { paymentHash?: string; amountMsat?: number | null; invoice?: string }): PaymentProof | undefined =>
    fields.paymentHash && typeof fields.amountMsat === 'number'
      ? {
          paymentHash: fields.paymentHash,
          amountMsat: fields.amountMsat,
          ...(fields.invoice ? { invoice: fields.invoice } : {}),
          verification: PAYMENT_VERIFICATION,
        }
      : undefined;

  const emit = (
    type: L402EventType,
    data: Omit<L402EventData, 'agent' | 'session' | 'context' | 'causation'> & { causationId?: string; status?: number },
  ): string => {
    const { causationId, status, ...rest } = data;
    const event = makeEvent({
      type,
      source,
      subject,
      data: {
        agent: agentId ? { id: agentId } : {},
        session: { id: session.id, kind: session.kind },
        causation: { traceparent: traceStarted ? callSpan : childSpan(callSpan), traceStarted, ...(causationId ? { causationId } : {}) },
        ...rest,
        context: {
          method: request.method,
          ...(status !== undefined ? { status } : {}),
          budget: budget ? { spentMsat: budget.spentMsat(), leftMsat: budget.leftMsat() } : { spentMsat: session.paidMsat },
          retries: session.retries,
          refusals: session.refusals,
        },
      },
    });
    session.emit(event);
    return event.id;
  };

  return {
    challengeReceived(fields) {
      challengeMs = elapsedMs(startedAt);
      const payment = proof(fields);
      return emit(EVENT_TYPES.challengeReceived, { ...(payment ? { payment } : {}), timing: { challengeMs }, status: 402 });
    },
    invoiceRefused(reason, fields, causationId) {
      session.refusals += 1;
      const payment = proof(fields);
      emit(EVENT_TYPES.invoiceRefused, { reason, ...(payment ? { payment } : {}), timing: { challengeMs }, causationId });
    },
    paymentSent(fields, causationId) {
      session.paidMsat += fields.amountMsat;
      payMs = elapsedMs(fields.payStartedAt);
      return emit(EVENT_TYPES.paymentSent, { payment: proof(fields)!, feeMsat: fields.feeMsat, timing: { challengeMs, payMs }, causationId });
    },
    requestServed(fields, causationId) {
      session.retries += 1;
      emit(EVENT_TYPES.clientRequestServed, {
        payment: proof(fields)!,
        ...(fields.paidByThisCall ? {} : { paidByAnotherCall: true }),
        timing: { challengeMs, payMs, serveMs: elapsedMs(fields.retryStartedAt) },
        causationId,
        status: fields.status,
      });
    },
  };
}
