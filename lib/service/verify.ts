// POST /api/verify: server-side check of "<macaroon>:<preimage>" for clients
// that cannot verify themselves. Consumes a use only when asked to.
import { REJECTIONS, type RejectionCode } from 'l402-paywall';
import { verifyAuthorization } from 'l402-paywall';
import type { ServiceContext } from './context.js';

export type VerifyAnswer = { valid: true; paymentHash: string; expiresAt: string } | { valid: false; error: string; code: RejectionCode };

const invalid = (code: RejectionCode): VerifyAnswer => ({ valid: false, error: REJECTIONS[code], code });

/** `token` is "<macaroon>:<preimage>", or a whole "L402 <macaroon>:<preimage>" header value. */
export async function verifyTokenString(ctx: ServiceContext, token: string, consume: boolean): Promise<VerifyAnswer> {
  const result = verifyAuthorization(ctx.keyring, /^\s*(?:l402|lsat)\s/i.test(token) ? token : `L402 ${token.trim()}`);
  if (!result.ok) return { valid: false, error: result.rejection.message, code: result.rejection.code };
  const { hash, exp, caveats } = result.token;
  const usesCaveat = caveats.find((c) => c.startsWith('uses='));
  const maxUses = usesCaveat ? Number(usesCaveat.slice(5)) : 1;
  if (consume) {
    if (!(await ctx.replay.claim(hash, maxUses, exp))) return invalid('TOKEN_ALREADY_USED');
  } else if ((await ctx.replay.usedCount(hash)) >= maxUses) {
    return invalid('TOKEN_ALREADY_USED');
  }
  return { valid: true, paymentHash: hash, expiresAt: new Date(exp * 1000).toISOString() };
}
