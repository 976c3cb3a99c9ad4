// A request paid by a session, and the batching of what it spends: the
// units a request (and a metered stream under it) spends are told to
// onSession in batches, not per unit. Apart from the seller (seller.ts),
// which decides; this is what a decided request carries through its handler.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import type { AttemptNames } from '../../core/attempts.js';
import type { Paid, PaidRequest } from '../../core/decision.js';
import type { AtReservation, ReservationSettled, ReserveAnswer } from '../../core/metering.js';
import { PROBLEM_OF, problemMembers, refusalContentType } from '../../core/refusals.js';
import { REJECTIONS } from '../../core/rejections.js';
import type { ReplayStore } from '../../core/replay.js';
import type { Offer } from '../../core/scheme.js';
import { RESERVE_BATCHED, type BatchingSessionUse } from './batched-reserve.js';
import { sessionReceipt, type VerifiedSessionAction } from './codec.js';
import type { SessionAnswer, SessionLedger, SessionRecord } from './ledger.js';
import { SPENT_BATCH_UNITS, tell, type SessionObserver } from './observer.js';
import { closedObservation } from './refunds.js';

/** What spending needs of the seller's options. */
export interface SpendingOptions {
  unitPriceSats: number;
  ledger: SessionLedger;
  onSession?: SessionObserver;
}

/** What spending needs of the paywall: its replay store (a held stream's mark), attempt names and error channel. */
export interface SpendingServices {
  replay: ReplayStore;
  attempts: AttemptNames;
  onError(error: unknown, context: string): void;
}

/** What a top-up refusal says of the balance: what is left, and what the work needed. */
type TopUpDetail = { balanceMsat: number; requiredMsat: number };

/** The replay-store mark of a session's one held stream. */
const topUpWaitMark = (sessionId: string) => bytesToHex(sha256(utf8ToBytes(`l402-paywall held stream ${sessionId}`)));

/**
 * A request paid by a session (open or bearer): one unit spent. Kept when
 * the handler fails: the ledger has no give-back, and a retry is one more
 * unit of the client's own balance (docs/sessions.md).
 *
 * What the request spends (its unit, and what its handler meters) is told to
 * onSession in batches, not per unit: once the answer has gone out (`served`),
 * or, for a metered stream that holds the report open (`hold`), once the
 * stream is done; a long stream also every SPENT_BATCH_UNITS units and when
 * a spend is refused (it pauses for a top-up, or the session closed).
 */
export class SessionPaid implements Paid {
  readonly kind = 'paid';
  #payment: PaidRequest | undefined;
  /** Units spent and not yet told; the request's own unit to begin with. */
  #units = 1;
  #amountMsat: number;
  /** The session after the latest spend: its totals go with the batch. */
  #latest: SessionRecord;
  #holds = 0;
  #answered = false;
  /** Whether the request's own unit is still to count as the first unit of a reservation. */
  #prepaidUnit = true;
  /** The latest metered work settled: what the receipt says of it. */
  #metered: ReservationSettled | undefined;

  constructor(
    private readonly options: SpendingOptions,
    private readonly services: SpendingServices,
    private readonly verified: VerifiedSessionAction,
    private readonly route: string,
    private readonly at: number,
    spentUnit: SessionRecord,
    /** A fresh session challenge for a top-up (the scheme's offer for this request's terms). */
    private readonly offerTopUp?: (request: Request) => Promise<Offer | undefined>,
  ) {
    this.#amountMsat = options.unitPriceSats * 1000;
    this.#latest = spentUnit;
  }

  get expiresAt(): number {
    return this.verified.expiresAt;
  }

