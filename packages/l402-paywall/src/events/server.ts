// Server events: challenge.issued, token.rejected and request.served, built
// from a request and what the paywall decided. (The prepaid sessions' events
// are session.ts's: the paywall's lazily loaded builder does not carry them.) withL402 and the adapters load
// this module only when `onEvent` is set (adapters/audit.ts, events/load-builder.ts);
// an operator's own paid flow can use serverEvents() directly.
import { parseCredential } from '../schemes/l402/credential.js';
import { isPaymentAuthorization, type Scheme } from '../schemes/charge/charge-scheme.js';
import { decodeToken } from '../schemes/l402/token.js';
import type { Paid, Refusal } from '../core/decision.js';
import type { AuditBuilder, AuditedOptions } from './audit-builder.js';
import { declaredId, elapsedMs, eventMint, serverSource, type traceFrom, validTraceparent } from './cloudevent.js';
import { dispatcher, type ErrorReporter, type EventHandler } from './dispatch.js';
import { AGENT_ID_HEADER, EVENT_TYPES, PAYMENT_VERIFICATION, SESSION_ID_HEADER, type L402EventData, type PaymentProof } from './types.js';
import type { ServerEventOptions } from './types.js';

/** When an event's moment was: performance.now() for its durations, Date.now() for its time (both default to now). */
interface Moment {
  endedAt?: number;
  time?: number;
}

/** What one request says about who sent it and where it sits in a trace. */
interface RequestFacts {
  method: string;
  agent: L402EventData['agent'];
  declaredSession?: string;
  trace: ReturnType<typeof traceFrom>;
  /**
   * Set when the request's credential was refused: its events then start a trace of their own, and the
   * traceparent it carried is only reported as a claim (anyone can send someone else's).
   */
  claimedTraceparent?: string;
  credentialRefused: boolean;
}

export interface ServerEvents {
  /** Emits challenge.issued; answers its id. */
  challengeIssued(
    request: Request,
    fields: { route: string; paymentHash: string; amountMsat: number; invoice?: string; startedAt: number; causationId?: string; status?: number } & Moment,
    facts?: RequestFacts,
  ): string;
  /** Emits token.rejected; answers its id. */
  tokenRejected(
    request: Request,
    fields: { route: string; reason: string; startedAt: number; claimedPaymentHash?: string; status?: number; scheme?: Scheme } & Moment,
    facts?: RequestFacts,
  ): string;
  /** Emits request.served, caused by the challenge of the same payment hash. */
  requestServed(
    request: Request,
    fields: { route: string; paymentHash: string; amountMsat: number; status: number; startedAt: number; issuedAtSeconds?: number; scheme?: Scheme } & Moment,
  ): void;
  /** The per-request facts, read once when one request emits several events (`credentialRefused`: see RequestFacts). */
  factsOf(request: Request, credentialRefused?: boolean): RequestFacts;
}

/** The id of a payment hash's challenge.issued: the served event names it as its cause, whichever instance issued it. */
export const challengeEventId = (paymentHash: string): string => `challenge-${paymentHash}`;

