// Pricing by a prepaid balance (the session pricing mode, schemes/session): what
// a request paid that way exposes to the handler (PaidRequest.session), and the
// ledger's record and answers it reads. Types only: the core meters nothing
// itself; the session scheme implements them.

/** Where a session's refund stands. */
export type RefundState =
  /** Nothing to refund: everything paid in was spent. */
  | 'none'
  /** To be paid to the return invoice. */
  | 'due'
  /** An instance holds it and is paying now (until `leaseUntil`). */
  | 'paying'
  /** Paid: the return invoice settled. */
  | 'paid'
  /** The last attempt failed; tried again from `nextAttemptAt`. */
  | 'failed'
  /** No more attempts, for the stated `reason`: the operator's to settle by hand. */
  | 'given-up';

export interface SessionRefund {
  state: RefundState;
  amountMsat: number;
  /** Attempts made so far; the current one's number while `paying`. */
  attempts: number;
  /** When the next attempt may start (due, failed), or when a `paying` lease ends. */
  nextAttemptAt: number;
  lastError?: string;
  /** Why it was given up. */
  reason?: string;
  paidAt?: number;
  /** Attempts that found an earlier payment still in flight and paid nothing: they do not count toward giving up. Absent while none has. */
  inFlightChecks?: number;
}

export interface SessionRecord {
  /** The session's id: the deposit's payment hash. */
  id: string;
  status: 'open' | 'closed';
  /** Everything credited: the deposit and each top-up. */
  paidMsat: number;
  spentMsat: number;
  /** The amountless invoice the refund is paid to. */
  returnInvoice: string;
  /** A session unused this long is closed (and refunded) by the server. */
  idleTimeoutMs: number;
  lastActiveAt: number;
  closedAt?: number;
  closedBecause?: 'client' | 'idle';
  /** Set once closed. */
  refund?: SessionRefund;
}

export type SessionAnswer =
  | { ok: true; balanceMsat: number; session: SessionRecord }
  | { ok: false; reason: SessionRefusal; balanceMsat: number; session?: SessionRecord };

/**
 * Why an action was refused: `unknown` (no such session), `exists` (open
 * replayed), `closed` (closed before), `idle` (closed now, having been idle
 * too long), `insufficient` (balance below the amount), `duplicate` (this
 * top-up was credited before), `refund-started` (a top-up for a closed session
 * whose refund is being paid, paid or given up: not taken, so its payment is
 * still the client's to use), `not-due` / `stale` (refund bookkeeping), `not-reserved` (a reservation
 * settled before, or never made: nothing to settle).
 */
export type SessionRefusal = 'unknown' | 'exists' | 'closed' | 'idle' | 'insufficient' | 'duplicate' | 'refund-started' | 'not-due' | 'stale' | 'not-reserved';

/** Why a reservation was charged in full rather than settled to a reported usage. */
export type AtReservation =
  /** The answer ended without reporting its usage. */
  | 'no-usage'
  /** The upstream failed while answering (its stream broke off). */
  | 'upstream-failed'
  /** The client hung up before the usage was reported. */
  | 'client-gone'
  /** The session was closed meanwhile: its close counted the reservation as spent. */
  | 'closed'
  /** The ledger could not be reached to settle: the reservation stays spent. */
  | 'store-failed';

/** What a settled reservation came to, in units (the request's own unit included). */
export interface ReservationSettled {
  /** The units reserved for the work (the request's own unit included). */
  reservedUnits: number;
  /** The units the answer reported used, when it did. */
  usedUnits?: number;
  /** The units this work was charged in the end. */
  chargedUnits: number;
  /** `usage`: settled to the reported usage; `reservation`: charged the whole reservation, for `reason`. */
  settledAt: 'usage' | 'reservation';
  reason?: AtReservation;
}

/** An open reservation on a session (SessionUse.reserve): settled once. */
export interface SessionReservation {
  /** Its id in the ledger. */
  readonly id: string;
  /** The units reserved (the request's own unit included). */
  readonly units: number;
  /**
   * Settles it: to `usedUnits` when the answer reported them (the unused
   * units go back to the balance; usage above the reservation is taken as
   * far as the balance covers it), else at the reservation for `reason`.
   * Once: a later call answers the first's outcome. Never throws: a ledger
   * that cannot be reached leaves the reservation spent (`store-failed`).
   */
  settle(usedUnits: number | undefined, reason?: AtReservation): Promise<ReservationSettled>;
}

/** A reservation taken, or why not (the ledger's refusal, with the balance). */
export type ReserveAnswer =
  | { ok: true; reservation: SessionReservation; balanceMsat: number }
  | { ok: false; reason: SessionRefusal; balanceMsat: number; session?: SessionRecord };

/** A session a paid request runs under (PaidRequest.session): the seam for metering a streamed answer. */
export interface SessionUse {
  /** The session's id: its deposit's payment hash. */
  id: string;
  unitPriceSats: number;
  /** Spends `units` more units in one atomic step: refused (`insufficient`, nothing taken) when the balance does not cover them all. */
  spend(units: number): Promise<SessionAnswer>;
  /**
   * For a layer that spends after the answer has gone out (meteredEventStream):
   * the request's spending is reported (the session's observer) once the
   * function it answers is called, when the stream is done, rather than when
   * the answer leaves.
   */
  hold?(): () => void;
  /**
   * For a metered stream that runs dry: claims the session's one wait for a
   * top-up until `untilMs` (unix ms), marked in the paywall's replay store so
   * that one stream per session is held across every instance sharing it.
   * Answers what gives the mark back, or undefined when another stream holds
   * it (or the store could not say: onError is told, and nothing is held).
   */
  claimTopUpWait?(untilMs: number): Promise<(() => Promise<void>) | undefined>;
  /**
   * For metering by reported usage (meterByUsage): reserves `units` of the
   * session for work whose cost is known only once it is done, in one atomic
   * step of the ledger (refused whole when the balance cannot cover them).
   * The unit the request itself spent counts as the first unit of its first
   * reservation. What the request spends is reported once it is settled.
   * Its settling is told to the session's observers at once, as metered
   * work (its reserved, used and charged units), and in the request's receipt.
   * Absent when the ledger keeps no reservations.
   */
  reserve?(units: number): Promise<ReserveAnswer>;
  /**
   * A 402 asking for a top-up of this session (a fresh session challenge,
   * INSUFFICIENT_BALANCE), for a handler whose metered work the balance
   * cannot cover: the client tops up and sends the request again.
   */
  topUpRefusal?(request: Request, detail: { balanceMsat: number; requiredMsat: number }): Promise<Response>;
}
