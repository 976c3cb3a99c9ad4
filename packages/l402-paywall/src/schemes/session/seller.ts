// Selling a route by the session: the Payment scheme's intent="session"
// (draft-lightning-session-00; docs/sessions.md) as withL402's `session`
// option: a pricing mode, one scheme of the paywall (core/scheme.ts) beside
// L402 and the charge. Its offer in each 402 is a session challenge (a fresh
// deposit invoice, to open or to top up); it recognises every credential that
// echoes a session challenge (the Payment credential decoded once, shared with
// the charge), verifies it statelessly (codec.ts) and acts on the ledger
// (ledger.ts) in one atomic step per action:
//
//   open   the deposit's payment hash claimed in the replay store (it opens
//          exactly one thing and never passes as a charge), the session
//          opened with it, one unit spent, the request served
//   bearer one unit spent, the request served; short: a 402 to top up with
//   topUp  the fresh deposit's payment hash claimed, credited once: 200 {"status":"ok"}
//   close  closed, the refund paid at once (refunds.ts): 200 with how it went
//
// It lives outside the edge core (withL402's bundle): refunds decode invoices,
// which needs the elliptic-curve code. It is exported by l402-paywall/sessions
// (and, for compatibility, l402-paywall/lightning). Its batching of what a
// request spends lives in SessionPaid (paid-session.ts); what it tells goes to onSession (observer.ts).
import type { AttemptNames } from '../../core/attempts.js';
import type { InvoiceMaker, InvoiceProvider } from '../../core/invoices.js';
import { codeOfProblem } from '../../core/refusals.js';
import { REJECTIONS, type RejectionCode } from '../../core/rejections.js';
import type { ReplayStore } from '../../core/replay.js';
import { hasAuthScheme, type Offer, type OfferContext, type PaywallScheme, type Presented, type Terms, type Verdict } from '../../core/scheme.js';
import type { BindingKeyring } from '../payment/binding.js';
import { echoesIntent, formatChallenge, readPaymentAuthorization, type PaymentReading } from '../payment/charge.js';
import { invoiceNetwork } from '../payment/network.js';
import {
  SESSION_INTENT,
  sessionChallenge,
  sessionCredentialOfReading,
  sessionReceipt,
  verifySessionAction,
  type RefundStatus,
  type VerifiedSessionAction,
} from './codec.js';
import type { SessionAnswer, SessionLedger, SessionRecord } from './ledger.js';
import { closedObservation, refundPayment, refundSession } from './refunds.js';
import { tell, type SessionObserver } from './observer.js';
import { SessionPaid } from './paid-session.js';
import type { LightningProvider } from '../../lightning/provider.js';

/** What a paywall gives its session scheme at construction: its keys, realm, backend, stores and error channel. */
export interface SessionServices {
  binding: BindingKeyring;
  /** The Payment challenges' realm for a request (the paywall's `realm` option). */
  realmOf(request: Request): string;
  provider: InvoiceProvider;
  replay: ReplayStore;
  attempts: AttemptNames;
  invoices: InvoiceMaker;
  onError(error: unknown, context: string): void;
}

/**
 * Selling a route by the session (the Payment scheme's `intent="session"`,
 * draft-lightning-session-00; docs/sessions.md): withL402's `session` option.
 * `lightningSessions({ unitPriceSats, ledger })` makes one; each paywall that
 * takes it builds its own session scheme from it.
 */
export interface SessionSeller {
  /** Throws a TypeError naming the backend when it cannot refund sessions (pay invoices without an amount). */
  check(provider: InvoiceProvider): void;
  /** This seller as one paywall's scheme (core/scheme.ts), with what it needs from that paywall. */
  scheme(services: SessionServices): PaywallScheme;
}

/** @deprecated the per-request bag of callbacks the paywall handed a seller before sessions became a scheme; what a session scheme gets now is SessionServices, once. */
export type SessionContext = SessionServices;

/** @deprecated what a seller's decision came to before sessions became a scheme: now the scheme interface's Verdict. */
export type SessionStep = Verdict;

/** A 402's session challenge: its WWW-Authenticate value and the `session` member of the body. */
export interface SessionOffer {
  header: string;
  body: Record<string, unknown>;
}