export function serverEvents(onEvent: EventHandler, options: ServerEventOptions & { onError: ErrorReporter }): ServerEvents {
  const emit = dispatcher(onEvent, options.onError, options.maxPending);
  const agentId = options.agentId;
  const source = serverSource(options);
  // This producer's own random pool and clock: its span ids and event times.
  const { makeEvent, newTraceparent, traceFrom } = eventMint();

  const factsOf = (request: Request, credentialRefused = false): RequestFacts => {
    const headers = request.headers;
    const declaredAgent = declaredId(headers.get(AGENT_ID_HEADER));
    const agent: L402EventData['agent'] = {};
    if (agentId) agent.id = agentId;
    if (declaredAgent) agent.declared = { id: declaredAgent, proven: false };
    const incoming = headers.get('traceparent');
    const facts: RequestFacts = {
      method: request.method,
      agent,
      declaredSession: declaredId(headers.get(SESSION_ID_HEADER)),
      trace: credentialRefused ? { traceparent: newTraceparent(), traceStarted: true } : traceFrom(incoming),
      credentialRefused,
    };
    const claimed = credentialRefused ? validTraceparent(incoming) : undefined;
    if (claimed) facts.claimedTraceparent = claimed;
    return facts;
  };
  // A payment hash is the session only for a payment this paywall made or verified, never one a refused token names.
  const session = (facts: RequestFacts, paymentHash: string | undefined): L402EventData['session'] =>
    facts.declaredSession ? { id: facts.declaredSession, kind: 'declared' } : paymentHash ? { id: paymentHash, kind: 'payment' } : undefined;
  const causation = (facts: RequestFacts, causationId: string | undefined): L402EventData['causation'] => {
    const c: L402EventData['causation'] = { traceparent: facts.trace.traceparent, traceStarted: facts.trace.traceStarted };
    if (causationId) c.causationId = causationId;
    return c;
  };
  const proof = (paymentHash: string, amountMsat: number, invoice?: string): PaymentProof => {
    const p: PaymentProof = { paymentHash, amountMsat, verification: PAYMENT_VERIFICATION };
    if (invoice) p.invoice = invoice;
    return p;
  };

  return {
    factsOf,
    challengeIssued(request, fields, facts = factsOf(request)) {
      const id = challengeEventId(fields.paymentHash);
      emit(
        makeEvent({
          id,
          time: fields.time,
          type: EVENT_TYPES.challengeIssued,
          source,
          subject: fields.route,
          data: {
            agent: facts.agent,
            session: session(facts, fields.paymentHash),
            causation: causation(facts, fields.causationId),
            payment: proof(fields.paymentHash, fields.amountMsat, fields.invoice),
            timing: { challengeMs: elapsedMs(fields.startedAt, fields.endedAt) },
            context: { method: facts.method, status: fields.status ?? 402 },
          },
        }),
      );
      return id;
    },
    tokenRejected(request, fields, given) {
      const facts = given?.credentialRefused ? given : factsOf(request, true);
      const data: L402EventData = {
        agent: facts.agent,
        session: session(facts, undefined),
        causation: causation(facts, undefined),
        reason: fields.reason,
        timing: { challengeMs: elapsedMs(fields.startedAt, fields.endedAt) },
        context: { method: facts.method, status: fields.status ?? 402 },
      };
      // What the refused request claimed, as claims (neither proves anything): never the token itself.
      if (fields.scheme) data.scheme = fields.scheme;
      if (fields.claimedPaymentHash) data.claimedPaymentHash = fields.claimedPaymentHash;
      if (facts.claimedTraceparent) data.claimedTraceparent = facts.claimedTraceparent;
      const event = makeEvent({ type: EVENT_TYPES.tokenRejected, time: fields.time, source, subject: fields.route, data });
      emit(event);
      return event.id;
    },
    requestServed(request, fields) {
      const facts = factsOf(request);
      const serveMs = elapsedMs(fields.startedAt, fields.endedAt);
      const time = fields.time ?? Date.now();
      const timing: L402EventData['timing'] = { serveMs };
      if (fields.issuedAtSeconds !== undefined) timing.payMs = Math.max(0, Math.round(time - serveMs - fields.issuedAtSeconds * 1000));
      emit(
        makeEvent({
          type: EVENT_TYPES.serverRequestServed,
          time,
          source,
          subject: fields.route,
          data: {
            agent: facts.agent,
            session: session(facts, fields.paymentHash),
            causation: causation(facts, challengeEventId(fields.paymentHash)),
            payment: proof(fields.paymentHash, fields.amountMsat),
            ...(fields.scheme && { scheme: fields.scheme }),
            timing,
            context: { method: facts.method, status: fields.status },
          },
        }),
      );
    },
  };
}

/** The paywall's hook (adapters/audit.ts): what withL402 and the adapters call when onEvent is set. */
export function serverAudit(options: AuditedOptions, onError: ErrorReporter): AuditBuilder {
  const events = serverEvents(options.onEvent, {
    agentId: options.events?.agentId,
    source: options.events?.source,
    maxPending: options.events?.maxPending,
    onError,
  });
  const ttl = options.tokenTtlSeconds ?? 3600;
  return {
    refused(request, refusal: Refusal, { startedAt, endedAt, time }) {
      // A 503 sold nothing and checked nothing: no event.
      if (refusal.status !== 402 || !refusal.route) return;
      const body = refusal.body as {
        code: string;
        paymentHash: string;
        priceSats: number;
        invoice: string;
        session?: { depositInvoice: string; depositSats: number };
      };
      // A route sold by the session alone offers only the deposit: its invoice is the one named, for the deposit's amount.
      const invoicedSats = body.session?.depositInvoice === body.invoice ? body.session.depositSats : body.priceSats;
      // A refused credential's events (token.rejected and the challenge it caused) share a trace of their own.
      const facts = events.factsOf(request, body.code !== 'PAYMENT_REQUIRED');
      let causationId: string | undefined;
      if (body.code !== 'PAYMENT_REQUIRED') {
        const authorization = request.headers.get('authorization');
        const scheme: Scheme = authorization !== null && isPaymentAuthorization(authorization) ? 'Payment' : 'L402';
        const parsed = scheme === 'L402' ? parseCredential(authorization) : undefined;
        const claimedPaymentHash = parsed?.ok ? decodeToken(parsed.credential.token)?.hash : undefined;
        causationId = events.tokenRejected(request, { route: refusal.route, reason: body.code, startedAt, endedAt, time, claimedPaymentHash, scheme }, facts);
      }
      events.challengeIssued(
        request,
        {
          route: refusal.route,
          paymentHash: body.paymentHash,
          amountMsat: invoicedSats * 1000,
          invoice: body.invoice,
          startedAt,
          endedAt,
          time,
          causationId,
        },
        facts,
      );
    },
    served(request, paid: Paid, status, { startedAt, endedAt, time }) {
      const { paymentHash, amountMsat, route, scheme } = paid.payment;
      events.requestServed(request, { route, paymentHash, amountMsat, status, startedAt, endedAt, time, issuedAtSeconds: paid.expiresAt - ttl, scheme });
    },
  };
}
