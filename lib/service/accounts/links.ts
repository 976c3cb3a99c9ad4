// Linking a Lightning Address to an LNURL-auth key (docs/architecture.md decision 11):
// the service pays the address 1 sat with a short code in the LUD-12 comment;
// only whoever receives payments there can read the code and type it back.
//
// Brute force: a code is 40 random bits, lives LINK_CODE_TTL_MINUTES, allows
// LINK_CODE_ATTEMPTS wrong entries (counted atomically in the shared store),
// and a new code costs a payment limited to LINK_RATE_LIMIT_PER_HOUR per key.
//
// Cost: keys are free, so the proofs the service pays are also bounded per UTC
// day, in the shared store: per client IP (an IPv6 /64), per address, and for
// the whole service. The service-wide cap is what the service spends at most;
// the others keep one client from using it all up, so that others can still
// link (docs/dashboard-and-stats.md "Linking a Lightning Address").
import { randomBytes, randomUUID } from 'node:crypto';
import { HttpError, retryLater } from '../../http/errors.js';
import { clientNetwork } from '../../http/input.js';
import { sameSecret } from '../../http/secrets.js';
import { LnurlError, fetchInvoiceForAddress, outboundPolicy } from '../../lightning/lnurl.js';
import { PaymentFailed, ProviderConfigError, ProviderUnsupported } from 'l402-paywall/lightning';
import { providerUnavailable } from '../money/provider-errors.js';
import { enforceWindowLimit, linkedAddresses, sha256Hex, type Login } from './auth.js';
import type { ServiceContext } from '../context.js';

export const LINK_AMOUNT_MSAT = 1000;
// The proof budgets' window: a UTC day.
const DAY_MS = 86_400_000;
// Routing fee the 1-sat proof may cost at most.
const LINK_MAX_FEE_MSAT = 10_000;
// Crockford's base32: no I, L, O, U, so a code read off a phone is typed back right.
const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CODE_LENGTH = 8;

interface PendingCode {
  id: string;
  codeHash: string;
  /** Unix ms. */
  expiresAt: number;
}

export type LinkStarted = { address: string; status: 'linked' } | { address: string; status: 'code-sent'; expiresAt: string; attempts: number };

const codeKey = (pubkey: string, address: string) => `link:code:${pubkey}:${address}`;
const attemptsKey = (id: string) => `link:attempts:${id}`;

/** Sends the 1-sat proof with a fresh code to `address` (normalised), unless this key already has it; `clientIp` started it. */
export async function startLink(ctx: ServiceContext, login: Login, address: string, clientIp: string): Promise<LinkStarted> {
  const db = await ctx.database();
  if ((await linkedAddresses(db, login.pubkey)).includes(address)) return { address, status: 'linked' };
  const { auth } = ctx.config;
  await enforceWindowLimit(
    ctx,
    'link',
    login.pubkey,
    auth.linkRatePerHour,
    3_600_000,
    'Too many links started for this key; each one pays a sat, so wait a while',
  );
  // The service-wide budget last: a start refused by a narrower one spends none of it.
  await enforceWindowLimit(
    ctx,
    'link-proofs-ip',
    clientNetwork(clientIp),
    auth.linkProofsPerIpPerDay,
    DAY_MS,
    'Links started from this network have been sent as many 1-sat proofs as they may today; try again tomorrow',
  );
  await enforceWindowLimit(
    ctx,
    'link-proofs-address',
    address,
    auth.linkProofsPerAddressPerDay,
    DAY_MS,
    `${address} has been sent as many 1-sat proofs as one address may get today; try again tomorrow`,
  );
  await enforceWindowLimit(
    ctx,
    'link-proofs',
    'service',
    auth.linkProofsPerDay,
    DAY_MS,
    'The service has sent as many link proofs as it will today; try again tomorrow',
  );

  const code = newCode();
  const ttlMs = ctx.config.auth.linkCodeTtlSeconds * 1000;
  const pending: PendingCode = { id: randomUUID(), codeHash: codeHash(login.pubkey, address, code), expiresAt: Date.now() + ttlMs };
  // Stored before paying: the code can arrive before we hear the payment went through.
  await ctx.store.set(codeKey(login.pubkey, address), JSON.stringify(pending), { ttlMs });
  const forget = () => ctx.store.del(codeKey(login.pubkey, address)).catch(() => 0);

  let invoice: string;
  try {
    ({ invoice } = await fetchInvoiceForAddress(address, LINK_AMOUNT_MSAT, {
      policy: outboundPolicy(ctx.config),
      network: ctx.config.lightning.network,
      comment: `L402 link code ${formatCode(code)}`,
    }));
  } catch (error) {
    await forget();
    throw addressRefused(error, address);
  }
  try {
    await ctx.provider.payInvoice({ invoice, maxFeeMsat: LINK_MAX_FEE_MSAT });
  } catch (error) {
    if (error instanceof PaymentFailed) {
      await forget();
      throw retryLater(503, 'LINK_PAYMENT_FAILED', `The service could not pay 1 sat to ${address} right now; try again later`, 60);
    }
    if (error instanceof ProviderConfigError || error instanceof ProviderUnsupported) {
      await forget(); // refused before anything was sent
      throw providerUnavailable(error);
    }
    // Outcome unknown: the sat may still arrive, and its code then still works.
    throw retryLater(
      503,
      'LINK_PAYMENT_UNCERTAIN',
      `The 1-sat payment to ${address} may or may not have gone through; if it arrives, enter its code, otherwise try again later`,
      60,
    );
  }
  return { address, status: 'code-sent', expiresAt: new Date(pending.expiresAt).toISOString(), attempts: ctx.config.auth.linkCodeAttempts };
}

