// Audit events: CloudEvents 1.0 in the JSON format, with the data this package
// puts in them. Types only, so the core can name them without loading the builder.

/** Every event type starts with this reverse-DNS namespace (the package's own). */
export const EVENT_TYPE_PREFIX = 'dev.l402paywall';

export const EVENT_TYPES = {
  /** Server: a 402 challenge (invoice and token) was sent. */
  challengeIssued: `${EVENT_TYPE_PREFIX}.server.challenge.issued`,
  /** Server: a paid request was answered (status below 500). */
  serverRequestServed: `${EVENT_TYPE_PREFIX}.server.request.served`,
  /** Server: a credential was refused; `data.reason` says why. */
  tokenRejected: `${EVENT_TYPE_PREFIX}.server.token.rejected`,
  /** Client: a 402 challenge came back. */
  challengeReceived: `${EVENT_TYPE_PREFIX}.client.challenge.received`,
  /** Client: an invoice was not paid; `data.reason` says why. */
  invoiceRefused: `${EVENT_TYPE_PREFIX}.client.invoice.refused`,
  /** Client: an invoice was paid (the preimage checked against its hash). */
  paymentSent: `${EVENT_TYPE_PREFIX}.client.payment.sent`,
  /** Client: the paid retry was answered. */
  clientRequestServed: `${EVENT_TYPE_PREFIX}.client.request.served`,
  /** Server: a prepaid session opened with its deposit (`data.payment`). */
  sessionOpened: `${EVENT_TYPE_PREFIX}.server.session.opened`,
  /** Server: a session's top-up was paid (`data.payment`). */
  sessionToppedUp: `${EVENT_TYPE_PREFIX}.server.session.topped-up`,
  /** Server: a top-up came after its session's refund had started: not taken, its payment still the client's (`data.payment`, `data.prepaid.refundState`). */
  sessionTopUpRefused: `${EVENT_TYPE_PREFIX}.server.session.topup-refused`,
  /** Server: a batch of a session's units was spent (`data.prepaid.units`), never one event per unit. */
  sessionSpent: `${EVENT_TYPE_PREFIX}.server.session.spent`,
  /** Server: a session closed (`data.prepaid.because`: client or idle) with what it was paid, spent and refunds. */
  sessionClosed: `${EVENT_TYPE_PREFIX}.server.session.closed`,
  /** Server: a refund attempt ended (`data.prepaid.refund.state`: paid, failed, given-up). */
  sessionRefunded: `${EVENT_TYPE_PREFIX}.server.session.refunded`,
} as const;

export type L402EventType = (typeof EVENT_TYPES)[keyof typeof EVENT_TYPES];

/** Request headers a client may send to name itself; the server reports them as declared, never proven. */
export const AGENT_ID_HEADER = 'l402-agent-id';
export const SESSION_ID_HEADER = 'l402-session-id';

/** How a receiver checks a payment proof without the preimage. */
export const PAYMENT_VERIFICATION =
  "sha256(preimage) = paymentHash. The payee's Lightning node reports the hash settled for amountMsat; only the payer holds the preimage; an invoice, when given, is signed by the payee's node and names both.";

export interface L402Event<Data = L402EventData> {
  specversion: '1.0';
  /** Unique per source; also the Standard Webhooks `webhook-id`, so retries keep it. */
  id: string;
  /** A URI naming the emitter, from configuration (server: events.source, else urn:l402-paywall:server:<agent id>; client: urn:l402-paywall:agent:<agent id>). */
  source: string;
  type: L402EventType;
  /** RFC 3339. */
  time: string;
  /** The route (server) or the URL without its query (client). */
  subject: string;
  datacontenttype: 'application/json';
  dataschema?: string;
  /** W3C trace context of the request the event belongs to (CloudEvents distributed tracing extension). */
  traceparent: string;
  data: Data;
}

export interface AgentIdentity {
  /** Configured by the operator who runs the emitter. */
  id?: string;
  /** What the other side said it was (server: the l402-agent-id header); never proven. */
  declared?: { id: string; proven: false };
}

export interface Causation {
  /** The event's W3C traceparent: a span in the request's trace, or a trace this event started. */
  traceparent: string;
  /** True when the request carried no valid traceparent and this emitter started the trace. */
  traceStarted: boolean;
  /**
   * The id of the event that caused this one, from the same source. A server's
   * request.served names the challenge.issued of its payment hash, whose id is
   * `challenge-<payment hash>`.
   */
  causationId?: string;
}

export interface PaymentProof {
  /** 32 bytes, lower-case hex. */
  paymentHash: string;
  amountMsat: number;
  /** The BOLT11 invoice (public: it was sent in the challenge), when known. */
  invoice?: string;
  /** How to verify it (PAYMENT_VERIFICATION). */
  verification: string;
}

