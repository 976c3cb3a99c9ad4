// The Lightning session intent (draft-lightning-session-00) on the wire:
//   WWW-Authenticate: Payment id="…", realm="…", method="lightning", intent="session",
//     request="<base64url(JCS JSON)>", expires="<RFC 3339>"[, opaque="…"]
// where the request is the draft's flat object {amount (per unit, sat),
// currency: "sat", description?, unitType?, depositInvoice, paymentHash,
// depositAmount, idleTimeout}. The id binds the challenge with the same
// HMAC as the charge intent (binding.ts), so nothing is stored per challenge.
//
// A credential's payload is one of four actions:
//   open   {preimage, returnInvoice}   the deposit paid; the amountless invoice refunds go to
//   bearer {sessionId, preimage}       a request against the session's balance
//   topUp  {sessionId, topUpPreimage}  a fresh deposit invoice paid, credited to the session
//   close  {sessionId, preimage}       close, and refund what was not spent
// Checked here without zod (the paywall core takes these functions), as
// charge.ts checks the charge intent. Whether the session exists, is open and
// has the balance is the ledger's to say (ledger.ts).
import type { BindingKeyring } from '../payment/binding.js';
import { isPreimageOf } from '../../crypto/preimage.js';
import { invoiceNetwork } from '../payment/network.js';
import {
  LIGHTNING_METHOD,
  PAYMENT_SCHEME,
  echoesIntent,
  isSatAmount,
  issueChallenge,
  readPaymentAuthorization,
  type PaymentReading,
  plainChallenge,
  verifyEcho,
  type BindingFields,
  type LightningNetwork,
  type PaymentChallenge,
} from '../payment/charge.js';
import { refuse, type Refused } from '../../core/problem.js';
import { decodeBase64, encodeJson, formatTime, parseJsonBytes, parseTime } from '../payment/wire.js';

export const SESSION_INTENT = 'session';

/** The session challenge's request object (draft-lightning-session-00, "Challenge Request"). Amounts are decimal strings of satoshis. */
export interface LightningSessionRequest {
  /** Price of one unit of service. */
  amount: string;
  currency: 'sat';
  description?: string;
  unitType?: string;
  /** The invoice to pay to open or top up (absent only in bearer and close challenges, which this server never issues). */
  depositInvoice?: string;
  /** The deposit invoice's payment hash, lower-case hex. */
  paymentHash: string;
  /** The deposit invoice's amount. */
  depositAmount?: string;
  /** Seconds a session may stay unused before the server closes and refunds it. */
  idleTimeout?: string;
}

/** What a session credential's payload says, by action. */
export type SessionPayload =
  | { action: 'open'; preimage: string; returnInvoice: string }
  | { action: 'bearer'; sessionId: string; preimage: string }
  | { action: 'topUp'; sessionId: string; topUpPreimage: string }
  | { action: 'close'; sessionId: string; preimage: string };

export type SessionAction = SessionPayload['action'];