export interface LightningSessionsOptions {
  /** Whole satoshis per unit: one request (or, through Payment.session.spend, one chunk of a streamed answer). */
  unitPriceSats: number;
  /** The deposit, in units; default 20, as the draft recommends. */
  depositUnits?: number;
  /** A session unused this long is closed and refunded by the server; default 300 (the draft's 5 minutes). */
  idleTimeoutSeconds?: number;
  /** Where sessions live: memorySessionLedger() for one process, scriptedSessionLedger over Redis or Upstash for many. */
  ledger: SessionLedger;
  /** What a unit is, shown to the client (the request's `unitType`); default "request". */
  unitType?: string;
  /** Routing fee the service spends on a refund; default 1% of it, at least 1 sat (refunds.ts). */
  maxRefundFeeMsat?: (amountMsat: number) => number;
  /**
   * Told of each deposit, top-up, batch of units spent, close and refund
   * (observer.ts), never awaited: the operator's records (payment log, stats)
   * and audit events. Give the cron's closeIdleSessions and refundDue the same
   * observer (RefundOptions.onSession).
   */
  onSession?: SessionObserver;
}

/**
 * The `session` option of withL402: sells the route by the session beside
 * the charge. Throws a TypeError on options that cannot work; withL402 throws
 * one at construction when its provider cannot pay invoices without an
 * amount (refunds).
 */
export function lightningSessions(options: LightningSessionsOptions): SessionSeller {
  return new LightningSessions(checkSessionOptions(options));
}

type Checked = Required<Omit<LightningSessionsOptions, 'maxRefundFeeMsat' | 'onSession'>> & Pick<LightningSessionsOptions, 'maxRefundFeeMsat' | 'onSession'>;

function checkSessionOptions(options: LightningSessionsOptions): Checked {
  const fail = (message: string): never => {
    throw new TypeError(`lightningSessions: ${message}`);
  };
  if (!options || typeof options !== 'object') fail('needs options { unitPriceSats, ledger, depositUnits?, idleTimeoutSeconds? }');
  const { unitPriceSats, depositUnits = 20, idleTimeoutSeconds = 300, ledger, unitType = 'request', maxRefundFeeMsat, onSession } = options;
  if (!Number.isSafeInteger(unitPriceSats) || unitPriceSats <= 0) fail(`unitPriceSats must be a positive whole number of satoshis, got ${unitPriceSats}`);
  if (!Number.isSafeInteger(depositUnits) || depositUnits <= 0) fail(`depositUnits must be a positive whole number, got ${depositUnits}`);
  if (!Number.isSafeInteger(unitPriceSats * depositUnits * 1000)) fail('the deposit (unitPriceSats × depositUnits) is too large');
  if (!Number.isSafeInteger(idleTimeoutSeconds) || idleTimeoutSeconds <= 0)
    fail(`idleTimeoutSeconds must be a positive whole number, got ${idleTimeoutSeconds}`);
  for (const name of ['open', 'spend', 'topUp', 'close', 'get', 'claimRefund', 'settleRefund'] as const)
    if (typeof ledger?.[name] !== 'function') fail('ledger must be a session ledger (memorySessionLedger(), or scriptedSessionLedger over Redis)');
  if (typeof unitType !== 'string' || unitType.length > 64) fail('unitType must be a string of at most 64 characters');
  if (maxRefundFeeMsat !== undefined && typeof maxRefundFeeMsat !== 'function') fail('maxRefundFeeMsat must be a function');
  if (onSession !== undefined && typeof onSession !== 'function') fail('onSession must be a function');
  return { unitPriceSats, depositUnits, idleTimeoutSeconds, ledger, unitType, ...(maxRefundFeeMsat && { maxRefundFeeMsat }), ...(onSession && { onSession }) };
}

const refused = (code: RejectionCode, extra?: Record<string, unknown>, message: string = REJECTIONS[code]): Verdict => ({
  kind: 'refuse',
  reason: { code, message, ...(extra && { extra }) },
});

class LightningSessions implements SessionSeller {
  constructor(private readonly options: Checked) {}

  get unitPriceSats(): number {
    return this.options.unitPriceSats;
  }