/** Links `address` to the login's key when `code` is the one sent to it. */
export async function confirmLink(ctx: ServiceContext, login: Login, address: string, code: string): Promise<{ address: string; status: 'linked' }> {
  const db = await ctx.database();
  const key = codeKey(login.pubkey, address);
  const raw = await ctx.store.get(key);
  if (raw === null) throw new HttpError(404, 'LINK_CODE_NOT_FOUND', `No code is waiting for ${address} (expired, used up or never sent); start the link again`);
  const pending = JSON.parse(raw) as PendingCode;
  const max = ctx.config.auth.linkCodeAttempts;
  const attempt = await ctx.store.incrementBelow(attemptsKey(pending.id), max, Math.max(1000, pending.expiresAt - Date.now()));
  if (attempt === null) {
    await ctx.store.del(key);
    throw retryLater(429, 'TOO_MANY_ATTEMPTS', `Too many wrong codes for ${address}; start the link again for a new code`, 60);
  }
  if (!sameSecret(codeHash(login.pubkey, address, normaliseCode(code)), pending.codeHash)) {
    const attemptsLeft = max - attempt;
    if (attemptsLeft === 0) await ctx.store.del(key);
    throw new HttpError(
      400,
      'WRONG_CODE',
      attemptsLeft > 0
        ? `That is not the code sent to ${address}; ${attemptsLeft} attempt(s) left`
        : `That is not the code sent to ${address}, and it was the last attempt; start the link again`,
      { attemptsLeft },
    );
  }
  await ctx.store.del(key);
  await db.query('INSERT INTO address_links (pubkey, address) VALUES ($1, $2) ON CONFLICT DO NOTHING', [login.pubkey, address]);
  return { address, status: 'linked' };
}

/** Removes a link of the login's key; true when there was one. */
export async function unlink(ctx: ServiceContext, login: Login, address: string): Promise<boolean> {
  const db = await ctx.database();
  return (await db.query('DELETE FROM address_links WHERE pubkey = $1 AND address = $2 RETURNING 1', [login.pubkey, address])).length > 0;
}

function newCode(): string {
  // 256 is a multiple of 32: masking keeps every character equally likely.
  return Array.from(randomBytes(CODE_LENGTH), (byte) => ALPHABET[byte & 31]).join('');
}

function formatCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`;
}

/** What a person types: any case, with or without the dash and spaces; O for 0 and I/L for 1 forgiven. */
export function normaliseCode(input: string): string {
  return input.toUpperCase().replace(/[\s-]/g, '').replace(/O/g, '0').replace(/[IL]/g, '1');
}

// Bound to key and address: a code sent for one link opens no other.
function codeHash(pubkey: string, address: string, code: string): string {
  return sha256Hex(`${pubkey}\n${address}\n${code}`);
}

function addressRefused(error: unknown, address: string): Error {
  if (!(error instanceof LnurlError)) return error as Error;
  if (error.code === 'COMMENT_NOT_ALLOWED') {
    return new HttpError(
      422,
      'COMMENT_NOT_SUPPORTED',
      `The server of ${address} does not accept payment comments (LUD-12) long enough to carry a code, so it cannot be linked this way`,
    );
  }
  if (error.retryable)
    return retryLater(503, 'ADDRESS_UNREACHABLE', `The server of ${address} did not answer properly (${error.message}); try again later`, 60);
  return new HttpError(422, 'ADDRESS_REFUSED', `${address} cannot receive the 1-sat proof: ${error.message}`, { reason: error.code });
}