export interface SessionCredential {
  challenge: PaymentChallenge;
  source?: string;
  payload: SessionPayload;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const optionalString = (v: unknown, max: number) => v === undefined || (typeof v === 'string' && v.length <= max);
const LOWER_HEX_32 = /^[0-9a-f]{64}$/;
const SECONDS = /^[1-9][0-9]{0,9}$/;
const INVOICE = /^(?:ln[0-9a-z]+|LN[0-9A-Z]+)$/;
const isHash = (v: unknown): v is string => typeof v === 'string' && LOWER_HEX_32.test(v);
const isInvoice = (v: unknown): v is string => typeof v === 'string' && v.length <= 4096 && INVOICE.test(v);

/** A session request, when it is one; undefined otherwise. Unknown fields are dropped. */
export function plainSessionRequest(json: unknown): LightningSessionRequest | undefined {
  if (!isObject(json)) return undefined;
  const { amount, currency, description, unitType, depositInvoice, paymentHash, depositAmount, idleTimeout } = json;
  if (!isSatAmount(amount) || currency !== 'sat') return undefined;
  if (!optionalString(description, 639) || !optionalString(unitType, 64) || !isHash(paymentHash)) return undefined;
  if (depositInvoice !== undefined && !isInvoice(depositInvoice)) return undefined;
  if (depositAmount !== undefined && !isSatAmount(depositAmount)) return undefined;
  if (idleTimeout !== undefined && !(typeof idleTimeout === 'string' && SECONDS.test(idleTimeout))) return undefined;
  return {
    amount,
    currency,
    ...(description !== undefined && { description: description as string }),
    ...(unitType !== undefined && { unitType: unitType as string }),
    ...(depositInvoice !== undefined && { depositInvoice }),
    paymentHash,
    ...(depositAmount !== undefined && { depositAmount: depositAmount as string }),
    ...(idleTimeout !== undefined && { idleTimeout: idleTimeout as string }),
  };
}

/** A session payload, when it is one of the four actions with its fields; undefined otherwise. Unknown fields are dropped, as the draft asks. */
export function plainSessionPayload(json: unknown): SessionPayload | undefined {
  if (!isObject(json)) return undefined;
  const { action, preimage, returnInvoice, sessionId, topUpPreimage } = json;
  switch (action) {
    case 'open':
      return isHash(preimage) && isInvoice(returnInvoice) ? { action, preimage, returnInvoice } : undefined;
    case 'bearer':
    case 'close':
      return isHash(sessionId) && isHash(preimage) ? { action, sessionId, preimage } : undefined;
    case 'topUp':
      return isHash(sessionId) && isHash(topUpPreimage) ? { action, sessionId, topUpPreimage } : undefined;
    default:
      return undefined;
  }
}

export interface LightningSessionOptions {
  /** The protection space: printable ASCII without "|". */
  realm: string;
  /** Price of one unit (a request, or a chunk of a streamed answer). */
  unitPriceSats: number;
  /** The deposit invoice, as the provider issued it. */
  depositInvoice: string;
  /** Its payment hash (hex). */
  paymentHash: string;
  /** Its amount: at least one unit. */
  depositSats: number;
  /** The idle timeout the server keeps. */
  idleTimeoutSeconds: number;
  description?: string;
  unitType?: string;
  /** When the challenge (and so the deposit offer) stops being accepted for open and topUp; whole seconds. */
  expires: Date;
  /** Conditions bound into the challenge (as opaque): route, owner. */
  binding?: BindingFields;
}

/** A session challenge for a deposit invoice, its id bound under the keyring's newest key. Throws a TypeError on options that cannot make one. */
export function sessionChallenge(keyring: BindingKeyring, options: LightningSessionOptions): PaymentChallenge {
  const { realm, unitPriceSats, depositInvoice, paymentHash, depositSats, idleTimeoutSeconds, description, unitType, expires, binding } = options;
  if (!Number.isSafeInteger(unitPriceSats) || unitPriceSats <= 0) throw new TypeError(`unitPriceSats must be a positive whole number, got ${unitPriceSats}`);
  if (!Number.isSafeInteger(depositSats) || depositSats < unitPriceSats)
    throw new TypeError(`depositSats must be a whole number of at least one unit (${unitPriceSats}), got ${depositSats}`);
  if (!Number.isSafeInteger(idleTimeoutSeconds) || idleTimeoutSeconds <= 0)
    throw new TypeError(`idleTimeoutSeconds must be a positive whole number, got ${idleTimeoutSeconds}`);
  const given = {
    amount: String(unitPriceSats),
    currency: 'sat',
    description,
    unitType,
    depositInvoice,
    paymentHash: typeof paymentHash === 'string' ? paymentHash.toLowerCase() : paymentHash,
    depositAmount: String(depositSats),
    idleTimeout: String(idleTimeoutSeconds),
  };
  const request = plainSessionRequest(given);
  if (!request?.depositInvoice) throw new TypeError('request: not a Lightning session request (invoice, payment hash, description or unit type)');
  return issueChallenge(keyring, { realm, intent: SESSION_INTENT, request, expires, binding });
}

/** A session challenge as a client reads it. */
export interface LightningSessionOffer {
  challenge: PaymentChallenge;
  unitPriceSats: number;
  depositInvoice: string;
  paymentHash: string;
  /** From depositAmount; a payer checks it against the decoded invoice. */
  depositSats?: number;
  idleTimeoutSeconds?: number;
  description?: string;
  unitType?: string;
  /** Unix seconds, from `expires`. */
  expiresAt?: number;
}

export type LightningSessionRead = { ok: true; session: LightningSessionOffer } | { ok: false; detail: string };

/** The Lightning session offer in a challenge: its request decoded and checked. The invoice is the payer's to decode and compare. */
export function readLightningSession(challenge: PaymentChallenge): LightningSessionRead {
  if (challenge.method !== LIGHTNING_METHOD || challenge.intent !== SESSION_INTENT)
    return { ok: false, detail: `not a Lightning session (${challenge.method}/${challenge.intent})` };
  const bytes = decodeBase64(challenge.request);
  const request = plainSessionRequest(bytes && parseJsonBytes(bytes));
  if (!request) return { ok: false, detail: 'request: not a Lightning session request' };
  if (!request.depositInvoice) return { ok: false, detail: 'request: no depositInvoice to pay' };
  return {
    ok: true,
    session: {
      challenge,
      unitPriceSats: Number(request.amount),
      depositInvoice: request.depositInvoice,
      paymentHash: request.paymentHash,
      ...(request.depositAmount !== undefined && { depositSats: Number(request.depositAmount) }),
      ...(request.idleTimeout !== undefined && { idleTimeoutSeconds: Number(request.idleTimeout) }),
      ...(request.description !== undefined && { description: request.description }),
      ...(request.unitType !== undefined && { unitType: request.unitType }),
      ...(challenge.expires !== undefined && { expiresAt: parseTime(challenge.expires) }),
    },
  };
}

/** The Authorization value of a session action answering `challenge`: JCS JSON, base64url. Throws a TypeError on a payload that is not one. */
export function formatSessionCredential(challenge: PaymentChallenge, payload: SessionPayload, source?: string): string {
  const lower = lowerHex(payload);
  const checked = plainSessionPayload(lower);
  if (!checked) throw new TypeError('payload: not a session action (open, bearer, topUp, close) with its fields');
  return `${PAYMENT_SCHEME} ${encodeJson({ challenge, payload: checked, ...(source !== undefined && { source }) })}`;
}

function lowerHex(payload: SessionPayload): unknown {
  if (!isObject(payload)) return payload;
  const out: Record<string, unknown> = { ...payload };
  for (const name of ['preimage', 'sessionId', 'topUpPreimage']) if (typeof out[name] === 'string') out[name] = (out[name] as string).toLowerCase();
  return out;
}

export type SessionCredentialParse = { ok: true; credential: SessionCredential } | Refused;

/** Reads an Authorization value as a session credential (any intent in the echo; verifySessionCredential holds it to session). Never repeats a preimage. */
export function parseSessionCredential(authorization: string | null | undefined): SessionCredentialParse {
  if (!authorization) return refuse('payment-required', 'Payment required');
  return sessionCredentialOfReading(readPaymentAuthorization(authorization));
}

/** A decoded Payment credential (readPaymentAuthorization, the one decode) as a session credential. */
export function sessionCredentialOfReading(reading: PaymentReading): SessionCredentialParse {
  if (!reading.ok) return reading;
  const json = reading.json;
  if (!isObject(json)) return refuse('lightning/malformed-credential', 'the credential is not base64url JSON');
  const challenge = plainChallenge(json.challenge);
  if (!challenge || !optionalString(json.source, 512)) return refuse('lightning/malformed-credential', 'the credential does not echo a challenge');
  const payload = plainSessionPayload(json.payload);
  if (!payload) return refuse('lightning/malformed-credential', 'the payload is not a session action (open, bearer, topUp, close) with its fields');
  return { ok: true, credential: { challenge, ...(json.source !== undefined && { source: json.source as string }), payload } };
}

/** Whether an Authorization value (already known to be in the Payment scheme) echoes a session challenge. */
export function isSessionAuthorization(authorization: string): boolean {
  const reading = readPaymentAuthorization(authorization);
  return reading.ok && echoesIntent(reading.json, SESSION_INTENT);
}

/** A session credential whose challenge this server issued, unchanged, and whose preimage checks out as far as can be said without the ledger. */
export interface VerifiedSessionAction {
  ok: true;
  action: SessionAction;
  /** The session: the deposit's payment hash (open: the challenge's; others: the payload's sessionId). */
  sessionId: string;
  challengeId: string;
  realm: string;
  unitPriceSats: number;
  /** open and topUp: the payment hash of the invoice paid (the challenge's), and its amount in sats. */
  paidHash?: string;
  paidSats?: number;
  /** open: where refunds go. */
  returnInvoice?: string;
  /** The deposit invoice's network (open, topUp). */
  network?: LightningNetwork;
  /** Unix seconds: when the challenge expires. */
  expiresAt: number;
  binding: BindingFields;
  source?: string;
}

export type SessionVerification = VerifiedSessionAction | Refused;

/**
 * Verifies an Authorization value as a session action answering one of this
 * server's session challenges, at `nowSeconds`. Local: no store, no network.
 *
 * - every action: the echoed challenge re-derives to its id (any key), is
 *   lightning/session and holds a request this server writes;
 * - open, topUp: the challenge has not expired (its deposit invoice is what is
 *   paid), the preimage (topUpPreimage) hashes to its paymentHash; open's
 *   return invoice names no amount, on the deposit's network, and is a
 *   well-formed bech32 invoice;
 * - bearer, close: the echoed challenge is the one the session was opened
 *   with (its request's paymentHash is the sessionId), and the preimage
 *   hashes to the sessionId. The challenge may have expired: the session, not
 *   the challenge, is what they act on. The preimage alone is no proof of
 *   ownership: every routing node of the deposit learns it with its hash, the
 *   session's public id; the opening challenge went to the opener alone, and
 *   its id is an HMAC under the server's secret, which nobody else can make
 *   (docs/sessions.md, "Where we differ from the draft").
 */
export function verifySessionCredential(
  keyring: BindingKeyring,
  authorization: string | null | undefined,
  nowSeconds = Date.now() / 1000,
): SessionVerification {
  const parsed = parseSessionCredential(authorization);
  return parsed.ok ? verifySessionAction(keyring, parsed.credential, nowSeconds) : parsed;
}

/** verifySessionCredential of a credential already read (sessionCredentialOfReading). */
export function verifySessionAction(keyring: BindingKeyring, credential: SessionCredential, nowSeconds: number): SessionVerification {
  const { challenge, payload, source } = credential;
  if (challenge.method !== LIGHTNING_METHOD || challenge.intent !== SESSION_INTENT)
    return refuse('method-unsupported', `a session action answers a lightning/session challenge, not ${challenge.method}/${challenge.intent}`);
  const echo = verifyEcho(keyring, challenge);
  if (!echo.ok) return echo;
  const { expiresAt, binding } = echo;
  const request = plainSessionRequest(parseJsonBytes(echo.requestBytes));
  if (!request || !binding) return refuse('verification-failed', 'the challenge does not hold what this server issues');
  const base = {
    ok: true as const,
    action: payload.action,
    challengeId: challenge.id,
    realm: challenge.realm,
    unitPriceSats: Number(request.amount),
    expiresAt,
    binding,
    ...(source !== undefined && { source }),
  };
  if (payload.action === 'bearer' || payload.action === 'close') {
    // A later (top-up) challenge names another deposit: whoever paid it, a stranger included, gains no right to spend.
    if (request.paymentHash !== payload.sessionId)
      return refuse(
        'invalid-challenge',
        `${payload.action} echoes the challenge the session was opened with (its paymentHash is the session id), not a later one`,
      );
    if (!isPreimageOf(payload.preimage, payload.sessionId))
      return refuse('lightning/invalid-preimage', 'SHA-256 of the preimage is not the session id (the deposit payment hash)');
    return { ...base, sessionId: payload.sessionId };
  }
  // open and topUp prove payment of this challenge's deposit invoice.
  if (expiresAt <= nowSeconds) return refuse('lightning/challenge-expired', 'the challenge has expired: request a new one');
  const { depositInvoice, depositAmount, paymentHash } = request;
  const network = depositInvoice === undefined ? undefined : invoiceNetwork(depositInvoice);
  if (depositInvoice === undefined || depositAmount === undefined || !network)
    return refuse('verification-failed', 'the challenge has no deposit this server can credit');
  const preimage = payload.action === 'open' ? payload.preimage : payload.topUpPreimage;
  if (!isPreimageOf(preimage, paymentHash))
    return refuse('lightning/invalid-preimage', 'SHA-256 of the preimage is not the payment hash of the deposit invoice');
  const paid = { paidHash: paymentHash, paidSats: Number(depositAmount), network };
  if (payload.action === 'topUp') return { ...base, ...paid, sessionId: payload.sessionId };
  const returned = checkReturnInvoice(payload.returnInvoice, network);
  if (returned) return refuse('lightning/invalid-return-invoice', returned);
  return { ...base, ...paid, sessionId: paymentHash, returnInvoice: payload.returnInvoice };
}

const NETWORK_OF: Record<string, LightningNetwork | undefined> = { lnbc: 'mainnet', lnbcrt: 'regtest', lntbs: 'signet' };

/** BOLT 11's human-readable part: the currency prefix and the amount text (empty for none). */
function humanReadablePart(invoice: string): { prefix: string; amount: string } | undefined {
  if (!isInvoice(invoice)) return undefined;
  const lower = invoice.toLowerCase();
  const separator = lower.lastIndexOf('1');
  if (separator < 3) return undefined;
  const hrp = lower.slice(0, separator);
  const match = /^(lnbcrt|lntbs|lntb|lnbc)([0-9]*[munp]?)$/.exec(hrp);
  return match ? { prefix: match[1]!, amount: match[2]! } : undefined;
}

/**
 * Why a return invoice cannot take refunds (undefined when it can): it must
 * be bech32 with a valid checksum, on the deposit's network, and name no
 * amount (or an amount of zero). Its signature is checked when the refund is
 * paid (refunds.ts decodes it whole); this check keeps the edge core
 * free of the elliptic-curve code.
 */
export function checkReturnInvoice(invoice: string, network: LightningNetwork): string | undefined {
  const hrp = humanReadablePart(invoice);
  if (!hrp || !bech32Valid(invoice.toLowerCase())) return 'the return invoice is not a BOLT 11 invoice';
  if (NETWORK_OF[hrp.prefix] !== network) return `the return invoice is not on the deposit's network (${network})`;
  if (hrp.amount !== '' && !/^0+[munp]?$/.test(hrp.amount)) return 'the return invoice names an amount; it must name none';
  return undefined;
}

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

/** BIP 173's checksum over a lower-case bech32 string (no length limit, as BOLT 11 needs). */
function bech32Valid(text: string): boolean {
  const separator = text.lastIndexOf('1');
  const hrp = text.slice(0, separator);
  const data = text.slice(separator + 1);
  if (data.length < 6) return false;
  let chk = 1;
  const step = (value: number) => {
    const top = chk >>> 25;
    chk = ((chk & 0x1ffffff) << 5) ^ value;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) chk ^= GENERATOR[i]!;
  };
  for (let i = 0; i < hrp.length; i++) step(hrp.charCodeAt(i) >> 5);
  step(0);
  for (let i = 0; i < hrp.length; i++) step(hrp.charCodeAt(i) & 31);
  for (const char of data) {
    const value = CHARSET.indexOf(char);
    if (value < 0) return false;
    step(value);
  }
  return chk === 1;
}

