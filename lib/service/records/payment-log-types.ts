// What the payment log (payment-log.ts) and its outbox (payment-outbox.ts) both
// handle. The log drives the outbox; kept here, these types let the outbox know
// them without importing the log back.

/** One paid request, as logged. */
export interface PaymentLogEntry {
  paymentHash: string;
  endpoint: string;
  /** Whole satoshis (prices are whole satoshis, so amountMsat / 1000 is exact). */
  amountSats: number;
  /** The Lightning Address the payment was for, when the endpoint has an owner. */
  ownerAddress?: string | null;
  /** When the request was paid; default now. Kept with the entry, so a late write keeps the true time. */
  paidAt?: Date | string;
  /** A prepaid session's deposit or top-up: the session's id (the deposit's payment hash). */
  sessionId?: string;
}

/** What a pass over the outbox did. */
export interface FlushResult {
  /** Outbox entries now in the database (rows already present count: they are written). */
  written: number;
  /** Entries still waiting (including ones other flushers hold right now). */
  pending: number;
  /** Why the flush stopped early (the database failed), without secrets. */
  error?: string;
}
