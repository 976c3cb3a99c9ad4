// Payment challenges (draft-httpauth-payment, "Challenge (WWW-Authenticate)")
// for the Lightning charge intent (draft-lightning-charge):
//   WWW-Authenticate: Payment id="…", realm="…", method="lightning", intent="charge",
//     request="<base64url(JCS JSON)>", expires="<RFC 3339>"[, opaque="<base64url(JCS JSON)>"]
// The request holds what is paid: {amount, currency: "sat", description?,
// methodDetails: {invoice, paymentHash, network}}; opaque holds what the
// payment is for (route, owner: the conditions L402 puts in caveats), bound
// by the id like everything else (binding.ts). A server builds them here; a
// client reads them here, from any server, never trusting what it reads.
import { CONDITION_NAME as CAVEAT_NAME, MAX_CONDITIONS as MAX_CAVEATS } from '../../core/conditions.js';
import { z } from 'zod';
import { parseAuthenticate } from '../../http/authenticate.js';
import type { BindingKeyring } from './binding.js';
import {
  CHARGE_INTENT,
  LIGHTNING_METHOD,
  MAX_OPAQUE_LENGTH,
  chargeChallenge,
  plainBindingFields,
  plainChargeRequest,
  type BindingFields,
  type Explain,
  type LightningChargeOptions,
  type LightningChargeRequest,
  type LightningNetwork,
  type PaymentChallenge,
} from './charge.js';
import { MAX_PARAM_LENGTH, decodeBase64, parseJsonBytes, parseTime } from './wire.js';

export { CHARGE_INTENT, LIGHTNING_METHOD, PAYMENT_SCHEME, formatChallenge, plainChallenge } from './charge.js';
export type { BindingFields, LightningChargeOptions, LightningChargeRequest, LightningNetwork, PaymentChallenge } from './charge.js';

/** Longest WWW-Authenticate text read (all values joined): the core draft asks servers to keep one challenge under 8 KB. */
export const MAX_AUTHENTICATE_LENGTH = 32 * 1024;
/** Most Payment challenges read from one response: each costs a schema check, and a server offers a few at most. */
export const MAX_PAYMENT_CHALLENGES = 16;

const base64UrlText = (maxLength: number) =>
  z
    .string()
    .min(1)
    .max(maxLength)
    .regex(/^[A-Za-z0-9_-]+={0,2}$/, 'must be base64url');

/** A challenge's parameters, as a header carries them or a credential echoes them. Unknown parameters are dropped, as the draft asks. */
export const PaymentChallengeSchema = z.object({
  id: z.string().min(1).max(256),
  realm: z.string().max(256),
  // The core draft's ABNF: 1*LOWERALPHA for the method, 1*(ALPHA / DIGIT / "-") for the intent.
  method: z.string().regex(/^[a-z]{1,64}$/, 'must be lower-case letters'),
  intent: z.string().regex(/^[A-Za-z0-9-]{1,64}$/, 'must be letters, digits and "-"'),
  request: base64UrlText(MAX_PARAM_LENGTH),
  expires: z
    .string()
    .max(40)
    .refine((t) => parseTime(t) !== undefined, 'must be an RFC 3339 date-time')
    .optional(),
  digest: z.string().max(1024).optional(),
  description: z.string().max(1024).optional(),
  opaque: base64UrlText(MAX_OPAQUE_LENGTH).optional(),
});

const PARAMETER_NAMES = Object.keys(PaymentChallengeSchema.shape) as (keyof PaymentChallenge)[];

const LOWER_HEX_32 = /^[0-9a-f]{64}$/;

