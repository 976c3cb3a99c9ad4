// The Payment scheme's JSON-RPC transport (draft-payment-transport-mcp-00),
// read by the paying side: a tool call refused with -32042 (payment
// required) or -32043 (a credential that failed) carries its challenges as
// JSON objects in `error.data.challenges`; the credential goes back in
// `params._meta["org.paymentauth/credential"]` as `{challenge, payload}`, the
// challenge echoed unchanged; the paid result carries the receipt in
// `result._meta["org.paymentauth/receipt"]`. mppx also sends the challenges
// as a tool result whose `_meta["org.paymentauth/payment-required"]` holds the
// same data: read too. Everything here is a hostile server's to write: each
// challenge is checked as a header's would be (schemes/payment/challenge.ts),
// by turning its request object back into the base64url text its id binds.
import { z } from 'zod';
import { LightningReceiptSchema } from '../schemes/payment/receipt.js';
import {
  CHARGE_INTENT,
  LIGHTNING_METHOD,
  MAX_PAYMENT_CHALLENGES,
  PaymentChallengeSchema,
  readLightningCharge,
  type PaymentChallenge,
} from '../schemes/payment/challenge.js';
import {
  CREDENTIAL_META_KEY,
  PAYMENT_REQUIRED_CODE,
  PAYMENT_REQUIRED_META_KEY,
  PAYMENT_VERIFICATION_FAILED_CODE,
  RECEIPT_META_KEY,
} from '../schemes/payment/mcp-meta.js';
import { encodeJson } from '../schemes/payment/wire.js';
import { readLightningSession, type LightningSessionOffer } from '../schemes/session/codec.js';
import type { Offer } from './offers.js';
import type { RpcAnswer } from './mcp-rpc.js';

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A challenge as JSON-RPC carries it: its request a JSON object (bound by its JCS text), the rest as in a header. */
const JsonChallengeSchema = z.object({
  id: z.string(),
  realm: z.string(),
  method: z.string(),
  intent: z.string(),
  request: z.record(z.string(), z.unknown()),
  expires: z.string().optional(),
  digest: z.string().optional(),
  description: z.string().optional(),
  opaque: z.string().optional(),
});

/** A tool's challenges: the Lightning charges this client pays (each with the JSON to echo), and what else was offered. */
export interface ToolChallenges {
  offers: (Offer & { scheme: 'Payment' })[];
  /** The Lightning session offers (a deposit, then calls on it), each with the challenge object to echo: paid when the client holds sessions. */
  sessions: { offer: LightningSessionOffer; echo: Record<string, unknown> }[];
  /** The challenge object each offer came in, to echo unchanged in its credential. */
  echoes: Map<Offer, Record<string, unknown>>;
  /** Why each other challenge is not paid: `tempo/charge`, `lightning/session`, or what was malformed. */
  unsupported: string[];
  /** -32043: the server's word on why the last credential failed. */
  failure?: string;
}

/**
 * The payment-required data of an answer: a -32042 or -32043 error's data,
 * or a result's payment-required `_meta` (mppx); undefined when the answer
 * does not ask for payment.
 */
export function paymentRequired(answer: RpcAnswer): { data: Record<string, unknown>; code: number } | undefined {
  if ('error' in answer) {
    const { code, data } = answer.error;
    if ((code === PAYMENT_REQUIRED_CODE || code === PAYMENT_VERIFICATION_FAILED_CODE) && isObject(data) && Array.isArray(data.challenges))
      return { data, code };
    return undefined;
  }
  const meta = answer.result._meta;
  const data = isObject(meta) ? meta[PAYMENT_REQUIRED_META_KEY] : undefined;
  return isObject(data) && Array.isArray(data.challenges) ? { data, code: PAYMENT_REQUIRED_CODE } : undefined;
}