export interface L402EventData {
  agent: AgentIdentity;
  /**
   * Server: `declared` when the client sent l402-session-id, otherwise `payment`
   * (the payment hash ties challenge, payment and use; absent on token.rejected,
   * whose hash is only claimed). Client: `declared` when the caller set
   * sessionId, otherwise `client` (one per onEvent handler).
   */
  session?: { id: string; kind: 'declared' | 'payment' | 'client' | 'prepaid' };
  causation: Causation;
  payment?: PaymentProof;
  /** Reason code, on token.rejected (the paywall's rejection codes) and invoice.refused (the client's). */
  reason?: string;
  /** Server token.rejected and request.served: the scheme of the credential, `L402` or `Payment` (docs/mpp.md). */
  scheme?: 'L402' | 'Payment';
  /** token.rejected: the payment hash the refused token names, when it could be read (a claim, not a proof; never the session). */
  claimedPaymentHash?: string;
  /**
   * token.rejected: the request's valid traceparent (a claim: anyone can send someone else's). The
   * events of a refused credential start a trace of their own instead of joining that one.
   */
  claimedTraceparent?: string;
  /** payment.sent: the routing fee the wallet reported, msat. */
  feeMsat?: number;
  /** Client request.served: another concurrent call paid this invoice and this one used its proof. */
  paidByAnotherCall?: true;
  /** Session events (server.session.*): the prepaid session's money; `session` is `{id, kind: "prepaid"}`, its id the deposit's payment hash. */
  prepaid?: PrepaidSessionFacts;
  /** Milliseconds. */
  timing: {
    /** Request arrival (server) or first send (client) to the challenge. */
    challengeMs?: number;
    /** Challenge to payment: client, measured; server, from the token's issue second (so within a second). */
    payMs?: number;
    /** Arrival of the paid request (server) or the paid retry (client) to its answer. */
    serveMs?: number;
  };
  /** What happened around it: the request, and (client) the budget, retries and refusals so far. */
  context: {
    /** The request's method; absent on session events, which may come from no request (a refund paid by a cron). */
    method?: string;
    status?: number;
    /** Client: msat paid through this client so far and what its budget still allows (absent: no budget). */
    budget?: { spentMsat: number; leftMsat?: number };
    /** Client: paid retries sent in this session (on request.served, this one included). */
    retries?: number;
    /** Client: invoices refused in this session (on invoice.refused, this one included). */
    refusals?: number;
  };
}

/** What a session event says of the session's money (msat); which members are there depends on the event's type. */
export interface PrepaidSessionFacts {
  /** opened: the price of one unit. */
  unitPriceMsat?: number;
  /** topped-up: the session had closed when it was paid; the amount goes back with the refund. */
  closedBeforehand?: boolean;
  /** topup-refused: where the session's refund stood (paying, paid, given-up); the top-up was not taken. */
  refundState?: 'paying' | 'paid' | 'given-up';
  /** spent: units and msat in this batch. */
  units?: number;
  amountMsat?: number;
  /** spent, closed: the session's totals after the event (paid in: deposit and top-ups). */
  paidMsat?: number;
  spentMsat?: number;
  /** closed: who closed it: the client, or the server after it was idle past its timeout. */
  because?: 'client' | 'idle';
  /** closed: what goes back to the client; 0 when nothing is left. */
  refundMsat?: number;
  /** refunded: how the attempt ended; `retryAt` (RFC 3339) and `error` when failed, `reason` when given up. */
  refund?: { state: 'paid' | 'failed' | 'given-up'; amountMsat: number; attempt: number; retryAt?: string; error?: string; reason?: string };
  /** spent: the batch ends with work metered by reported usage, settled to its usage or at the reservation (and why). */
  metered?: { reservedUnits: number; usedUnits?: number; chargedUnits: number; settledAt: 'usage' | 'reservation'; reason?: string };
}

/** withL402's `events` option (paywall/options.ts), and serverEvents()'s: here, with the format, so the core names it without loading the builder. */
export interface ServerEventOptions {
  /** This service's id, as the operator names it (data.agent.id). */
  agentId?: string;
  /**
   * The CloudEvents `source`: this service's public URL as the operator configures it
   * (https://api.example.com). Default urn:l402-paywall:server:<agentId or "anonymous">.
   * Never a request's own origin: that is built from its Host header, which the client chooses.
   */
  source?: string;
  /** onEvent promises that may be pending at once before new events are dropped (default 1000). */
  maxPending?: number;
  /**
   * withL402 builds its events after the response, in a later task: on a
   * serverless platform pass its waitUntil (Vercel: from @vercel/functions;
   * Workers: ctx.waitUntil) so that the function lives until they are built.
   * Default: withL402's own `waitUntil` option.
   */
  waitUntil?: (promise: Promise<unknown>) => void;
}
