// The one interface every Lightning backend implements. Amounts are integer
// millisatoshis; hashes and preimages are lower-case hex.

export interface CreateInvoiceRequest {
  amountMsat: number;
  /**
   * Shown to the payer (BOLT11 `d`). With descriptionHash set, the text it is
   * the hash of (backends that hash a description themselves, Core Lightning, need it).
   */
  memo?: string;
  /** Hex SHA256 committed to instead of a memo (BOLT11 `h`, LNURL-pay). */
  descriptionHash?: string;
  expirySeconds?: number;
  /** Where the backend should announce the payment, for backends that take a per-invoice webhook URL (dev, Phoenixd, LNbits). */
  webhookUrl?: string;
}

export interface CreatedInvoice {
  invoice: string;
  paymentHash: string;
  amountMsat: number;
  /** Unix seconds after which the invoice can no longer be paid. */
  expiresAt: number;
}

/** An invoice whose payer names the amount (a prepaid session's return invoice, for its refund). */
export type CreateAmountlessInvoiceRequest = Omit<CreateInvoiceRequest, 'amountMsat'>;
export type CreatedAmountlessInvoice = Omit<CreatedInvoice, 'amountMsat'>;

export interface InvoiceStatus {
  paymentHash: string;
  settled: boolean;
  /** Present once settled. */
  preimage?: string;
  amountMsat: number;
}

export interface PayInvoiceRequest {
  /** A BOLT11 invoice with an amount; the caller has decoded and checked it. */
  invoice: string;
  /** Routing fee the backend may spend at most (integer msat). */
  maxFeeMsat: number;
}

/** Paying an invoice that names no amount (a session's return invoice): the payer names it. */
export interface PayAmountlessInvoiceRequest extends PayInvoiceRequest {
  /** What to pay, integer msat. */
  amountMsat: number;
}

export interface PaidInvoice {
  paymentHash: string;
  preimage: string;
  feeMsat: number;
}

/** An outgoing payment as the backend knows it. */
export interface PaymentStatus {
  paymentHash: string;
  /** `pending`: in flight, do not pay again; `failed`: definitely not paid, a new attempt is safe. */
  state: 'pending' | 'succeeded' | 'failed';
  preimage?: string;
  feeMsat?: number;
}

/** A verified webhook delivery: which incoming payment it is about. */
export interface WebhookEvent {
  paymentHash: string;
  /** The backend's delivery id, when it has one (deduplication). */
  eventId?: string;
}

export interface WebhookDelivery {
  headers: Headers;
  /** The raw body, exactly as received: signatures are over these bytes. */
  body: string;
  /** Unix ms; tests pass it to check timestamp tolerance. */
  now?: number;
}

export interface LightningProvider {
  readonly name: string;
  /**
   * True when a payment through this backend never costs a routing fee (the
   * embedded dev node settles internally). A session refund then keeps no
   * fee back and is paid whole; on any other backend the refund is paid less
   * its routing fee limit, which is charged to it (schemes/session/refunds.ts).
   */
  readonly noRoutingFee?: boolean;
  createInvoice(request: CreateInvoiceRequest): Promise<CreatedInvoice>;
  /**
   * Makes an invoice that names no amount, checked as createInvoice's are
   * (decoded, its hash the one reported, no amount in it). Absent on backends
   * that cannot (LNbits, NWC): a wallet on them cannot open prepaid sessions.
   */
  createAmountlessInvoice?(request: CreateAmountlessInvoiceRequest): Promise<CreatedAmountlessInvoice>;
  /** null when the backend does not know the hash. */
  lookupInvoice(paymentHash: string): Promise<InvoiceStatus | null>;
  /**
   * Pays an invoice. Throws PaymentFailed when the backend definitely did not
   * pay (no route, no balance), ProviderUnavailable when the outcome is unknown
   * (timeout, 5xx): then lookupPayment tells, and the invoice must not be paid
   * again with a new one until it says `failed`.
   */
  payInvoice(request: PayInvoiceRequest): Promise<PaidInvoice>;
  /**
   * Pays an invoice without an amount with `amountMsat` (refunds of prepaid
   * sessions go to such an invoice). Errors as payInvoice; an invoice that
   * names an amount is refused (PaymentFailed). Absent on backends that cannot.
   */
  payAmountlessInvoice?(request: PayAmountlessInvoiceRequest): Promise<PaidInvoice>;
  /** null when the backend has no outgoing payment with this hash. */
  lookupPayment(paymentHash: string): Promise<PaymentStatus | null>;
  /** What the wallet holds, integer msat. */
  balance(): Promise<{ balanceMsat: number }>;
  /**
   * Verifies a webhook delivery (signature over the raw body, in constant time,
   * timestamp tolerance where the scheme has one) and says which payment it is
   * about. Throws WebhookRejected when it is not authentic. Backends that do not
   * sign their webhooks return the hash from the body: the caller confirms it by
   * lookupInvoice, which is the source of truth in every case. Returns null for
   * an authentic delivery that is not about an incoming payment (an outgoing
   * payment, an on-chain event): acknowledge it and do nothing, or the backend
   * keeps redelivering. Absent when the backend sends no webhooks.
   */
  readWebhook?(delivery: WebhookDelivery): WebhookEvent | null;
}

/** The backend could not be reached or answered nonsense; callers answer 503. */
export class ProviderUnavailable extends Error {
  override readonly name = 'ProviderUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The backend refused a payment and did not make it (safe to try again later, with a new invoice). */
export class PaymentFailed extends Error {
  override readonly name = 'PaymentFailed';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The backend refused our credentials (or they do not fit it): an operator must fix the named setting; definitely nothing was paid. */
export class ProviderConfigError extends Error {
  override readonly name = 'ProviderConfigError';
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
  }
}

/** The backend cannot do what was asked (e.g. a fractional-sat amount on a sat-only API); no retry will help, nothing was paid. */
export class ProviderUnsupported extends Error {
  override readonly name = 'ProviderUnsupported';
}

/** A webhook delivery that is not authentic (bad, missing or stale signature); answer 401, do nothing. */
export class WebhookRejected extends Error {
  override readonly name = 'WebhookRejected';
  constructor(message: string) {
    super(message);
  }
}
