// A prepaid session as the client holds it once opened: its close (sent on
// the request, or the tool call, that opened it), and its refund, counted back to the budget
// only for what the wallet itself received on its return invoice.
import { readBoundedText } from '../http/read-bounded.js';
import { formatSessionCredential, type LightningSessionOffer, type SessionPayload } from '../schemes/session/codec.js';
import { DEFAULT_MAX_CHALLENGE_BYTES, type FetchWithL402Options, type Wallet } from './options.js';
import { fetchOf, sendOnce } from './send.js';
import type { ClosedSession, HeldSession } from './sessions.js';

/** What a close was answered: whether the session was closed, the status (HTTP's, or the one a JSON-RPC error names), and the answer's JSON. */
export interface CloseAnswer {
  ok: boolean;
  status: number;
  json: { refundSats?: unknown; refundStatus?: unknown; detail?: unknown };
}

/** Sends a session's close the way the session was used (an HTTP request, a tool call); throws when no answer came. */
export type SendClose = (close: Extract<SessionPayload, { action: 'close' }>) => Promise<CloseAnswer>;

/** A close sent over HTTP: on the request that opened the session, its answer's body read within bounds. */
export function httpClose(challenge: LightningSessionOffer['challenge'], request: Request, options: FetchWithL402Options): SendClose {
  const doFetch = fetchOf(options);
  return async (close) => {
    const answer = await sendOnce(doFetch, options, request, formatSessionCredential(challenge, close));
    const body = await readBoundedText(answer.body, DEFAULT_MAX_CHALLENGE_BYTES);
    let json: CloseAnswer['json'] = {};
    try {
      json = body.ok ? JSON.parse(body.text) : {};
    } catch {}
    return { ok: answer.ok, status: answer.status, json: typeof json === 'object' && json !== null ? json : {} };
  };
}

/**
 * The session as the store holds it. Its close sends `close` with
 * `sendClose` (on the request, or the tool call, that opened it), then looks in the wallet for the refund: only what the
 * wallet received on the return invoice is credited back to the budget (at
 * most what was paid in), whatever the close answer says.
 */
export function heldSession(
  offer: LightningSessionOffer,
  preimage: string,
  depositMsat: number,
  returnPaymentHash: string,
  sendClose: SendClose,
  url: URL,
  options: FetchWithL402Options,
): HeldSession {
  let closing: Promise<ClosedSession> | undefined;
  let credited: Promise<RefundSeen> | undefined;
  /** Looks for the refund (once per session: a refund is credited once) and credits what the wallet received. */
  const refund = (waitMs: number) =>
    (credited ??= (async () => {
      const seen = await seeRefund(options.wallet, returnPaymentHash, waitMs);
      const creditMsat = Math.min(seen.receivedMsat, session.depositedMsat);
      return { ...seen, creditedMsat: creditMsat > 0 ? (options.budget?.credit?.(url.host, creditMsat) ?? 0) : 0 };
    })());
  const session: HeldSession = {
    origin: url.origin,
    realm: offer.challenge.realm,
    sessionId: offer.paymentHash,
    preimage,
    binding: offer.challenge.opaque ?? '',
    challenge: offer.challenge,
    unitPriceSats: offer.unitPriceSats,
    depositedMsat: depositMsat,
    returnPaymentHash,
    close() {
      closing ??= (async (): Promise<ClosedSession> => {
        options.sessions?.forget(session);
        const base = { origin: session.origin, realm: session.realm, sessionId: session.sessionId };
        let answer: CloseAnswer;
        try {
          answer = await sendClose({ action: 'close', sessionId: session.sessionId, preimage });
        } catch (error) {
          return { ...base, status: 0, ...(await refund(0)), error: `no answer to close: ${error instanceof Error ? error.message : String(error)}` };
        }
        const { json } = answer;
        if (!answer.ok)
          return { ...base, status: answer.status, ...(await refund(0)), error: typeof json.detail === 'string' ? json.detail : `HTTP ${answer.status}` };
        const refundSats = typeof json.refundSats === 'number' && json.refundSats >= 0 ? json.refundSats : undefined;
        const refundStatus =
          json.refundStatus === 'succeeded' || json.refundStatus === 'failed' || json.refundStatus === 'skipped' ? json.refundStatus : undefined;
        // Waited for only when the server says it paid something (then it has settled at the wallet already, bookkeeping aside);
        // a refund due or failed is looked for once, not waited for.
        const said = refundStatus === 'succeeded' && (refundSats ?? 0) > 0;
        const seen = await refund(said ? (options.sessions?.refundWaitMs ?? 0) : 0);
        return {
          ...base,
          status: answer.status,
          ...(refundSats !== undefined && { refundSats }),
          ...(refundStatus !== undefined && { refundStatus }),
          ...seen,
        };
      })();
      return closing;
    },
    async settle(why) {
      return { origin: session.origin, realm: session.realm, sessionId: session.sessionId, status: 0, ...(await refund(0)), error: why };
    },
  };
  return session;
}

/** What the wallet saw of a session's refund, and what of it was credited. */
interface RefundSeen {
  refundSeen: boolean;
  receivedMsat: number;
  creditedMsat: number;
  refundUnconfirmed?: string;
}

/**
 * Whether the wallet received a refund on its return invoice, and how much:
 * looked up until it is settled or `waitMs` has passed (at least once). A
 * wallet without lookupInvoice, a look-up that fails, or an invoice not paid
 * in time: not seen, and `refundUnconfirmed` says which.
 */
async function seeRefund(wallet: Wallet, paymentHash: string, waitMs: number): Promise<Omit<RefundSeen, 'creditedMsat'>> {
  const unseen = (why: string) => ({ refundSeen: false, receivedMsat: 0, refundUnconfirmed: `${why}: the refund stays counted as spent` });
  if (typeof wallet.lookupInvoice !== 'function') return unseen('the wallet cannot say what it received (no lookupInvoice)');
  const until = Date.now() + waitMs;
  let pauseMs = 100;
  for (;;) {
    let failure: string | undefined;
    try {
      const status = await wallet.lookupInvoice(paymentHash);
      const received = status?.amountReceivedMsat;
      if (status?.settled && Number.isSafeInteger(received) && received! >= 0) return { refundSeen: true, receivedMsat: received! };
      if (status === null) failure = 'the wallet does not know the return invoice';
    } catch (error) {
      failure = `the wallet could not look up the return invoice (${error instanceof Error ? error.message : String(error)})`;
    }
    if (Date.now() + pauseMs > until)
      return unseen(failure ?? (waitMs > 0 ? `the wallet had not received it ${waitMs / 1000} s after the close` : 'the wallet had not received it'));
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    pauseMs = Math.min(pauseMs * 2, 1000);
  }
}
