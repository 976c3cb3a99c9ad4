// Paid tools sold by the prepaid session (the Payment scheme's intent
// "session" over the MCP transport), from the paying side: the same steps as
// an HTTP session route's (session-flow.ts), with the credential in the
// call's `_meta` instead of an Authorization header. A -32042 offering a
// session is answered by opening one (the deposit checked as fetchWithL402
// checks it, within maxDepositSats and the budget, a return invoice from the
// wallet for the refund); later calls of the tool go on it with `bearer`; a
// -32043 for balance is answered by one top-up (a fresh deposit, then the
// call once more); the close, sent as a call of the tool with `close`, counts
// back only what the wallet itself received (held-session.ts). Sessions are
// kept in the caller's createSessions store, beside its HTTP sessions, and
// closed by its closeAll() or the tool client's close().
import { L402ClientError } from './errors.js';
import { heldSession, type CloseAnswer, type SendClose } from './held-session.js';
import { McpToolError, McpTransportError, type ToolPaymentReceipt } from './mcp-errors.js';
import { credentialMeta, paymentRequired, toolChallenges, toolReceipt, type ToolChallenges } from './mcp-payment.js';
import type { RpcAnswer, RpcConnection } from './mcp-rpc.js';
import { checkedDeposit, newReturnInvoice, notCredited, payDeposit, sessionPayment, takeTopUp, type DepositCall, type DepositPaid } from './session-flow.js';
import { sessionKey, type ClientSessions, type HeldSession } from './sessions.js';
import type { CheckedInvoice } from './invoice-check.js';
import { isAmountlessInvoiceUnsupported } from './errors.js';
import { decodeBase64, parseJsonBytes } from '../schemes/payment/wire.js';

/** The challenge object each tool session a tool client opened was opened with, echoed in its bearer and close credentials unchanged. */
export type ToolSessionEchoes = WeakMap<HeldSession, Record<string, unknown>>;

/** One tool call, as its payment steps see it. */
export interface ToolCall extends DepositCall {
  connection: RpcConnection;
  /** The echoes of the sessions its tool client opened (the client keeps them). */
  echoes: ToolSessionEchoes;
  name: string;
  /** The call's params without a credential: the tool's name, its arguments, the caller's `_meta`. */
  params: { name: string; arguments: Record<string, unknown>; _meta?: Record<string, unknown> };
  signal?: AbortSignal;
  /** The call's trace headers (events on): sent with each of its requests. */
  headers?: Headers;
}

/** A tool's result, and what the call paid (undefined for a free tool). */
export interface ToolAnswer {
  result: Record<string, unknown> & { content?: unknown[]; isError?: boolean };
  receipt?: ToolPaymentReceipt;
}

type SessionOffer = ToolChallenges['sessions'][number];

/**
 * The challenge to echo on a held session: the object this call's tool
 * client opened it with over MCP, or, for one opened elsewhere for the same
 * route (same origin, realm and binding: fetchWithL402 over HTTP, or another
 * tool client on the same store), its challenge with the request decoded
 * (the request is the JCS text of that object, which the server encodes
 * again to check the challenge's id).
 */
function echoOf(call: ToolCall, held: HeldSession): Record<string, unknown> | undefined {
  const kept = call.echoes.get(held);
  if (kept) return kept;
  const bytes = decodeBase64(held.challenge.request);
  const request = bytes && parseJsonBytes(bytes);
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return undefined;
  return { ...held.challenge, request };
}

/** Where a tool's session is found again: the endpoint and the tool (never an HTTP path: those have no `#`). */
export const toolSessionPath = (url: URL, name: string) => `${url.origin}${url.pathname}#${name}`;

/** The call sent with `payload` answering `echo` in its `_meta` (none: the call unpaid). */
export function sendCall(call: ToolCall, echo?: Record<string, unknown>, payload?: object): Promise<RpcAnswer> {
  const { params } = call;
  const withCredential = echo && payload ? { ...params, _meta: credentialMeta(params._meta, echo, payload) } : params;
  return call.connection.request('tools/call', withCredential, call.signal, call.headers);
}

/** A paid call sent: no answer (none, none in time, none readable) is said with what was paid, which is never paid again here. */
export async function sendPaid(call: ToolCall, receipt: ToolPaymentReceipt, echo: Record<string, unknown>, payload: object): Promise<RpcAnswer> {
  try {
    return await sendCall(call, echo, payload);
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    const status = error instanceof McpTransportError ? error.status : undefined;
    throw new McpTransportError(`${call.url.host} was paid ${receipt.amountMsat / 1000} sats for ${call.name} and gave no answer: ${why}`, status, receipt, {
      cause: error,
    });
  }
}

