// Where fetchWithL402 keeps the prepaid sessions it opened (the Payment
// scheme's intent="session", docs/sessions.md): one per origin, realm and
// binding (the challenge's opaque: the paywall binds a session to its route
// and caveats, and refuses it elsewhere), in memory, for this process, and
// which one each path (origin + pathname) was served with. fetchWithL402 opens, uses, tops up and records
// them; this module only holds them and closes them, through the close each
// one was given when it was opened (so it imports nothing of the flow that opens them, session-flow.ts).
import type { PaymentChallenge } from '../schemes/payment/charge.js';
import type { RefundStatus } from '../schemes/session/codec.js';

export interface ClientSessionsOptions {
  /**
   * The most one deposit (to open or to top up a session) may ask, in whole
   * satoshis; a dearer one is refused unpaid. Default: 20 times the call's
   * maxPriceSats (the draft's recommended deposit of 20 units).
   */
  maxDepositSats?: number;
  /**
   * On Node (or any runtime with process.once), close the sessions still
   * held when the event loop empties ('beforeExit'), so their refunds come
   * back. It cannot run on process.exit() or a signal: call closeAll() there.
   * Default false.
   */
  closeOnExit?: boolean;
  /**
   * The most top-ups one call may pay (a call refused for balance, and a
   * metered stream's `payment-need-topup` demands together); past it the
   * demand is refused unpaid (TOP_UP_REFUSED). Default 10: with the draft's
   * 20-unit deposits, a stream of 220 units in one call (the demo's longest,
   * 200 chunks, fits), while a server asking again and again gets no more
   * than ten deposits out of one call. The budget bounds all calls together.
   */
  maxTopUpsPerCall?: number;
  /**
   * How long a close waits, at most, for the wallet to see a refund the
   * server says it paid (its return invoice settled), in seconds. Default 3:
   * a refund truly paid has settled at the wallet before the server learns it
   * was (the preimage comes back only then), so this covers only the
   * wallet's own bookkeeping. A refund not seen by then stays counted as
   * spent (`refundSeen: false`): one a server pays later (its sweep) is not
   * waited for.
   */
  refundWaitSeconds?: number;
  /** Told of each deposit paid (opening a session or topping it up), as it is paid; a throw is ignored. For a running account (the CLI prints each). */
  onPayment?(payment: SessionPayment): void;
}

/** A session deposit the wallet paid. */
export interface SessionPayment {
  action: 'open' | 'topUp';
  origin: string;
  /** The session it opened or topped up. */
  sessionId: string;
  paymentHash: string;
  amountMsat: number;
  feeMsat: number;
}

/** What closing a session said. */
export interface ClosedSession {
  origin: string;
  realm: string;
  sessionId: string;
  /** The close request's HTTP status (200 when closed); 0 when it got no answer. */
  status: number;
  /** From the close answer: what was paid in and not spent, in sats (a fraction when part of a sat was spent). */
  refundSats?: number;
  /** What the server says of its refund: succeeded (paid to the return invoice), skipped (nothing left), failed (not paid yet: the server keeps it due). Its word only. */
  refundStatus?: RefundStatus;
  /** Whether the wallet itself saw the return invoice paid (its lookupInvoice): the only thing that counts a refund back. */
  refundSeen: boolean;
  /** What the wallet received on the return invoice, integer msat (0 when not seen). */
  receivedMsat: number;
  /** Millisatoshis given back to the budget: what the wallet received, at most what was paid into the session. */
  creditedMsat: number;
  /** Why the refund was not seen, when it was not (the wallet cannot look it up, had not received it in time, …): it stays counted as spent. */
  refundUnconfirmed?: string;
  /** Why it was not closed, when it was not (or, for a session the server closed or forgot before, that no close was sent). */
  error?: string;
}