/** How a close's refund stands, in the draft's words: paid, nothing owed, or not paid (yet). */
export type RefundStatus = 'succeeded' | 'failed' | 'skipped';

export interface SessionReceiptInput {
  challengeId: string;
  sessionId: string;
  /** Whole seconds. */
  at: number;
  /** close only. */
  refund?: { refundSats: number; refundStatus: RefundStatus };
  /** A request metered by reported usage (meterByUsage), once settled: its units, what they cost, and whether they were the usage reported or the reservation. */
  metered?: { units: number; spentSats: number; settledAt: 'usage' | 'reservation'; reason?: string };
}

/** The Payment-Receipt of a session action (draft-lightning-session-00, "Receipt"): reference is the session id; close adds refundSats and refundStatus. */
export function sessionReceipt({ challengeId, sessionId, at, refund, metered }: SessionReceiptInput): string {
  return encodeJson({
    challengeId,
    method: LIGHTNING_METHOD,
    reference: sessionId,
    status: 'success',
    timestamp: formatTime(at),
    ...(refund && { refundSats: refund.refundSats, refundStatus: refund.refundStatus }),
    ...(metered && {
      units: metered.units,
      spent: metered.spentSats,
      settled: metered.settledAt === 'usage' ? 'usage' : 'at reservation',
      ...(metered.reason !== undefined && { settledBecause: metered.reason }),
    }),
  });
}