/** The status an answer stands for in audit events: a payment refusal's HTTP status (402), else 200. */
export const answerStatus = (answer: RpcAnswer): number => (paymentRequired(answer) ? 402 : 'error' in answer ? 500 : 200);

/** A paid call's answer: the result with its receipt, or, refused after the payment, the error with it (never paid again in this call). */
export function paidAnswer(call: ToolCall, answer: RpcAnswer, receipt: ToolPaymentReceipt, checkedAs: { challengeId: string; reference: string }): ToolAnswer {
  const { url, name } = call;
  const paid = `${url.host} did not serve ${name} after it was paid ${receipt.amountMsat / 1000} sats`;
  if ('error' in answer) {
    const again = paymentRequired(answer);
    const why = again ? toolChallenges(again.data).failure : undefined;
    throw new McpToolError(`${paid}: ${answer.error.message}${why ? ` (${why})` : ''}; not paid again`, answer.error.code, answer.error.data, receipt);
  }
  const again = paymentRequired(answer);
  if (again)
    throw new McpToolError(`${url.host} asked again for payment of ${name} after it was paid; not paid again`, again.code, answer.result._meta, receipt);
  return { result: answer.result, receipt: { ...receipt, ...toolReceipt(answer.result, checkedAs.challengeId, checkedAs.reference) } };
}

/** The seller's reason for refusing a session credential (INSUFFICIENT_BALANCE, SESSION_CLOSED, …), from a -32043's data. */
function refusalCode(answer: RpcAnswer): string | undefined {
  const asked = paymentRequired(answer);
  const code = asked?.data.code;
  return typeof code === 'string' ? code.slice(0, 64) : undefined;
}

/**
 * A call on the session held for the tool (bearer). Served, or topped up and
 * served: `served`. Not found, or closed: forgotten (its refund looked for at
 * closeAll) and the refusal's fresh offers answered anew (`offersAnew`).
 * Refused for another reason: the call fails (SESSION_REFUSED), nothing is
 * paid, and the session no longer serves this tool (a new deposit for a
 * session the server will not serve is how a hostile one drains a budget).
 */
export async function callOnHeld(call: ToolCall, sessions: ClientSessions, held: HeldSession): Promise<{ served: ToolAnswer } | { offersAnew: RpcAnswer }> {
  const { url, name } = call;
  const first = await sendCall(call, echoOf(call, held), bearer(held));
  const code = paymentRequired(first) ? refusalCode(first) : undefined;
  if (!paymentRequired(first)) return { served: onSession(call, first, held, 'bearer') };
  if (code === 'INSUFFICIENT_BALANCE') return { served: await topUpAndRetry(call, sessions, held, first) };
  if (code === 'SESSION_NOT_FOUND' || code === 'SESSION_CLOSED') {
    sessions.gone(held, `the server answered ${code} before it was closed`);
    return { offersAnew: first };
  }
  sessions.unuse(toolSessionPath(url, name));
  throw new L402ClientError(
    'SESSION_REFUSED',
    `Not paid: ${url.host} refused the session ${held.sessionId} for ${name} (${code ?? 'no reason given'}); a new deposit is not paid for a session refused for a reason other than its balance`,
    { url: url.href, scheme: 'Payment', sessionId: held.sessionId, ...(code !== undefined && { serverCode: code }) },
  );
}

const bearer = (held: HeldSession) => ({ action: 'bearer', sessionId: held.sessionId, preimage: held.preimage });

/** What a call served on a session paid by itself: nothing (the unit came out of the deposit), with the server's receipt checked. */
function onSession(call: ToolCall, answer: RpcAnswer, held: HeldSession, action: 'bearer'): ToolAnswer {
  if ('error' in answer) throw new McpToolError(`${call.name}: ${answer.error.message}`, answer.error.code, answer.error.data);
  const receipt: ToolPaymentReceipt = {
    server: call.url.href,
    tool: call.name,
    paymentHash: held.sessionId,
    amountMsat: 0,
    feeMsat: 0,
    paidByThisCall: false,
    scheme: 'Payment',
    challengeId: held.challenge.id,
    session: { action, sessionId: held.sessionId },
  };
  return { result: answer.result, receipt: { ...receipt, ...toolReceipt(answer.result, held.challenge.id, held.sessionId) } };
}

/**
 * Answers a session offer: the session already held for what it is for
 * (origin, realm, binding: opened by a concurrent call), or a new one opened
 * here. `retry` sends the call again on a held one. Answers `why` when no
 * session can be opened with this wallet (the call then pays per call if it can).
 */