/** A session fetchWithL402 opened and holds. */
export interface HeldSession {
  origin: string;
  realm: string;
  /** The deposit's payment hash. */
  sessionId: string;
  /** The preimage of the deposit: the bearer secret. Never logged. */
  readonly preimage: string;
  /** The challenge's binding (opaque), '' for none: with origin and realm, what the session is for. */
  binding: string;
  /** The challenge the session was opened with (echoed in bearer and close). */
  challenge: PaymentChallenge;
  unitPriceSats: number;
  /** Deposits paid into it (the opening one and top-ups), msat: the most a refund to it can count back. */
  depositedMsat: number;
  /** The payment hash of the return invoice its refund goes to (the wallet's own invoice). */
  returnPaymentHash: string;
  /** Why the last top-up asked by a metered stream (payment-need-topup) was not made, if it was not; cleared by one that was. */
  topUpError?: string;
  /** Sends close, then looks for the refund in the wallet; never throws (a failure is in the result). Called once; later calls answer the first result. */
  close(): Promise<ClosedSession>;
  /**
   * For a session the server closed or forgot on its own (no close is sent):
   * looks once for a refund in the wallet and credits what it received.
   * Never throws; `why` goes in the result's `error`.
   */
  settle(why: string): Promise<ClosedSession>;
}

export interface ClientSessions {
  readonly maxDepositSats?: number;
  /** The most top-ups one call may pay (createSessions' maxTopUpsPerCall, default 10). */
  readonly maxTopUpsPerCall: number;
  /** The longest a close waits to see a refund, ms. */
  readonly refundWaitMs: number;
  /** Tells the store's onPayment of a deposit paid; never throws. */
  paid(payment: SessionPayment): void;
  /** The sessions held now. */
  list(): HeldSession[];
  /** The session a path (origin + pathname) was last served with, while it is held. */
  find(path: string): HeldSession | undefined;
  /** The session held for an origin, realm and binding (a 402's session challenge), if any. */
  matching(origin: string, realm: string, binding: string): HeldSession | undefined;
  /** Keeps a session (one held for the same origin, realm and binding is replaced, and closed) and serves `path` with it. */
  hold(session: HeldSession, path: string): void;
  /** Serves `path` with a held session. */
  use(path: string, session: HeldSession): void;
  /** Stops serving `path` with a session (it was refused there, not for balance); the session stays held. */
  unuse(path: string): void;
  /** Forgets a session without closing it. */
  forget(session: HeldSession): void;
  /**
   * Forgets a session the server closed, or does not know, without closing
   * it: its deposits stay spent until closeAll sees a refund of it in the wallet.
   */
  gone(session: HeldSession, why: string): void;
  /**
   * Runs `open` as the one opening of a session for `key` at a time: a call
   * that finds another opening waits for it instead (and answers undefined),
   * so concurrent first calls share one session rather than each paying a deposit.
   */
  opening<T>(key: string, open: () => Promise<T>): Promise<T> | undefined;
  /** An opening under way for the key, to wait for. */
  pendingOpen(key: string): Promise<unknown> | undefined;
  /**
   * Closes every session held (each forgotten first, so none is used
   * meanwhile), looks for each refund in the wallet (and for those of
   * sessions the server had closed), and says how each went.
   */
  closeAll(): Promise<ClosedSession[]>;
}

const DEFAULT_MAX_TOP_UPS_PER_CALL = 10;
const DEFAULT_REFUND_WAIT_SECONDS = 3;

/** What a session is for: origin, realm and binding. */
export const sessionKey = (origin: string, realm: string, binding: string) => JSON.stringify([origin, realm, binding]);
const keyOf = (session: Pick<HeldSession, 'origin' | 'realm' | 'binding'>) => sessionKey(session.origin, session.realm, session.binding);