  check(provider: InvoiceProvider): void {
    const p = provider as Partial<LightningProvider> | undefined;
    if (typeof p?.payAmountlessInvoice !== 'function' || typeof p.lookupPayment !== 'function')
      throw new TypeError(
        `withL402: option \`session\`: the ${p?.name ?? 'given'} backend cannot pay invoices without an amount (payAmountlessInvoice), so it cannot refund sessions; use one that can (docs/sessions.md) or leave sessions off`,
      );
  }

  scheme(services: SessionServices): PaywallScheme {
    return new SessionScheme(this.options, services);
  }
}

/**
 * The session as a scheme of one paywall: it recognises a Payment credential
 * that echoes a session challenge (decoded once, shared with the charge
 * through Presented), verifies it statelessly (codec.ts) and acts on the
 * ledger (ledger.ts) in one atomic step per action; its offer is a fresh
 * deposit invoice's session challenge.
 */
class SessionScheme implements PaywallScheme<PaymentReading & { ok: true }> {
  readonly name = 'Payment';
  readonly sellsWithRouteInvoice = false;
  // A session's unit is kept when the handler fails (SessionPaid); it claims no use of the pipeline's.
  readonly keepsUseOnFailure = true;

  constructor(
    private readonly options: Checked,
    private readonly services: SessionServices,
  ) {}

  recognise(presented: Presented): (PaymentReading & { ok: true }) | undefined {
    if (!hasAuthScheme(presented.authorization, 'payment')) return undefined;
    const reading = presented.read(readPaymentAuthorization);
    return reading.ok && echoesIntent(reading.json, SESSION_INTENT) ? reading : undefined;
  }

  async offer(request: Request, terms: Terms, { memo, expiresAt }: OfferContext): Promise<Offer | undefined> {
    const { unitPriceSats, depositUnits, idleTimeoutSeconds, unitType } = this.options;
    const depositSats = unitPriceSats * depositUnits;
    const invoice = await this.services.invoices.make(depositSats * 1000, `${memo} (session deposit)`.slice(0, 120));
    // A network the Lightning method has no name for (testnet): no session offered, as no charge is.
    if (!invoice || !invoiceNetwork(invoice.invoice)) return undefined;
    const paymentHash = invoice.paymentHash;
    try {
      const challenge = sessionChallenge(this.services.binding, {
        realm: this.services.realmOf(request),
        unitPriceSats,
        depositInvoice: invoice.invoice,
        paymentHash,
        depositSats,
        idleTimeoutSeconds,
        unitType,
        expires: new Date(expiresAt * 1000),
        binding: { ...terms.exact, route: terms.route },
      });
      return {
        authenticate: [formatChallenge(challenge)],
        body: { session: { challengeId: challenge.id, depositInvoice: invoice.invoice, paymentHash, depositSats, unitPriceSats, idleTimeoutSeconds } },
        ownInvoice: invoice,
      };
    } catch (error) {
      this.services.onError(error, 'making the session challenge failed; the 402 offers none');
      return undefined;
    }
  }

  /** A session action (docs/sessions.md): open and bearer serve the request; topUp and close are answered by the paywall, without the handler. */
  async verify(reading: PaymentReading & { ok: true }, request: Request, terms: Terms, nowSeconds: number): Promise<Verdict> {
    const parsed = sessionCredentialOfReading(reading);
    const verified = parsed.ok ? verifySessionAction(this.services.binding, parsed.credential, nowSeconds) : parsed;
    if (!verified.ok)
      return {
        kind: 'refuse',
        reason: { code: codeOfProblem(verified.problem), message: verified.detail, problem: verified.problem },
        ...(verified.problem === 'method-unsupported' && { badRequest: true }),
      };
    if (verified.realm !== this.services.realmOf(request)) return refused('WRONG_REALM');
    if (verified.binding.route !== terms.route) return refused('WRONG_ROUTE');
    for (const name in terms.exact) if (verified.binding[name] !== terms.exact[name]) return refused('CAVEAT_NOT_SATISFIED');
    const context: Sale = {
      route: terms.route,
      // A handler's metered work the balance cannot cover asks for a top-up with a fresh challenge for these terms (SessionUse.topUpRefusal).
      offerTopUp: (topUpRequest) => this.offer(topUpRequest, terms, { invoice: undefined, memo: `${terms.route} top-up`, expiresAt: topUpExpiry() }),
    };
    try {
      switch (verified.action) {
        case 'open':
          return await this.#open(context, verified, nowSeconds);
        case 'bearer':
          return await this.#spendUnit(context, verified, nowSeconds);
        case 'topUp':
          return await this.#topUp(context, verified, nowSeconds);
        case 'close':
          return await this.#close(context, verified, nowSeconds);
      }
    } catch (error) {
      this.services.onError(error, 'session ledger unavailable');
      return { kind: 'unavailable', message: 'Session store temporarily unavailable; retry with the same credential' };
    }
  }

