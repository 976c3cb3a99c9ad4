// Payment credentials (draft-httpauth-payment, "Credentials"):
//   Authorization: Payment <base64url(JSON {challenge, source?, payload: {preimage}})>
// where challenge echoes the parameters of the challenge being answered.
// verifyLightningCredential is the server's whole check and needs no state:
// the echoed challenge must re-derive to its id under a key of the ring (so
// every bound parameter is as issued: amount, invoice, payment hash, realm,
// expiry, opaque), must not have expired, and SHA256(preimage) must be its
// payment hash. What it was bound to comes back as plain values; whether that
// fits this request (route, price, owner) and whether the payment was already
// used is the paywall's to decide, as with an L402 token.
import { z } from 'zod';
import { equalWords, hex32Words, hexWordsAt } from '../l402/encoding.js';
import { base64UrlEncode } from '../l402/encoding.js';
import { padBlock, sha256Block } from '../l402/sha256-block.js';
import type { BindingKeyring } from './binding.js';
import {
  CHARGE_INTENT,
  LIGHTNING_METHOD,
  PAYMENT_SCHEME,
  PaymentChallengeSchema,
  decodeBindingFields,
  decodeChargeRequest,
  firstIssue,
  plainChallenge,
  type BindingFields,
  type LightningNetwork,
  type PaymentChallenge,
} from './challenge.js';
import { refuse, type Refused } from './problem.js';
import { MAX_PARAM_LENGTH, decodeBase64, encodeJson, parseJsonBytes, parseTime } from './wire.js';

/** The longest Authorization value read; the core draft asks servers to take credentials of at least 4 KB. */
export const MAX_CREDENTIAL_LENGTH = MAX_PARAM_LENGTH;

/** The scheme in any case (RFC 9110 auth-schemes are case-insensitive), spaces, then base64url, padded or not. */
const CREDENTIAL = /^payment[ ]+([A-Za-z0-9_+/-]+={0,2})[ \t]*$/i;

