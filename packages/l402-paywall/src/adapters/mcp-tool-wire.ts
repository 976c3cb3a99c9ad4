// The Payment scheme over JSON-RPC (draft-payment-transport-mcp-00): the same
// challenges, credentials and receipts as over HTTP, as JSON objects in
// JSON-RPC messages instead of base64url text in headers:
//
//   challenges  error -32042 (none sent) or -32043 (refused), data.challenges:
//               each WWW-Authenticate Payment challenge with its `request` decoded
//   credential  params._meta["org.paymentauth/credential"] (or the message's root
//               _meta): {challenge, payload, source?}, the challenge's `request` an object
//   receipt     result._meta["org.paymentauth/receipt"]: the Payment-Receipt decoded
//
// A tool call is decided by the same paywall as an HTTP request: this module
// turns a credential into the Authorization value the schemes read (the
// request re-encoded as JCS base64url, which is what the challenge id binds),
// and the paywall's refusal into the JSON-RPC error the transport defines.
import { z } from 'zod';
import type { Refusal } from '../core/decision.js';
import { parsePaymentChallenges } from '../schemes/payment/challenge.js';
import { MAX_CREDENTIAL_LENGTH, PAYMENT_SCHEME } from '../schemes/payment/charge.js';
import { CREDENTIAL_META_KEY, PAYMENT_REQUIRED_CODE, PAYMENT_VERIFICATION_FAILED_CODE } from '../schemes/payment/mcp-meta.js';
import { decodeBase64, encodeJson, parseJsonBytes } from '../schemes/payment/wire.js';

export { CREDENTIAL_META_KEY, PAYMENT_REQUIRED_CODE, PAYMENT_VERIFICATION_FAILED_CODE, RECEIPT_META_KEY } from '../schemes/payment/mcp-meta.js';
/** Where a paid tool's listing states its price (its `_meta`); the description says it in words too. */
export const PRICE_META_KEY = 'dev.l402paywall/price';

/** JSON-RPC's own error codes, for what is not a payment's (the transport draft's are in mcp-meta.ts). */
export const INVALID_PARAMS_CODE = -32602;
export const INTERNAL_ERROR_CODE = -32603;
/** A client asking for invoices faster than the server's limit: JSON-RPC's generic server error, the HTTP status in data. */
export const SERVER_ERROR_CODE = -32000;

// What a credential must look like to be worth re-encoding; the schemes check the rest, as for HTTP.
const ChallengeEcho = z.looseObject({
  id: z.string().max(256),
  realm: z.string().max(256),
  method: z.string().max(64),
  intent: z.string().max(64),
  request: z.union([z.record(z.string(), z.unknown()), z.string().max(MAX_CREDENTIAL_LENGTH)]),
  expires: z.string().max(64).optional(),
  description: z.string().max(1024).optional(),
  digest: z.string().max(1024).optional(),
  opaque: z.string().max(MAX_CREDENTIAL_LENGTH).optional(),
});

const ToolCredential = z.object({
  challenge: ChallengeEcho,
  payload: z.record(z.string(), z.unknown()),
  source: z.string().max(512).optional(),
});

/** An Authorization value no scheme reads as a credential: the paywall refuses it as malformed, with a fresh challenge. */
const MALFORMED = `${PAYMENT_SCHEME} !`;

/**
 * The Authorization value for a tool call's credential: undefined when none
 * was sent; a malformed one (refused with a fresh challenge) when it is not a
 * credential object, or too large to be one.
 */
export function credentialAuthorization(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const parsed = ToolCredential.safeParse(value);
  if (!parsed.success) return MALFORMED;
  const { challenge, payload, source } = parsed.data;
  try {
    const request = typeof challenge.request === 'string' ? challenge.request : encodeJson(challenge.request);
    const authorization = `${PAYMENT_SCHEME} ${encodeJson({ challenge: { ...challenge, request }, payload, ...(source !== undefined && { source }) })}`;
    return authorization.length <= MAX_CREDENTIAL_LENGTH + PAYMENT_SCHEME.length + 1 ? authorization : MALFORMED;
  } catch {
    // Not JSON that JCS can write (nested too deep for the stack): no credential of ours.
    return MALFORMED;
  }
}

/** The credential of a call: params._meta's, else the message's root _meta's (the draft has servers look in both). */
export function credentialOf(paramsMeta: unknown, rootMeta?: unknown): unknown {
  return metaValue(paramsMeta, CREDENTIAL_META_KEY) ?? metaValue(rootMeta, CREDENTIAL_META_KEY);
}

function metaValue(meta: unknown, key: string): unknown {
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta) ? (meta as Record<string, unknown>)[key] : undefined;
}

/**
 * A JSON-RPC message with a root `_meta` credential, moved into
 * `params._meta` where MCP SDKs read it (their message schema refuses unknown
 * root members); anything else is returned as it is. For servers that read
 * the message before their transport does (a stateless HTTP function).
 */