export async function answerSessionOffer(
  call: ToolCall,
  sessions: ClientSessions,
  found: SessionOffer,
  retry: () => Promise<ToolAnswer>,
): Promise<{ served: ToolAnswer } | { why: string } | undefined> {
  const { url, name } = call;
  const { realm, opaque } = found.offer.challenge;
  const path = toolSessionPath(url, name);
  const forOffer = sessionKey(url.origin, realm, opaque ?? '');
  const usable = () => sessions.matching(url.origin, realm, opaque ?? '');
  let other = usable();
  const opening = other ? undefined : sessions.opening(forOffer, () => openSession(call, sessions, found));
  if (opening) {
    const opened = await opening;
    return 'why' in opened ? opened : { served: opened };
  }
  if (!other) {
    await sessions.pendingOpen(forOffer);
    other = usable();
  }
  if (!other || !echoOf(call, other)) return undefined;
  sessions.use(path, other);
  return { served: await retry() };
}

/**
 * Opens a session on the offer: a return invoice from the wallet first (a
 * wallet that cannot make one pays nothing here: `why` says so), then the
 * deposit checked and paid, then the call sent with `open`. A result means the
 * server opened it before the tool ran: held from then on. A refusal after
 * the deposit is paid throws McpToolError with what was paid.
 */
async function openSession(call: ToolCall, sessions: ClientSessions, found: SessionOffer): Promise<ToolAnswer | { why: string }> {
  const { wallet } = call.options;
  if (typeof wallet.createInvoice !== 'function') return { why: 'the wallet cannot make an invoice without an amount (no createInvoice) for the refund' };
  const invoice = checkedOrRefused(call, found);
  let returnInvoice: { invoice: string; paymentHash: string };
  try {
    returnInvoice = await newReturnInvoice(wallet, call.url);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      why: `the wallet could not make an invoice without an amount for the refund (${isAmountlessInvoiceUnsupported(error) ? 'unsupported: ' : ''}${message})`,
    };
  }
  const paid = await payDeposit(call, found.offer, invoice);
  if (paid.paidByThisCall) sessions.paid(sessionPayment('open', found.offer.paymentHash, call.url, invoice, paid.proof));
  return sendOpen(call, sessions, found, invoice, paid, returnInvoice);
}

/** The deposit checked as fetchWithL402 checks one; a refusal is an invoice.refused event, and nothing is paid. */
function checkedOrRefused(call: ToolCall, found: SessionOffer): CheckedInvoice {
  try {
    return checkedDeposit(call, found.offer);
  } catch (error) {
    const { events } = call;
    if (events && error instanceof L402ClientError)
      events.invoiceRefused(error.code, { invoice: found.offer.depositInvoice }, events.challengeReceived({ invoice: found.offer.depositInvoice }));
    throw error;
  }
}

/** Sends `open` with a paid deposit: a result holds the session (and is the call's answer); a refusal throws with the payment. */
async function sendOpen(
  call: ToolCall,
  sessions: ClientSessions,
  found: SessionOffer,
  invoice: CheckedInvoice,
  paid: DepositPaid,
  returnInvoice: { invoice: string; paymentHash: string },
): Promise<ToolAnswer> {
  const { offer, echo } = found;
  const receipt = depositReceipt(call, found, invoice, paid, { action: 'open', sessionId: offer.paymentHash });
  const retryStartedAt = call.events ? performance.now() : 0;
  const answer = await sendPaid(call, receipt, echo, { action: 'open', preimage: paid.proof.preimage, returnInvoice: returnInvoice.invoice });
  served(call, paid, answer, retryStartedAt);
  if (!('error' in answer) && !paymentRequired(answer)) {
    const held = heldSession(offer, paid.proof.preimage, invoice.amountMsat, returnInvoice.paymentHash, toolClose(call, echo), call.url, call.options);
    call.echoes.set(held, echo);
    sessions.hold(held, toolSessionPath(call.url, call.name));
  }
  return paidAnswer(call, answer, receipt, { challengeId: offer.challenge.id, reference: offer.paymentHash });
}

/** request.served for a deposit's call, when events are on. */
function served(call: ToolCall, paid: DepositPaid, answer: RpcAnswer, retryStartedAt: number): void {
  if (call.events && paid.cause !== undefined)
    call.events.requestServed({ ...paid.facts, status: answerStatus(answer), retryStartedAt, paidByThisCall: paid.paidByThisCall }, paid.cause);
}

function depositReceipt(
  call: ToolCall,
  found: SessionOffer,
  invoice: CheckedInvoice,
  paid: DepositPaid,
  session: NonNullable<ToolPaymentReceipt['session']>,
): ToolPaymentReceipt {
  return {
    server: call.url.href,
    tool: call.name,
    paymentHash: invoice.paymentHash,
    amountMsat: invoice.amountMsat,
    feeMsat: paid.paidByThisCall ? paid.proof.feeMsat : 0,
    paidByThisCall: paid.paidByThisCall,
    scheme: 'Payment',
    challengeId: found.offer.challenge.id,
    session,
  };
}