const PaymentCredentialSchema = z.object({
  challenge: PaymentChallengeSchema,
  source: z.string().max(512).optional(),
  // draft-lightning-charge: 32 bytes as exactly 64 lower-case hex digits; other payload fields are ignored.
  payload: z.object({ preimage: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits') }),
});

export type PaymentCredential = z.infer<typeof PaymentCredentialSchema>;

export type CredentialParse = { ok: true; credential: PaymentCredential } | Refused;

/** Reads an Authorization value as a Payment credential; a refusal names what is wrong and never repeats the preimage. */
export function parsePaymentCredential(authorization: string | null | undefined): CredentialParse {
  if (!authorization)
    return refuse('payment-required', 'Payment required: pay the invoice in the challenge and retry with Authorization: Payment <credential>');
  if (authorization.length > MAX_CREDENTIAL_LENGTH + 16) return refuse('lightning/malformed-credential', 'Authorization is too long for a Payment credential');
  const match = CREDENTIAL.exec(authorization.trim());
  if (!match) return refuse('lightning/malformed-credential', 'Authorization is not of the form "Payment <base64url>"');
  const bytes = decodeBase64(match[1]!, MAX_CREDENTIAL_LENGTH);
  const json = bytes && parseJsonBytes(bytes);
  if (json === undefined) return refuse('lightning/malformed-credential', 'the credential is not base64url JSON');
  const fast = plainCredential(json);
  if (fast) return { ok: true, credential: fast };
  const parsed = PaymentCredentialSchema.safeParse(json);
  if (!parsed.success) return refuse('lightning/malformed-credential', `the credential is malformed: ${firstIssue(parsed.error)}`);
  return { ok: true, credential: parsed.data };
}

/** A Lightning charge credential that verified. */
export interface VerifiedCharge {
  ok: true;
  challengeId: string;
  realm: string;
  amountSats: number;
  /** Lower-case hex: the replay key. */
  paymentHash: string;
  invoice: string;
  network: LightningNetwork;
  /** Unix seconds: when the challenge expires (the replay store may forget the payment after). */
  expiresAt: number;
  /** The opaque fields the challenge was issued with (none: empty). */
  binding: BindingFields;
  /** The payer, if it said. Unverified: the draft forbids requiring it. */
  source?: string;
}

export type CredentialVerification = VerifiedCharge | Refused;

const NO_BINDING: BindingFields = Object.freeze({});

/**
 * Verifies an Authorization value as an answer to one of this server's
 * Lightning charge challenges, at `nowSeconds`. Checks in order: form,
 * method and intent, binding (any key of the ring), expiry, preimage.
 * Local: no store, no network.
 */
export function verifyLightningCredential(
  keyring: BindingKeyring,
  authorization: string | null | undefined,
  nowSeconds = Date.now() / 1000,
): CredentialVerification {
  const parsed = parsePaymentCredential(authorization);
  if (!parsed.ok) return parsed;
  const { challenge, payload, source } = parsed.credential;
  if (challenge.method !== LIGHTNING_METHOD || challenge.intent !== CHARGE_INTENT) {
    return refuse('method-unsupported', `this server takes lightning/charge credentials, not ${challenge.method}/${challenge.intent}`);
  }
  // The id binds the request's and opaque's bytes: they are bound as this
  // server wrote them (base64url, no padding), so an echo that spells the same
  // bytes with padding still verifies, and the fields read below are the bytes bound.
  const requestBytes = decodeBase64(challenge.request);
  const opaqueBytes = challenge.opaque === undefined ? undefined : decodeBase64(challenge.opaque);
  if (!requestBytes || (challenge.opaque !== undefined && !opaqueBytes))
    return refuse('lightning/malformed-credential', 'the echoed request or opaque is not base64url');
  const bound = {
    realm: challenge.realm,
    method: challenge.method,
    intent: challenge.intent,
    request: asWritten(challenge.request, requestBytes),
    expires: challenge.expires,
    digest: challenge.digest,
    opaque: opaqueBytes && asWritten(challenge.opaque!, opaqueBytes),
  };
  if (!keyring.verify(challenge.id, bound)) {
    return refuse('lightning/unknown-challenge', 'the challenge was not issued by this server, or was changed since');
  }
  // Every challenge this module issues has an expiry; one without was not issued by it.
  const expiresAt = challenge.expires === undefined ? undefined : parseTime(challenge.expires);
  if (expiresAt === undefined) return refuse('lightning/unknown-challenge', 'the challenge has no expiry');
  if (expiresAt <= nowSeconds) return refuse('lightning/expired-invoice', 'the challenge has expired: request a new one');
  // Bound by this server, so these fail only if it issued something it cannot read back.
  const request = decodeChargeRequest(requestBytes);
  const binding = opaqueBytes ? decodeBindingFields(opaqueBytes) : NO_BINDING;
  if (!request.ok || request.request.methodDetails.paymentHash === undefined || !binding) {
    return refuse('verification-failed', 'the challenge does not hold what this server issues');
  }
  const { amount, methodDetails } = request.request;
  const paymentHash = methodDetails.paymentHash!;
  if (!isPreimageOf(payload.preimage, paymentHash))
    return refuse('lightning/invalid-preimage', 'SHA-256 of the preimage is not the payment hash of the challenge');
  return {
    ok: true,
    challengeId: challenge.id,
    realm: challenge.realm,
    amountSats: Number(amount),
    paymentHash,
    invoice: methodDetails.invoice,
    network: methodDetails.network ?? 'mainnet',
    expiresAt,
    binding,
    ...(source !== undefined && { source }),
  };
}

/**
 * The Authorization value a payer sends for a challenge it paid: the challenge
 * echoed unchanged, the preimage (any case; sent lower-case), JCS-serialised
 * as draft-lightning-charge asks. Throws a TypeError on a preimage that is not
 * 32 bytes of hex.
 */
export function formatCredential(challenge: PaymentChallenge, preimage: string, source?: string): string {
  const lower = typeof preimage === 'string' ? preimage.toLowerCase() : '';
  if (!/^[0-9a-f]{64}$/.test(lower)) throw new TypeError('preimage must be 32 bytes of hex');
  return `${PAYMENT_SCHEME} ${encodeJson({ challenge, payload: { preimage: lower }, ...(source !== undefined && { source }) })}`;
}

const PREIMAGE = /^[0-9a-f]{64}$/;

/** PaymentCredentialSchema's value, when a plain check shows it holds (challenge.ts plainChallenge); undefined otherwise, and the schema says why. */
function plainCredential(json: unknown): PaymentCredential | undefined {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return undefined;
  const { challenge, source, payload } = json as Record<string, unknown>;
  const echoed = plainChallenge(challenge);
  if (!echoed || !(source === undefined || (typeof source === 'string' && source.length <= 512))) return undefined;
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return undefined;
  const preimage = (payload as Record<string, unknown>).preimage;
  if (typeof preimage !== 'string' || !PREIMAGE.test(preimage)) return undefined;
  return { challenge: echoed, ...(source !== undefined && { source: source as string }), payload: { preimage } };
}

/** SHA-256 of a preimage (64 lower-case hex digits, as the schema takes it) equals a payment hash (lower-case hex): one compression, constant-time comparison. */
function isPreimageOf(preimage: string, paymentHash: string): boolean {
  const block = new Int32Array(16);
  const hash = new Int32Array(8);
  const digest = new Int32Array(8);
  if (!hexWordsAt(preimage, 0, block) || !hex32Words(paymentHash, hash)) return false;
  padBlock(block, 32, 0);
  sha256Block(block, digest);
  return equalWords(digest, hash);
}

// base64url digits whose value has its low 4 bits (a 2-character tail) or low 2 bits (a 3-character tail) clear.
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The bytes' base64url as this server writes it (no padding): the echoed
 * text itself when it already is that (no padding, no stray bits in its last
 * digit, as every text this server wrote), which spares re-encoding a
 * kilobyte per credential; otherwise written again.
 */
function asWritten(text: string, bytes: Uint8Array): string {
  const tail = text.length % 4;
  if (!text.includes('=') && tail !== 1) {
    const last = BASE64URL.indexOf(text[text.length - 1]!);
    if (last >= 0 && (tail === 0 || (last & (tail === 2 ? 15 : 3)) === 0)) return text;
  }
  return base64UrlEncode(bytes);
}