/** A Lightning charge's request object (draft-lightning-charge, "Request Schema"); unknown fields are dropped. */
export const LightningChargeRequestSchema = z.object({
  // Positive whole satoshis whose millisatoshis are still exact in a double.
  amount: z
    .string()
    .regex(/^[1-9][0-9]{0,15}$/, 'must be a positive whole number of satoshis')
    .refine((a) => Number(a) * 1000 <= Number.MAX_SAFE_INTEGER, 'is too large'),
  currency: z.literal('sat'),
  // BOLT 11 descriptions hold at most 639 bytes.
  description: z.string().max(639).optional(),
  recipient: z.string().max(1024).optional(),
  externalId: z.string().max(1024).optional(),
  methodDetails: z.object({
    invoice: z
      .string()
      .max(4096)
      .regex(/^(?:ln[0-9a-z]+|LN[0-9A-Z]+)$/, 'must be a BOLT 11 invoice'),
    paymentHash: z.string().regex(LOWER_HEX_32, 'must be 32 bytes of lower-case hex').optional(),
    network: z.enum(['mainnet', 'regtest', 'signet']).optional(),
  }),
});

/**
 * What opaque carries: a flat map of strings (the core draft's rule), here
 * with caveat-like names, so the paywall can hold it to a request as it holds
 * an L402 token's caveats.
 */
export const BindingFieldsSchema = z
  .record(z.string().regex(CAVEAT_NAME, 'names are caveat names: a lower-case letter, then lower-case letters, digits and _ (at most 32)'), z.string().max(512))
  .refine((fields) => Object.keys(fields).length <= MAX_CAVEATS, `at most ${MAX_CAVEATS} fields`);

/**
 * A Lightning charge challenge for an invoice, its id bound under the
 * keyring's newest key. Throws a TypeError on options that could not make a
 * valid challenge: they are the server's own, so that is a bug to surface.
 * The invoice is taken as issued: the backends check that an invoice has
 * the amount, payment hash and network asked for (lightning/providers/checks.ts).
 */
export function lightningChargeChallenge(keyring: BindingKeyring, options: LightningChargeOptions): PaymentChallenge {
  return chargeChallenge(keyring, options, SCHEMA_EXPLAIN);
}

/** What the schemas say is wrong with a value the plain checks of charge.ts refused. */
export const SCHEMA_EXPLAIN: Explain = {
  credential: () => 'not a credential',
  request: (value) => issueOf(LightningChargeRequestSchema, value),
  binding: (value) => issueOf(BindingFieldsSchema, value),
};

function issueOf(schema: z.ZodType, value: unknown): string {
  const parsed = schema.safeParse(value);
  return parsed.success ? 'invalid' : firstIssue(parsed.error);
}

/** The first thing zod found wrong, as `path: message`. */
export function firstIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return 'invalid';
  return issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message;
}

/** Why a Payment challenge in a header was not read. */
export interface ChallengeRefusal {
  reason: 'too-long' | 'too-many' | 'malformed';
  detail: string;
}

export interface ParsedChallenges {
  challenges: PaymentChallenge[];
  refusals: ChallengeRefusal[];
}

/**
 * The Payment challenges in one or more WWW-Authenticate values (other
 * schemes skipped, unknown parameters dropped), each checked against the
 * schema; the ones refused are said why. Never throws: whatever a server
 * sends is data. Quoted strings are RFC 9110's: a backslash escapes the next
 * character (mppx's non-standard `\uXXXX` reads as `uXXXX`); a parameter
 * given twice counts the first time. At most MAX_AUTHENTICATE_LENGTH
 * characters and MAX_PAYMENT_CHALLENGES challenges are read.
 */