  /** Claims a deposit's (or top-up's) payment hash in the replay store: it opens or credits exactly one thing, and never passes as a charge. */
  async #claimDeposit(verified: VerifiedSessionAction): Promise<{ claimed: boolean; attempt: string }> {
    const attempt = this.services.attempts.next();
    const claimed = await this.services.replay.claim(verified.paidHash!, 1, verified.expiresAt, attempt);
    return { claimed, attempt };
  }

  async #open(context: Sale, verified: VerifiedSessionAction, nowSeconds: number): Promise<Verdict> {
    const { ledger, idleTimeoutSeconds } = this.options;
    const { claimed, attempt } = await this.#claimDeposit(verified);
    if (!claimed) return refused('DEPOSIT_ALREADY_USED');
    let opened: SessionAnswer;
    try {
      opened = await ledger.open(
        { id: verified.sessionId, depositMsat: verified.paidSats! * 1000, returnInvoice: verified.returnInvoice!, idleTimeoutMs: idleTimeoutSeconds * 1000 },
        nowSeconds * 1000,
      );
    } catch (error) {
      // Not opened, or its answer lost: the deposit is given back, so the same credential can open on retry (a second open is refused by the ledger).
      await this.services.replay
        .release(verified.paidHash!, attempt, verified.expiresAt)
        .catch((e: unknown) => this.services.onError(e, 'releasing a deposit failed'));
      throw error;
    }
    if (!opened.ok) return refused('DEPOSIT_ALREADY_USED');
    tell(
      this.options.onSession,
      {
        type: 'opened',
        sessionId: verified.sessionId,
        route: context.route,
        depositMsat: opened.session.paidMsat,
        unitPriceMsat: this.options.unitPriceSats * 1000,
        at: nowSeconds * 1000,
      },
      this.services.onError,
    );
    return this.#spendUnit(context, verified, nowSeconds);
  }

  async #spendUnit(context: Sale, verified: VerifiedSessionAction, nowSeconds: number): Promise<Verdict> {
    const spent = await this.options.ledger.spend(verified.sessionId, this.options.unitPriceSats * 1000, nowSeconds * 1000);
    if (!spent.ok) {
      if (spent.reason === 'idle') await this.#closedIdle(context, verified.sessionId, spent.session);
      return ledgerRefusal(spent);
    }
    return { kind: 'paid', paid: new SessionPaid(this.options, this.services, verified, context.route, nowSeconds, spent.session, context.offerTopUp) };
  }

  async #topUp(context: Sale, verified: VerifiedSessionAction, nowSeconds: number): Promise<Verdict> {
    const { claimed, attempt } = await this.#claimDeposit(verified);
    if (!claimed) return refused('DEPOSIT_ALREADY_USED');
    const credited = await this.options.ledger.topUp(verified.sessionId, verified.paidHash!, verified.paidSats! * 1000, nowSeconds * 1000);
    // Received whether credited or, the session being closed, folded into its refund.
    if (credited.ok || credited.reason === 'closed' || credited.reason === 'idle')
      tell(
        this.options.onSession,
        {
          type: 'topped-up',
          sessionId: verified.sessionId,
          route: context.route,
          paymentHash: verified.paidHash!,
          amountMsat: verified.paidSats! * 1000,
          closed: !credited.ok,
          at: nowSeconds * 1000,
        },
        this.services.onError,
      );
    if (!credited.ok) {
      // No such session: nothing was recorded, so the payment is given back (it can still open a session). Closed: the ledger folded it into the refund.
      if (credited.reason === 'unknown') await this.services.replay.release(verified.paidHash!, attempt, verified.expiresAt);
      if (credited.reason === 'refund-started') return this.#refusedTopUp(context, verified, attempt, credited, nowSeconds);
      // Closed now for idleness, or closed before with this top-up folded into a refund not yet paid: paid at once.
      if (credited.reason === 'closed' || credited.reason === 'idle') {
        // This top-up found the session idle and closed it now: its close is news.
        // (The Redis ledger keeps whole milliseconds of the fractional clock reading.)
        const closedNow = credited.session?.closedAt !== undefined && Math.abs(credited.session.closedAt - nowSeconds * 1000) < 1;
        if (closedNow && credited.session!.closedBecause === 'idle') this.#tellClosed(context, credited.session!);
        await this.#refund(context, verified.sessionId);
      }
      return ledgerRefusal(credited);
    }
    return {
      kind: 'answer',
      body: { status: 'ok' },
      receipt: sessionReceipt({ challengeId: verified.challengeId, sessionId: verified.sessionId, at: nowSeconds }),
    };
  }

  /**
   * The top-up came after the session's refund had started: the ledger took
   * nothing, so its payment is given back (its replay claim released) and
   * stays the client's, to open a session with while its challenge lasts. The
   * 402 says so, and the operator hears of it (onSession, onError).
   */
  async #refusedTopUp(
    context: Sale,
    verified: VerifiedSessionAction,
    attempt: string,
    refusal: SessionAnswer & { ok: false },
    nowSeconds: number,
  ): Promise<Verdict> {
    const paymentHash = verified.paidHash!;
    const amountMsat = verified.paidSats! * 1000;
    const refundState = refusal.session?.refund?.state;
    await this.services.replay.release(paymentHash, attempt, verified.expiresAt);
    if (refundState === 'paying' || refundState === 'paid' || refundState === 'given-up')
      tell(
        this.options.onSession,
        { type: 'topup-refused', sessionId: verified.sessionId, route: context.route, paymentHash, amountMsat, refundState, at: nowSeconds * 1000 },
        this.services.onError,
      );
    this.services.onError(
      new Error(
        `session ${verified.sessionId}: a top-up of ${verified.paidSats} sats (payment hash ${paymentHash}) came after its refund started (${refundState}); not taken, the client can open a session with it`,
      ),
      'a session top-up was refused',
    );
    const openBefore = new Date(verified.expiresAt * 1000).toISOString();
    return refused(
      'SESSION_CLOSED',
      {
        sessionId: verified.sessionId,
        topUp: { paymentHash, amountSats: verified.paidSats, taken: false, openBefore },
      },
      `The session is closed and its refund has already started: this top-up was not taken. Its payment is still yours: open a new session with it (action "open" with the same challenge and preimage, and a return invoice) before ${openBefore}`,
    );
  }

  #tellClosed(context: Sale, record: SessionRecord): void {
    tell(this.options.onSession, { ...closedObservation(record), route: context.route }, this.services.onError);
  }

  /** A spend found the session idle and closed it: told, and its refund paid now. */
  async #closedIdle(context: Sale, id: string, record: SessionRecord | undefined): Promise<void> {
    if (record) this.#tellClosed(context, record);
    await this.#refund(context, id);
  }

  /** Pays a closed session's refund now if it is due (refunds.ts); one that is not paid stays due for refundDue, and onError hears of it. Never throws. */
  async #refund(context: Sale, id: string): Promise<void> {
    const { ledger, maxRefundFeeMsat } = this.options;
    const told = this.options.onSession;
    // Refunds paid here are the route's: their observations say so.
    const onSession: SessionObserver | undefined = told && ((observation) => told({ ...observation, route: context.route }));
    try {
      const provider = this.services.provider as LightningProvider;
      const report = await refundSession(
        { ledger, provider, ...(maxRefundFeeMsat && { maxFeeMsat: maxRefundFeeMsat }), ...(onSession && { onSession }), onError: this.services.onError },
        id,
      );
      if (report.result !== 'paid' && report.result !== 'not-due')
        this.services.onError(new Error(`session ${id}: refund ${report.result}${report.detail ? `: ${report.detail}` : ''}`), 'a session refund was not paid');
    } catch (error) {
      this.services.onError(error, 'a session refund was not paid; it stays due');
    }
  }

  /** What a refund of `amountMsat` sends (refundPayment); the amount due itself when the operator's fee limit is unusable (the refund attempt has told onError). */
  #sending(amountMsat: number): number {
    try {
      return refundPayment(this.services.provider as LightningProvider, amountMsat, this.options.maxRefundFeeMsat).sendMsat;
    } catch {
      return amountMsat;
    }
  }

  async #close(context: Sale, verified: VerifiedSessionAction, nowSeconds: number): Promise<Verdict> {
    const { ledger } = this.options;
    const closed = await ledger.close(verified.sessionId, 'client', nowSeconds * 1000);
    if (!closed.ok) return ledgerRefusal(closed);
    this.#tellClosed(context, closed.session);
    let record: SessionRecord | null = closed.session ?? null;
    if (record?.refund?.state === 'due') {
      await this.#refund(context, verified.sessionId);
      record = (await ledger.get(verified.sessionId).catch(() => null)) ?? record;
    }
    const refund = closeRefund(record, (amountMsat) => this.#sending(amountMsat));
    return {
      kind: 'answer',
      body: { status: 'closed', ...refund.wire, refund: refund.detail },
      receipt: sessionReceipt({ challengeId: verified.challengeId, sessionId: verified.sessionId, at: nowSeconds, refund: refund.wire }),
    };
  }
}