export function liftRootCredential(message: unknown): unknown {
  if (Array.isArray(message)) return message.map(liftRootCredential);
  if (typeof message !== 'object' || message === null) return message;
  const { _meta: rootMeta, ...rest } = message as Record<string, unknown>;
  if (rootMeta === undefined) return message;
  const credential = metaValue(rootMeta, CREDENTIAL_META_KEY);
  const params = rest.params;
  if (credential === undefined || typeof params !== 'object' || params === null || Array.isArray(params)) return rest;
  const paramsMeta = (params as Record<string, unknown>)._meta;
  // A credential in params wins; two would be two credentials for one call, and only one is read.
  if (metaValue(paramsMeta, CREDENTIAL_META_KEY) !== undefined) return rest;
  const meta = typeof paramsMeta === 'object' && paramsMeta !== null && !Array.isArray(paramsMeta) ? paramsMeta : {};
  return { ...rest, params: { ...params, _meta: { ...meta, [CREDENTIAL_META_KEY]: credential } } };
}

/** A Payment challenge as the JSON-RPC transport carries it: the header's parameters, `request` as its JSON object. */
export interface JsonChallenge {
  id: string;
  realm: string;
  method: string;
  intent: string;
  request: Record<string, unknown>;
  expires?: string;
  description?: string;
  digest?: string;
  opaque?: string;
}

/** The Payment challenges of a refusal's WWW-Authenticate values, as JSON objects. */
export function challengesOf(refusal: Refusal): JsonChallenge[] {
  const values = refusal.headers.filter(([name]) => name === 'WWW-Authenticate').map(([, value]) => value);
  const challenges: JsonChallenge[] = [];
  for (const { request, ...challenge } of parsePaymentChallenges(values).challenges) {
    const decoded = decodedJson(request);
    if (typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded))
      challenges.push({ ...challenge, request: decoded as Record<string, unknown> });
  }
  return challenges;
}

/** A Payment-Receipt value as the receipt object of a tool result. */
export function receiptObject(receipt: string): Record<string, unknown> | undefined {
  const decoded = decodedJson(receipt);
  return typeof decoded === 'object' && decoded !== null && !Array.isArray(decoded) ? (decoded as Record<string, unknown>) : undefined;
}

function decodedJson(text: string): unknown {
  const bytes = decodeBase64(text);
  return bytes && parseJsonBytes(bytes);
}

/** A JSON-RPC error: what a refused tool call answers. */
export interface ToolCallError {
  code: number;
  message: string;
  data: Record<string, unknown>;
}

/** Members of a 402's body that say more than the problem: a session's balance, a refused top-up, the session challenge's deposit. */
const EXTRA_MEMBERS = ['challengeId', 'session', 'sessionId', 'balanceMsat', 'balanceSpent', 'topUp'] as const;

/**
 * The paywall's refusal as the JSON-RPC error of the transport draft: no
 * credential -32042, a refused one -32043, each with fresh challenges and the
 * problem details; a request no credential could fix (two credentials, another
 * payment method) -32602; 429 and 503 (no invoice now, a store down) say
 * their HTTP status and when to retry.
 */
export function toolCallError(refusal: Refusal): ToolCallError {
  const body = refusal.body;
  const code = typeof body.code === 'string' ? body.code : 'PAYMENT_REQUIRED';
  const detail = toolDetail(code, typeof body.error === 'string' ? body.error : 'Payment required');
  const retry = typeof body.retryAfter === 'number' ? { retryAfterSeconds: body.retryAfter } : {};
  switch (refusal.status) {
    case 402: {
      const problem = {
        type: body.type,
        title: body.title,
        status: 402,
        detail,
        ...(typeof body.challengeId === 'string' && { challengeId: body.challengeId }),
      };
      const extra: Record<string, unknown> = {};
      for (const name of EXTRA_MEMBERS) if (body[name] !== undefined) extra[name] = body[name];
      const data = { httpStatus: 402, challenges: challengesOf(refusal), problem, code, ...extra };
      if (code === 'PAYMENT_REQUIRED') return { code: PAYMENT_REQUIRED_CODE, message: 'Payment Required', data };
      return { code: PAYMENT_VERIFICATION_FAILED_CODE, message: 'Payment Verification Failed', data: { ...data, failure: { reason: code, detail } } };
    }
    case 400:
      return { code: INVALID_PARAMS_CODE, message: 'Invalid params', data: { httpStatus: 400, code, detail } };
    case 429:
      return { code: SERVER_ERROR_CODE, message: detail, data: { httpStatus: 429, code, detail, ...retry } };
    default:
      return {
        code: INTERNAL_ERROR_CODE,
        message: detail,
        data: { httpStatus: refusal.status, code, detail, ...retry, ...(body.missing !== undefined && { missing: body.missing }) },
      };
  }
}

/** The paywall's sentences name HTTP's Authorization header where a tool's client must use _meta: said the transport's way. */
function toolDetail(code: string, detail: string): string {
  if (!detail.includes('Authorization')) return detail;
  if (code === 'PAYMENT_REQUIRED')
    return `Payment required: pay the invoice of one of the challenges and repeat the call with {challenge, payload} in params._meta["${CREDENTIAL_META_KEY}"]`;
  return `The credential in params._meta["${CREDENTIAL_META_KEY}"] is not one this tool takes: echo one of the challenges unchanged, with its payment's payload`;
}