/** A place for fetchWithL402's sessions: pass it as `sessions`, and call closeAll() when done. */
export function createSessions(options: ClientSessionsOptions = {}): ClientSessions {
  const { maxDepositSats, maxTopUpsPerCall = DEFAULT_MAX_TOP_UPS_PER_CALL, refundWaitSeconds = DEFAULT_REFUND_WAIT_SECONDS } = options;
  if (maxDepositSats !== undefined && (!Number.isSafeInteger(maxDepositSats) || maxDepositSats <= 0))
    throw new TypeError(`createSessions: maxDepositSats must be a positive whole number of satoshis, got ${maxDepositSats}`);
  if (!Number.isSafeInteger(maxTopUpsPerCall) || maxTopUpsPerCall < 0)
    throw new TypeError(`createSessions: maxTopUpsPerCall must be a whole number, 0 or more, got ${maxTopUpsPerCall}`);
  if (!(refundWaitSeconds >= 0 && refundWaitSeconds <= 600))
    throw new TypeError(`createSessions: refundWaitSeconds must be a number of seconds from 0 to 600, got ${refundWaitSeconds}`);
  /** Sessions the server closed or forgot: their refunds are looked for at closeAll. */
  const goneSessions = new Map<HeldSession, string>();
  const held = new Map<string, HeldSession>();
  const paths = new Map<string, HeldSession>();
  const openings = new Map<string, Promise<unknown>>();
  /** Closes of sessions replaced while held: closeAll waits for them too. */
  const replacedClosing = new Set<Promise<ClosedSession>>();
  const forget = (session: HeldSession) => {
    if (held.get(keyOf(session)) === session) held.delete(keyOf(session));
    for (const [path, used] of paths) if (used === session) paths.delete(path);
  };
  const closeAll = async (): Promise<ClosedSession[]> => {
    await Promise.all(openings.values());
    const all = [...held.values()];
    held.clear();
    paths.clear();
    const replaced = [...replacedClosing];
    replacedClosing.clear();
    const gone = [...goneSessions];
    goneSessions.clear();
    return Promise.all([...replaced, ...all.map((session) => session.close()), ...gone.map(([session, why]) => session.settle(why))]);
  };
  if (options.closeOnExit) closeBeforeExit(closeAll, () => held.size);
  return {
    ...(maxDepositSats !== undefined && { maxDepositSats }),
    maxTopUpsPerCall,
    refundWaitMs: refundWaitSeconds * 1000,
    paid(payment) {
      try {
        options.onPayment?.(payment);
      } catch {
        // the caller's account-keeping failing changes nothing here
      }
    },
    list: () => [...held.values()],
    find: (path) => paths.get(path),
    matching: (origin, realm, binding) => held.get(sessionKey(origin, realm, binding)),
    hold(session, path) {
      const key = keyOf(session);
      const before = held.get(key);
      if (before && before !== session) {
        forget(before);
        const closing = before.close();
        replacedClosing.add(closing);
      }
      held.set(key, session);
      paths.set(path, session);
    },
    use(path, session) {
      if (held.get(keyOf(session)) === session) paths.set(path, session);
    },
    unuse(path) {
      paths.delete(path);
    },
    forget,
    gone(session, why) {
      forget(session);
      goneSessions.set(session, why);
    },
    opening(key, open) {
      if (openings.has(key)) return undefined;
      const running = open();
      const settled = running.then(
        () => undefined,
        () => undefined,
      );
      openings.set(key, settled);
      void settled.then(() => openings.delete(key));
      return running;
    },
    pendingOpen: (key) => openings.get(key),
    closeAll,
  };
}

interface ExitHooks {
  once?(event: 'beforeExit', listener: () => void): unknown;
}

/** Registers closeAll for 'beforeExit' where the runtime has it; again after each run, since a close may hold new work. */
function closeBeforeExit(closeAll: () => Promise<unknown>, count: () => number): void {
  const hooks = (globalThis as { process?: ExitHooks }).process;
  if (typeof hooks?.once !== 'function') return;
  // Registered again after each run: a later loop-empty moment may find sessions opened since. No work scheduled, no delay to the exit.
  const listener = () => {
    if (count() === 0) hooks.once!('beforeExit', listener);
    else void closeAll().finally(() => hooks.once!('beforeExit', listener));
  };
  hooks.once('beforeExit', listener);
}