export function parsePaymentChallenges(values: string | readonly string[] | null | undefined): ParsedChallenges {
  const text = typeof values === 'string' ? values : Array.isArray(values) ? values.join(', ') : '';
  const parsed: ParsedChallenges = { challenges: [], refusals: [] };
  if (text.length > MAX_AUTHENTICATE_LENGTH) {
    parsed.refusals.push({ reason: 'too-long', detail: `WWW-Authenticate is ${text.length} characters, over the ${MAX_AUTHENTICATE_LENGTH} read` });
    return parsed;
  }
  let seen = 0;
  for (const raw of parseAuthenticate(text)) {
    if (raw.scheme.toLowerCase() !== 'payment') continue;
    if (++seen > MAX_PAYMENT_CHALLENGES) {
      parsed.refusals.push({ reason: 'too-many', detail: `more than ${MAX_PAYMENT_CHALLENGES} Payment challenges; the rest were not read` });
      break;
    }
    if (raw.token68 !== undefined) {
      parsed.refusals.push({ reason: 'malformed', detail: 'a Payment challenge carries parameters, not a token68' });
      continue;
    }
    const fields: Partial<Record<keyof PaymentChallenge, string>> = {};
    for (const name of PARAMETER_NAMES) {
      const value = raw.params.get(name);
      if (value !== undefined) fields[name] = value;
    }
    const challenge = PaymentChallengeSchema.safeParse(fields);
    if (challenge.success) parsed.challenges.push(challenge.data);
    else parsed.refusals.push({ reason: 'malformed', detail: firstIssue(challenge.error) });
  }
  return parsed;
}

/** A Lightning charge challenge as a payer reads it. */
export interface LightningCharge {
  /** The challenge to echo in the credential. */
  challenge: PaymentChallenge;
  amountSats: number;
  invoice: string;
  /** The convenience copy of the invoice's payment hash; a payer checks it against the decoded invoice. */
  paymentHash?: string;
  network: LightningNetwork;
  description?: string;
  /** Unix seconds, from `expires`. */
  expiresAt?: number;
}

export type LightningChargeRead = { ok: true; charge: LightningCharge } | { ok: false; detail: string };

/** The Lightning charge in a challenge: its request decoded and checked. The invoice itself is the payer's to decode and compare. */
export function readLightningCharge(challenge: PaymentChallenge): LightningChargeRead {
  if (challenge.method !== LIGHTNING_METHOD || challenge.intent !== CHARGE_INTENT)
    return { ok: false, detail: `not a Lightning charge (${challenge.method}/${challenge.intent})` };
  const request = decodeChargeRequest(challenge.request);
  if (!request.ok) return request;
  const { amount, description, methodDetails } = request.request;
  return {
    ok: true,
    charge: {
      challenge,
      amountSats: Number(amount),
      invoice: methodDetails.invoice,
      ...(methodDetails.paymentHash !== undefined && { paymentHash: methodDetails.paymentHash }),
      // The draft's default when the field is absent.
      network: methodDetails.network ?? 'mainnet',
      ...(description !== undefined && { description }),
      ...(challenge.expires !== undefined && { expiresAt: parseTime(challenge.expires) }),
    },
  };
}

/** A request parameter (base64url text, or its bytes) read as a Lightning charge request. */
export function decodeChargeRequest(request: string | Uint8Array): { ok: true; request: LightningChargeRequest } | { ok: false; detail: string } {
  const bytes = typeof request === 'string' ? decodeBase64(request) : request;
  const json = bytes && parseJsonBytes(bytes);
  if (json === undefined) return { ok: false, detail: 'request is not base64url JSON' };
  const fast = plainChargeRequest(json);
  if (fast) return { ok: true, request: fast };
  const parsed = LightningChargeRequestSchema.safeParse(json);
  return parsed.success ? { ok: true, request: parsed.data } : { ok: false, detail: `request: ${firstIssue(parsed.error)}` };
}

/** An opaque parameter's bytes read as binding fields, frozen; undefined when they are not a flat map of strings as this module writes them. */
export function decodeBindingFields(bytes: Uint8Array): BindingFields | undefined {
  const json = parseJsonBytes(bytes);
  const fast = plainBindingFields(json);
  if (fast) return fast;
  const parsed = BindingFieldsSchema.safeParse(json);
  return parsed.success ? Object.freeze(parsed.data) : undefined;
}