  get payment(): PaidRequest {
    const { options, verified } = this;
    const session: BatchingSessionUse = {
      id: verified.sessionId,
      unitPriceSats: options.unitPriceSats,
      spend: (units: number) => this.#spend(units),
      hold: () => this.#hold(),
      claimTopUpWait: (untilMs: number) => this.#claimTopUpWait(untilMs),
      ...(options.ledger.reserve &&
        options.ledger.settle && {
          reserve: (units: number) => this.#reserve(units, false),
          [RESERVE_BATCHED]: (units: number) => this.#reserve(units, true),
        }),
      ...(this.offerTopUp && { topUpRefusal: (request: Request, detail: TopUpDetail) => this.#topUpRefusal(request, detail) }),
    };
    return (this.#payment ??= {
      paymentHash: verified.sessionId,
      route: this.route,
      amountMsat: options.unitPriceSats * 1000,
      scheme: 'Payment',
      challengeId: verified.challengeId,
      session,
    });
  }

  get receipt(): string {
    const metered = this.#metered;
    return sessionReceipt({
      challengeId: this.verified.challengeId,
      sessionId: this.verified.sessionId,
      at: this.at,
      ...(metered && {
        metered: {
          units: metered.chargedUnits,
          spentSats: metered.chargedUnits * this.options.unitPriceSats,
          settledAt: metered.settledAt,
          ...(metered.reason !== undefined && { reason: metered.reason }),
        },
      }),
    });
  }

  release(): Promise<void> {
    // The handler failed: the unit stays spent, and is told.
    this.served();
    return Promise.resolve();
  }

  served(): void {
    this.#answered = true;
    if (this.#holds === 0) this.#tell();
  }

  async #spend(units: number): Promise<SessionAnswer> {
    const { options, verified } = this;
    if (!Number.isSafeInteger(units) || units <= 0) throw new RangeError(`units must be a positive whole number, got ${units}`);
    const amountMsat = units * options.unitPriceSats * 1000;
    const answer = await options.ledger.spend(verified.sessionId, amountMsat, Date.now());
    if (answer.ok) {
      this.#units += units;
      this.#amountMsat += amountMsat;
      this.#latest = answer.session;
      if (this.#units >= SPENT_BATCH_UNITS) this.#tell();
      return answer;
    }
    this.#tell();
    if (answer.reason === 'idle' && answer.session) tell(options.onSession, { ...closedObservation(answer.session), route: this.route }, this.services.onError);
    return answer;
  }

  /**
   * Reserves `units` in one step of the ledger (reserve), the request's own
   * unit counted as the first of the first reservation (unless `batched`: a
   * metered stream counts that unit for its first chunk itself); settled once
   * (settle). The request's report waits for the settle (a hold).
   */
  async #reserve(units: number, batched: boolean): Promise<ReserveAnswer> {
    const { options, verified } = this;
    if (!Number.isSafeInteger(units) || units <= 0) throw new RangeError(`units must be a positive whole number, got ${units}`);
    const unitMsat = options.unitPriceSats * 1000;
    const prepaid = !batched && this.#prepaidUnit ? 1 : 0;
    const reservedMsat = (units - prepaid) * unitMsat;
    if (!Number.isSafeInteger(reservedMsat)) throw new RangeError(`a reservation of ${units} units is too large`);
    const id = bytesToHex(randomBytes(16));
    if (prepaid) this.#prepaidUnit = false;
    let answer: SessionAnswer;
    try {
      answer = await options.ledger.reserve!(verified.sessionId, id, reservedMsat, Date.now());
    } catch (error) {
      if (prepaid) this.#prepaidUnit = true;
      // Its answer may be lost after it landed: released (settled to nothing) if so, best effort; else it stays spent, as a process that dies does.
      options.ledger.settle!(verified.sessionId, id, 0, Date.now()).catch(() => {});
      throw error;
    }
    if (!answer.ok) {
      if (prepaid) this.#prepaidUnit = true;
      // A batched reservation refused is tried again smaller, or spent unit by unit, whose refusal tells the batch.
      if (!batched) this.#tell();
      if (answer.reason === 'idle' && answer.session)
        tell(options.onSession, { ...closedObservation(answer.session), route: this.route }, this.services.onError);
      return { ok: false, reason: answer.reason, balanceMsat: answer.balanceMsat, ...(answer.session && { session: answer.session }) };
    }
    this.#latest = answer.session;
    const done = this.#hold();
    let settled: Promise<ReservationSettled> | undefined;
    const settle = (usedUnits: number | undefined, reason?: AtReservation) =>
      (settled ??= this.#settle(id, units, prepaid, usedUnits, reason, batched).finally(done));
    return { ok: true, balanceMsat: answer.balanceMsat, reservation: { id, units, settle } };
  }

  async #settle(
    id: string,
    units: number,
    prepaid: number,
    usedUnits: number | undefined,
    reason: AtReservation = 'no-usage',
    batched = false,
  ): Promise<ReservationSettled> {
    const { options, verified } = this;
    const unitMsat = options.unitPriceSats * 1000;
    const reported = usedUnits !== undefined && Number.isSafeInteger(usedUnits) && usedUnits >= 0 && Number.isSafeInteger(usedUnits * unitMsat);
    // At the reservation: settled to the whole of it, which removes it from the ledger and changes no balance.
    const ledgerUsed = reported ? Math.max(0, usedUnits - prepaid) : units - prepaid;
    let outcome: ReservationSettled;
    try {
      const answer = await options.ledger.settle!(verified.sessionId, id, ledgerUsed * unitMsat, Date.now());
      if (answer.ok) {
        const chargedUnits = answer.chargedMsat / unitMsat;
        this.#units += chargedUnits;
        this.#amountMsat += answer.chargedMsat;
        this.#latest = answer.session;
        outcome = reported
          ? { reservedUnits: units, usedUnits, chargedUnits: chargedUnits + prepaid, settledAt: 'usage' }
          : { reservedUnits: units, chargedUnits: chargedUnits + prepaid, settledAt: 'reservation', reason };
      } else {
        // Closed meanwhile (its close counted the reservation spent), or settled before: it stays spent.
        this.#units += units - prepaid;
        this.#amountMsat += (units - prepaid) * unitMsat;
        if (answer.session) this.#latest = answer.session;
        outcome = {
          reservedUnits: units,
          ...(reported && { usedUnits }),
          chargedUnits: units,
          settledAt: 'reservation',
          reason: answer.reason === 'closed' ? 'closed' : reason,
        };
      }
    } catch (error) {
      this.services.onError(error, 'settling a metered reservation failed; it stays spent');
      this.#units += units - prepaid;
      this.#amountMsat += (units - prepaid) * unitMsat;
      outcome = { reservedUnits: units, ...(reported && { usedUnits }), chargedUnits: units, settledAt: 'reservation', reason: 'store-failed' };
    }
    if (batched) {
      if (this.#units >= SPENT_BATCH_UNITS) this.#tell();
    } else {
      this.#metered = outcome;
      this.#tell(outcome);
    }
    return outcome;
  }

  /** A 402 with a fresh session challenge for a top-up, as the paywall's own INSUFFICIENT_BALANCE refusal says it. */
  async #topUpRefusal(request: Request, { balanceMsat, requiredMsat }: TopUpDetail): Promise<Response> {
    const code = 'INSUFFICIENT_BALANCE';
    const message = REJECTIONS[code];
    let offer: Offer | undefined;
    try {
      offer = await this.offerTopUp!(request);
    } catch (error) {
      this.services.onError(error, 'making a top-up challenge failed; the 402 offers none');
    }
    const headers = new Headers({ 'content-type': refusalContentType(request), 'cache-control': 'no-store' });
    for (const value of offer?.authenticate ?? []) headers.append('www-authenticate', value);
    const body = {
      error: message,
      code,
      ...problemMembers(PROBLEM_OF[code], message),
      ...offer?.body,
      sessionId: this.verified.sessionId,
      balanceMsat,
      balanceSpent: this.#latest.spentMsat / 1000,
      requiredMsat,
    };
    return new Response(JSON.stringify(body), { status: 402, headers });
  }

  /**
   * The session's one held stream, marked in the replay store (shared by the
   * instances, with an expiry, so a mark whose instance died goes by itself):
   * the ledger stays as it is, and a hold costs one claim and one release.
   */
  async #claimTopUpWait(untilMs: number): Promise<(() => Promise<void>) | undefined> {
    const { replay, onError } = this.services;
    const mark = topUpWaitMark(this.verified.sessionId);
    const attempt = this.services.attempts.next();
    const expiresAt = Math.ceil(untilMs / 1000);
    const release = () => replay.release(mark, attempt, expiresAt);
    try {
      if (!(await replay.claim(mark, 1, expiresAt, attempt))) return undefined;
    } catch (error) {
      onError(error, 'the replay store could not mark a held stream; it ends instead of holding');
      // The claim may have landed before its answer was lost: given back (a release bars the attempt either way).
      await release().catch(() => {});
      return undefined;
    }
    return () => release().catch((error: unknown) => onError(error, "giving back a held stream's mark failed; it expires by itself"));
  }

  #hold(): () => void {
    this.#holds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holds -= 1;
      if (this.#holds === 0 && this.#answered) this.#tell();
    };
  }

  /** Tells the batch (with the metered work that ends it, if any). */
  #tell(metered?: ReservationSettled): void {
    if (this.#units === 0 && !metered) return;
    const latest = this.#latest;
    tell(
      this.options.onSession,
      {
        type: 'spent',
        sessionId: latest.id,
        route: this.route,
        units: this.#units,
        amountMsat: this.#amountMsat,
        spentMsat: latest.spentMsat,
        paidMsat: latest.paidMsat,
        ...(metered && { metered: { ...metered } }),
        at: latest.lastActiveAt,
      },
      this.services.onError,
    );
    this.#units = 0;
    this.#amountMsat = 0;
  }
}
