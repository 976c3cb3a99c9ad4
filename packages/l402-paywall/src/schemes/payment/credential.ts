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
import type { BindingKeyring } from './binding.js';
import { PaymentChallengeSchema, SCHEMA_EXPLAIN, firstIssue, type PaymentChallenge } from './challenge.js';
import { PAYMENT_SCHEME, readCredential, verifyCharge, type CredentialParse, type CredentialVerification, type Explain } from './charge.js';
import { encodeJson } from './wire.js';

export { MAX_CREDENTIAL_LENGTH } from './charge.js';
export type { CredentialParse, CredentialVerification, PaymentCredential, VerifiedCharge } from './charge.js';

const PaymentCredentialSchema = z.object({
  challenge: PaymentChallengeSchema,
  source: z.string().max(512).optional(),
  // draft-lightning-charge: 32 bytes as exactly 64 lower-case hex digits; other payload fields are ignored.
  payload: z.object({ preimage: z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex digits') }),
});

/** The schemas say what is wrong (charge.ts checks without them). */
const EXPLAIN: Explain = {
  ...SCHEMA_EXPLAIN,
  credential(json) {
    const parsed = PaymentCredentialSchema.safeParse(json);
    return parsed.success ? 'invalid' : firstIssue(parsed.error);
  },
};

/** Reads an Authorization value as a Payment credential; a refusal names what is wrong and never repeats the preimage. */
export function parsePaymentCredential(authorization: string | null | undefined): CredentialParse {
  return readCredential(authorization, EXPLAIN);
}

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
  return verifyCharge(keyring, authorization, nowSeconds, EXPLAIN);
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
