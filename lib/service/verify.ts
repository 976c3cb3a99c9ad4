// POST /api/verify: server-side check of "<macaroon>:<preimage>" for clients
// that cannot verify themselves. Consumes a use only when asked to.
//
// The answer says what the token is good for (amount, route, every caveat), so
// a 1-sat token cannot pass for a 1000-sat one. The caller may state what it
// sells (route, priceSats, other conditions): they are checked exactly as the
// paywall checks them (checkCaveats), so every condition in the token must be
// stated and met; an unknown one fails closed.
import { REJECTIONS, checkCaveats, verifyAuthorization, verifyPaymentAuthorization, type CaveatExpectations, type RejectionCode } from 'l402-paywall';
import { randomUUID } from 'node:crypto';
import type { ServiceContext } from './context.js';

export interface Expectations {
  /** The route being sold; the token's `route` caveat must equal it. */
  route?: string;
  /** Its price; the token must have been paid at least this much. */
  priceSats?: number;
  /** Every other condition the caller's tokens carry (e.g. `owner`), with its exact value. */
  caveats?: Record<string, string>;
}

export type VerifyAnswer =
  | {
      valid: true;
      paymentHash: string;
      expiresAt: string;
      /** What was paid for the token (its price_msat caveat), or null if it names none. */
      amountSats: number | null;
      amountMsat: number | null;
      /** The route it is bound to, or null if none. */
      route: string | null;
      /** Every caveat of the token, as key -> value. */
      caveats: Record<string, string>;
      /** Requests one payment buys. */
      uses: number;
      /** A Payment credential only: its scheme and the challenge it answers. */
      scheme?: 'Payment';
      challengeId?: string;
    }
  | { valid: false; error: string; code: RejectionCode };

const invalid = (code: RejectionCode, error: string = REJECTIONS[code]): VerifyAnswer => ({ valid: false, error, code });

// The token came in the body, not in an Authorization header.
const MALFORMED_BODY_TOKEN = 'token is not an L402 credential: send "<macaroon>:<preimage>" (or a whole "L402 <macaroon>:<preimage>" header value)';

/**
 * `token` is "<macaroon>:<preimage>", a whole "L402 <macaroon>:<preimage>"
 * header value, or a whole "Payment <credential>" one (docs/mpp.md), checked
 * as the paywall checks it: the same expectations, the same replay record.
 */
export async function verifyTokenString(ctx: ServiceContext, token: string, consume: boolean, expect: Expectations = {}): Promise<VerifyAnswer> {
  if (/^\s*payment\s/i.test(token)) return verifyPaymentString(ctx, token.trim(), consume, expect);
  const result = verifyAuthorization(ctx.keyring, /^\s*(?:l402|lsat)\s/i.test(token) ? token : `L402 ${token.trim()}`);
  if (!result.ok) {
    const { code, message } = result.rejection;
    return invalid(code, code === 'MALFORMED_CREDENTIAL' ? MALFORMED_BODY_TOKEN : message);
  }
  return checkedAnswer(ctx, result.token, consume, expect);
}

/** A Payment credential: verified statelessly, then the same expectations and the same use as a token for the payment. */
async function verifyPaymentString(ctx: ServiceContext, credential: string, consume: boolean, expect: Expectations): Promise<VerifyAnswer> {
  const result = verifyPaymentAuthorization(ctx.keyring, credential);
  if (!result.ok) return invalid(result.rejection.code, result.rejection.message);
  const { paymentHash, expiresAt, challengeId } = result.charge;
  const answer = await checkedAnswer(ctx, { hash: paymentHash, exp: expiresAt, caveats: result.caveats }, consume, expect);
  return answer.valid ? { ...answer, scheme: 'Payment', challengeId } : answer;
}

/** What a verified credential is good for, held to the caller's expectations, its use counted or claimed. */
async function checkedAnswer(
  ctx: ServiceContext,
  { hash, exp, caveats }: { hash: string; exp: number; caveats: readonly string[] },
  consume: boolean,
  expect: Expectations,
): Promise<VerifyAnswer> {
  const values: Record<string, string> = {};
  for (const caveat of caveats) {
    const eq = caveat.indexOf('=');
    values[caveat.slice(0, eq)] = caveat.slice(eq + 1);
  }
  const maxUses = values.uses !== undefined ? Number(values.uses) : 1;
  if (expect.route !== undefined || expect.priceSats !== undefined || expect.caveats !== undefined) {
    // `uses` is understood here (counted below), as it is by the paywall.
    const exact = { ...expect.caveats, ...(values.uses !== undefined ? { uses: values.uses } : {}) };
    const expectations: CaveatExpectations = { exact };
    if (expect.route !== undefined) expectations.route = expect.route;
    if (expect.priceSats !== undefined) expectations.priceMsat = expect.priceSats * 1000;
    const checked = checkCaveats(caveats, expectations);
    if (!checked.ok) return invalid(checked.rejection.code, checked.rejection.message);
  }
  if (consume) {
    if (!(await claimUse(ctx, hash, maxUses, exp))) return invalid('TOKEN_ALREADY_USED');
  } else if ((await ctx.replay.usedCount(hash)) >= maxUses) {
    return invalid('TOKEN_ALREADY_USED');
  }
  const amountMsat = values.price_msat !== undefined ? Number(values.price_msat) : null;
  return {
    valid: true,
    paymentHash: hash,
    expiresAt: new Date(exp * 1000).toISOString(),
    amountSats: amountMsat === null ? null : amountMsat / 1000,
    amountMsat,
    route: values.route ?? null,
    caveats: values,
    uses: maxUses,
  };
}

/**
 * Claims one use for this request. When the store fails, the claim may still
 * have landed: its use is given back (exactly this attempt's) before the
 * error answers 503, so the caller's retry with the same token can succeed.
 */
async function claimUse(ctx: ServiceContext, hash: string, maxUses: number, expiresAt: number): Promise<boolean> {
  const attempt = randomUUID();
  try {
    return await ctx.replay.claim(hash, maxUses, expiresAt, attempt);
  } catch (error) {
    await ctx.replay.release(hash, attempt, expiresAt).catch(() => {}); // the store is failing: the claim's error is the one to report
    throw error;
  }
}
