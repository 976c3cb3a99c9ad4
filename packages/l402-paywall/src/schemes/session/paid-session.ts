// A request paid by a session, and the batching of what it spends: the
// units a request (and a metered stream under it) spends are told to
// onSession in batches, not per unit. Apart from the seller (seller.ts),
// which decides; this is what a decided request carries through its handler.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { AttemptNames } from '../../core/attempts.js';
import type { Paid, PaidRequest } from '../../core/decision.js';
import type { SessionUse } from '../../core/metering.js';
import type { ReplayStore } from '../../core/replay.js';
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

  constructor(
    private readonly options: SpendingOptions,
    private readonly services: SpendingServices,
    private readonly verified: VerifiedSessionAction,
    private readonly route: string,
    private readonly at: number,
    spentUnit: SessionRecord,
  ) {
    this.#amountMsat = options.unitPriceSats * 1000;
    this.#latest = spentUnit;
  }

  get expiresAt(): number {
    return this.verified.expiresAt;
  }

  get payment(): PaidRequest {
    const { options, verified } = this;
    const session: SessionUse = {
      id: verified.sessionId,
      unitPriceSats: options.unitPriceSats,
      spend: (units: number) => this.#spend(units),
      hold: () => this.#hold(),
      claimTopUpWait: (untilMs: number) => this.#claimTopUpWait(untilMs),
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
    return sessionReceipt({ challengeId: this.verified.challengeId, sessionId: this.verified.sessionId, at: this.at });
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

  #tell(): void {
    if (this.#units === 0) return;
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
        at: latest.lastActiveAt,
      },
      this.services.onError,
    );
    this.#units = 0;
    this.#amountMsat = 0;
  }
}