/**
 * A -32043 for balance on a held session: a fresh deposit of the same realm
 * paid as topUp (within the call's top-ups, maxDepositSats and the budget),
 * then the call sent once more on the session. A top-up the server no
 * longer takes because the session closed meanwhile opens a new session with
 * the same paid deposit (its own challenge echoed), so it is not paid for
 * nothing; refused otherwise, TOP_UP_NOT_CREDITED (the payment stays spent).
 */
async function topUpAndRetry(call: ToolCall, sessions: ClientSessions, held: HeldSession, refusal: RpcAnswer): Promise<ToolAnswer> {
  const asked = paymentRequired(refusal)!;
  const found = toolChallenges(asked.data).sessions.find((candidate) => candidate.offer.challenge.realm === held.realm);
  if (!found) {
    const error = (refusal as { error?: { code: number; message: string; data?: unknown } }).error;
    throw new McpToolError(`${call.url.host} refused ${call.name} for the session's balance and offered no deposit to top up with`, asked.code, error?.data);
  }
  const invoice = checkedOrRefused(call, found);
  takeTopUp(call, held);
  const paid = await payDeposit(call, found.offer, invoice);
  if (paid.paidByThisCall) sessions.paid(sessionPayment('topUp', held.sessionId, call.url, invoice, paid.proof));
  const receipt = depositReceipt(call, found, invoice, paid, { action: 'topUp', sessionId: held.sessionId });
  const credited = await sendPaid(call, receipt, found.echo, { action: 'topUp', sessionId: held.sessionId, topUpPreimage: paid.proof.preimage });
  if ('error' in credited || paymentRequired(credited)) {
    const code = refusalCode(credited);
    if (code !== 'SESSION_CLOSED' && code !== 'SESSION_NOT_FOUND') throw notCredited(call, held, invoice, code ?? toolErrorText(credited), code);
    sessions.gone(held, `the server answered ${code} to a top-up before it was closed`);
    const returnInvoice = await newReturnInvoice(call.options.wallet, call.url).catch((error: unknown) => {
      throw notCredited(call, held, invoice, code, code, `, and the wallet could not make a return invoice to open a session with them (${String(error)})`);
    });
    return sendOpen(call, sessions, found, invoice, paid, returnInvoice);
  }
  held.depositedMsat += invoice.amountMsat;
  const retryStartedAt = call.events ? performance.now() : 0;
  const answer = await sendPaid(call, receipt, echoOf(call, held)!, bearer(held));
  served(call, paid, answer, retryStartedAt);
  return paidAnswer(call, answer, receipt, { challengeId: held.challenge.id, reference: held.sessionId });
}

const toolErrorText = (answer: RpcAnswer) =>
  'error' in answer ? `JSON-RPC ${answer.error.code}: ${answer.error.message.slice(0, 200)}` : 'payment asked again';

/**
 * A tool session's close: a call of the tool with the arguments that opened
 * it (the server checks them before its paywall reads the credential), the
 * credential's action `close`. Sent without the call's signal or trace: the
 * close comes long after. The result's text is the seller's JSON answer.
 */
function toolClose(call: ToolCall, echo: Record<string, unknown>): SendClose {
  const { connection, params } = call;
  const { _meta: _callersMeta, ...unpaid } = params;
  return async (close): Promise<CloseAnswer> => {
    const answer = await connection.request('tools/call', { ...unpaid, _meta: credentialMeta(undefined, echo, close) });
    if ('error' in answer) {
      const data = answer.error.data as { httpStatus?: unknown; code?: unknown } | undefined;
      const status = typeof data?.httpStatus === 'number' ? data.httpStatus : 402;
      const code = typeof data?.code === 'string' ? ` (${data.code.slice(0, 64)})` : '';
      return { ok: false, status, json: { detail: `${answer.error.message.slice(0, 500)}${code}` } };
    }
    if (paymentRequired(answer)) return { ok: false, status: 402, json: { detail: 'the server asked for payment of the close' } };
    const first = Array.isArray(answer.result.content) ? (answer.result.content[0] as { type?: unknown; text?: unknown } | undefined) : undefined;
    let json: CloseAnswer['json'] = {};
    try {
      const parsed: unknown = typeof first?.text === 'string' ? JSON.parse(first.text) : {};
      if (typeof parsed === 'object' && parsed !== null) json = parsed as CloseAnswer['json'];
    } catch {}
    return { ok: true, status: 200, json };
  };
}