/** The challenges of payment-required data, read as a 402's are: Lightning charges offered, all else listed and never paid. */
export function toolChallenges(data: Record<string, unknown>): ToolChallenges {
  const found: ToolChallenges = { offers: [], sessions: [], echoes: new Map(), unsupported: [] };
  const list = Array.isArray(data.challenges) ? data.challenges : [];
  for (const [index, json] of list.entries()) {
    if (index >= MAX_PAYMENT_CHALLENGES) {
      found.unsupported.push(`more than ${MAX_PAYMENT_CHALLENGES} Payment challenges; the rest were not read`);
      break;
    }
    const read = challengeOfJson(json);
    if (!read.ok) {
      found.unsupported.push(`an unreadable Payment challenge (${read.detail})`);
      continue;
    }
    const { challenge } = read;
    const charge = readLightningCharge(challenge);
    if (charge.ok) {
      if (found.offers.some((offer) => offer.charge.challenge.id === challenge.id && offer.charge.challenge.request === challenge.request)) continue;
      const offer = { scheme: 'Payment' as const, charge: charge.charge, invoice: charge.charge.invoice };
      found.offers.push(offer);
      found.echoes.set(offer, json as Record<string, unknown>);
      continue;
    }
    const session = readLightningSession(challenge);
    if (session.ok) found.sessions.push({ offer: session.session, echo: json as Record<string, unknown> });
    if (challenge.method === LIGHTNING_METHOD && challenge.intent === CHARGE_INTENT) {
      found.unsupported.push(`${LIGHTNING_METHOD}/${CHARGE_INTENT} (${charge.detail})`);
    } else {
      found.unsupported.push(`${challenge.method}/${challenge.intent}`);
    }
  }
  const failure = isObject(data.failure) ? data.failure : isObject(data.problem) ? data.problem : undefined;
  const why = failure && (typeof failure.detail === 'string' ? failure.detail : typeof failure.reason === 'string' ? failure.reason : undefined);
  if (why) found.failure = why.slice(0, 500);
  return found;
}

/** A JSON challenge as the header form the codecs check: its request as base64url of its JCS text, which its id binds. */
function challengeOfJson(json: unknown): { ok: true; challenge: PaymentChallenge } | { ok: false; detail: string } {
  const shape = JsonChallengeSchema.safeParse(json);
  if (!shape.success) return { ok: false, detail: 'not a challenge object with id, realm, method, intent and a request object' };
  let request: string;
  try {
    request = encodeJson(shape.data.request);
  } catch {
    return { ok: false, detail: 'its request is not JSON' };
  }
  const checked = PaymentChallengeSchema.safeParse({ ...shape.data, request });
  if (!checked.success) return { ok: false, detail: checked.error.issues[0]?.message ?? 'invalid' };
  return { ok: true, challenge: checked.data };
}

/** The `_meta` of a paid call: the caller's own, with the credential answering `echo` (a charge's `{preimage}`, or a session action). */
export function credentialMeta(meta: Record<string, unknown> | undefined, echo: Record<string, unknown>, payload: object): Record<string, unknown> {
  return { ...meta, [CREDENTIAL_META_KEY]: { challenge: echo, payload } };
}

/** The server's receipt of a paid result, checked against the payment: its reference the hash paid, its challengeId the one answered. */
export function toolReceipt(
  result: Record<string, unknown>,
  challengeId: string,
  paymentHash: string,
): { serverReceipt: { challengeId: string; reference: string; timestamp: string } } | { serverReceiptProblem: string } {
  const meta = result._meta;
  const value = isObject(meta) ? meta[RECEIPT_META_KEY] : undefined;
  if (value === undefined) return { serverReceiptProblem: `the result carries no _meta["${RECEIPT_META_KEY}"]` };
  const read = LightningReceiptSchema.safeParse(value);
  if (!read.success) return { serverReceiptProblem: `the receipt is not a Lightning receipt (${read.error.issues[0]?.path.join('.') || 'its shape'})` };
  const { reference, timestamp } = read.data;
  if (reference !== paymentHash) return { serverReceiptProblem: `the receipt is for another payment (reference ${reference})` };
  if (read.data.challengeId !== challengeId) return { serverReceiptProblem: `the receipt is for another challenge (${read.data.challengeId.slice(0, 64)})` };
  return { serverReceipt: { challengeId, reference, timestamp } };
}