/** What one session request is sold under: the route its observations name, and its offer of a top-up. */
interface Sale {
  route: string;
  offerTopUp?: (request: Request) => Promise<Offer | undefined>;
}

/** A top-up challenge asked for by a handler (SessionUse.topUpRefusal) is good for ten minutes. */
const topUpExpiry = () => Math.floor(Date.now() / 1000) + 600;

/** The replay store's key for a session's held stream: a hash of its own, never a payment's. */

/** Why the ledger refused a session action, as a 402's reason (with the balance, for a short one). */
function ledgerRefusal(answer: SessionAnswer & { ok: false }): Verdict {
  switch (answer.reason) {
    case 'unknown':
      return refused('SESSION_NOT_FOUND');
    case 'closed':
    case 'idle':
      return refused('SESSION_CLOSED');
    case 'insufficient':
      return refused('INSUFFICIENT_BALANCE', {
        balanceMsat: answer.balanceMsat,
        ...(answer.session && { sessionId: answer.session.id, balanceSpent: answer.session.spentMsat / 1000 }),
      });
    default:
      return refused('DEPOSIT_ALREADY_USED');
  }
}

/**
 * A closed session's refund in the draft's words (refundSats; refundStatus
 * succeeded, skipped, or failed: not paid, whether it is retried or given
 * up) and in ours (state, millisatoshis, attempts, the last error, the reason
 * it was given up): a failed refund stays due and visible. refundSats is what
 * the return invoice is sent (`sending`: the refund less the routing fee
 * limit charged to it, refunds.ts); `amountMsat` the refund due.
 */
function closeRefund(
  record: SessionRecord | null,
  sending: (amountMsat: number) => number,
): { wire: { refundSats: number; refundStatus: RefundStatus }; detail: Record<string, unknown> } {
  const refund = record?.refund;
  const amountMsat = refund?.amountMsat ?? 0;
  const sentMsat = amountMsat > 0 ? sending(amountMsat) : 0;
  const refundStatus: RefundStatus = !refund || refund.state === 'none' ? 'skipped' : refund.state === 'paid' ? 'succeeded' : 'failed';
  return {
    wire: { refundSats: sentMsat / 1000, refundStatus },
    detail: {
      state: refund?.state ?? 'none',
      amountMsat,
      sentMsat,
      attempts: refund?.attempts ?? 0,
      ...(refund?.lastError !== undefined && { lastError: refund.lastError }),
      ...(refund?.reason !== undefined && { reason: refund.reason }),
      ...((refund?.state === 'failed' || refund?.state === 'due') && { nextAttemptAt: new Date(refund.nextAttemptAt).toISOString() }),
    },
  };
}
