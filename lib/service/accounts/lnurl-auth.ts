// LNURL-auth challenges (LUD-04) for login and for erasure.
//
// A challenge is a k1 (32 random bytes) kept in the shared store with its
// purpose and the hash of a poll token. The QR code carries only k1; the poll
// token goes to the page that asked, so seeing the QR code is not enough to
// collect what the signature unlocks. A k1 is signed at most once (set-if-absent
// mark), and its result is collected at most once (delete-and-check).
//
// Login: the login (its bearer token) is created when the page collects, so the bearer token is
// never stored anywhere. Erasure: the deletion runs when the wallet signs, and
// the page collects the counts.
import { randomBytes } from 'node:crypto';
import { toString as qrCode } from 'qrcode';
import { z } from 'zod';
import { DatabaseUnavailable } from '../../db/types.js';
import { HttpError, notConfigured, retryLater } from '../../http/errors.js';
import { sameSecret } from '../../http/secrets.js';
import { verifyLnurlAuthSignature } from '../../lightning/lnurl-auth.js';
import { encodeLnurl } from '../../lightning/lnurl.js';
import { createLogin, enforceWindowLimit, sha256Hex, type IssuedLogin } from './auth.js';
import type { ServiceContext } from '../context.js';
import { eraseKey, type ErasureCounts } from './erasure.js';

export type ChallengePurpose = 'login' | 'erase';

// LUD-04 actions: wallets show "login" as a login and "auth" as authorising a stated action.
const ACTION: Record<ChallengePurpose, string> = { login: 'login', erase: 'auth' };

export interface Challenge {
  k1: string;
  /** LUD-01 bech32 of the wallet's callback URL (show it upper case in a QR code). */
  lnurl: string;
  expiresAt: string;
  /** For the page that asked only: collects the result with k1. Never in the QR code. */
  pollToken: string;
  /** The QR code of `lnurl` as an SVG document, so a page needs no QR library. */
  qr: string;
}

interface ChallengeRecord {
  purpose: ChallengePurpose;
  pollTokenHash: string;
  /** Unix ms. */
  expiresAt: number;
}

interface SignedRecord {
  purpose: ChallengePurpose;
  pollTokenHash: string;
  pubkey: string;
  erased?: ErasureCounts;
}

// The k1's single-use mark: set (if absent) when a valid signature arrives, "done" once its result is stored.
const USED_SIGNING = 'signing';
const USED_DONE = 'done';

const keys = {
  challenge: (k1: string) => `lnurl-auth:challenge:${k1}`,
  signed: (k1: string) => `lnurl-auth:signed:${k1}`,
  used: (k1: string) => `lnurl-auth:used:${k1}`,
};

const hex = (bytes: number, what: string) =>
  z
    .string({ error: `${what} is required` })
    .trim()
    .toLowerCase()
    .regex(new RegExp(`^[0-9a-f]{${bytes * 2}}$`), `${what} must be ${bytes} bytes of hex`);

export const K1 = hex(32, 'k1');
/** The poll's query; `source` is the request that handed out the token, which the error names. */
const pollQuery = (source: string) =>
  z.object({
    k1: K1,
    pollToken: z
      .string({ error: 'pollToken is required' })
      .trim()
      .regex(/^[A-Za-z0-9_-]{43}$/, `pollToken must be the one ${source} gave`),
  });
export const PollQuery = pollQuery('GET /api/lnurl-auth');
const ErasurePollQuery = pollQuery('POST /api/delete-data');
export const WalletQuery = z.object({
  k1: K1,
  // Echoed from the callback URL the wallet showed (LUD-04): checked against the challenge's purpose.
  tag: z.string().max(20).optional(),
  action: z.string().max(20).optional(),
  sig: z.string({ error: 'sig is required' }).trim().max(200),
  key: z.string({ error: 'key is required' }).trim().max(200),
});

/** A fresh challenge; `requestUrl` gives the origin the wallet calls back. */
export async function createChallenge(ctx: ServiceContext, requestUrl: string, clientIp: string, purpose: ChallengePurpose): Promise<Challenge> {
  const origin = callbackOrigin(ctx, requestUrl);
  await enforceWindowLimit(ctx, 'lnurl-auth', clientIp, ctx.config.auth.ratePerMinute, 60_000, 'Too many LNURL-auth requests from this address; wait a minute');
  const k1 = randomBytes(32).toString('hex');
  const pollToken = randomBytes(32).toString('base64url');
  const ttlMs = ctx.config.auth.challengeTtlSeconds * 1000;
  const record: ChallengeRecord = { purpose, pollTokenHash: sha256Hex(pollToken), expiresAt: Date.now() + ttlMs };
  await ctx.store.set(keys.challenge(k1), JSON.stringify(record), { ttlMs });
  const callback = new URL('/api/lnurl-auth', origin);
  callback.search = new URLSearchParams({ tag: 'login', k1, action: ACTION[purpose] }).toString();
  const lnurl = encodeLnurl(callback.toString());
  return { k1, lnurl, expiresAt: new Date(record.expiresAt).toISOString(), pollToken, qr: await qrSvg(lnurl) };
}

// Upper case (LUD-01) lets the encoder use alphanumeric mode: a smaller, easier to scan code.
// Medium error correction survives a phone camera reading a screen.
function qrSvg(lnurl: string): Promise<string> {
  return qrCode(lnurl, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
}

// Where the wallet calls back: the configured public URL (PUBLIC_URL; on Vercel
// its production domain). In production never the request's Host header, which
// the client chooses: without a public URL no challenge is made (503 naming
// PUBLIC_URL). Locally the request's own origin, so a phone on the LAN calls
// back the address it opened.
function callbackOrigin(ctx: ServiceContext, requestUrl: string): string {
  if (ctx.config.publicUrl) return ctx.config.publicUrl;
  if (ctx.config.production) {
    throw notConfigured(
      'LNURL-auth needs PUBLIC_URL, the https origin wallets call back (it is never taken from a request); set PUBLIC_URL',
      ['PUBLIC_URL'],
      60,
    );
  }
  return new URL(requestUrl).origin;
}

export type WalletAnswer = { status: 'OK' } | { status: 'ERROR'; reason: string };

/**
 * The wallet's callback (`k1`, `sig`, `key`). Answers in LUD-04's shape for
 * every refusal; only a store or database outage throws (503), and then the
 * k1 stays usable so the wallet can try again.
 */
export async function answerWallet(ctx: ServiceContext, query: Record<string, string>, clientIp: string): Promise<WalletAnswer> {
  const parsed = WalletQuery.safeParse(query);
  if (!parsed.success) return refuse(parsed.error.issues[0]!.message);
  const { k1, sig, key } = parsed.data;
  await enforceWindowLimit(ctx, 'lnurl-auth', clientIp, ctx.config.auth.ratePerMinute, 60_000, 'Too many LNURL-auth requests from this address; wait a minute');
  const challenge = parseRecord<ChallengeRecord>(await ctx.store.get(keys.challenge(k1)));
  if (!challenge || challenge.expiresAt <= Date.now()) return refuse('Unknown or expired k1: ask for a new QR code');
  // The wallet shows the user what tag and action say; a signature given for a
  // "login" must never run an erasure (an edited LNURL), so both must be the
  // ones this k1 was issued with. Refused before anything is marked: the
  // untampered QR code still works.
  const { tag, action } = parsed.data;
  if (tag !== 'login' || action !== ACTION[challenge.purpose]) {
    return refuse(`This callback was altered: k1 was issued with tag=login and action=${ACTION[challenge.purpose]}; scan the QR code as shown`);
  }
  const check = verifyLnurlAuthSignature(k1, sig, key);
  if (!check.ok) return refuse(check.reason);
  const pubkey = key.toLowerCase();
  const ttlMs = ctx.config.auth.challengeTtlSeconds * 1000;
  if (!(await ctx.store.set(keys.used(k1), USED_SIGNING, { ifAbsent: true, ttlMs }))) return refuse('This k1 has already been used: ask for a new QR code');
  const signed: SignedRecord = { purpose: challenge.purpose, pollTokenHash: challenge.pollTokenHash, pubkey };
  try {
    if (challenge.purpose === 'erase') signed.erased = await eraseKey(await ctx.database(), pubkey);
    await ctx.store.set(keys.signed(k1), JSON.stringify(signed), { ttlMs });
    // Written after the result, so a poll that sees "done" and no result knows it was collected.
    await ctx.store.set(keys.used(k1), USED_DONE, { ttlMs });
  } catch (error) {
    await ctx.store.del(keys.used(k1)).catch(() => {});
    if (error instanceof DatabaseUnavailable || error instanceof HttpError) {
      throw retryLater(503, 'TEMPORARILY_UNAVAILABLE', 'The service cannot complete this right now; sign again in a moment', 5);
    }
    throw error;
  }
  return { status: 'OK' };
}

function refuse(reason: string): WalletAnswer {
  return { status: 'ERROR', reason };
}

export type Collected<T> = { status: 'pending'; expiresAt: string } | ({ status: 'ok' } & T);

/** The page's poll for a login: pending until the wallet signs, then the login's token, once. */
export async function collectLogin(ctx: ServiceContext, query: unknown): Promise<Collected<IssuedLogin>> {
  const { k1, pollToken } = PollQuery.parse(query);
  const result = await collect(ctx, 'login', k1, pollToken);
  if (!('signed' in result)) return result;
  try {
    return { status: 'ok', ...(await createLogin(ctx, result.signed.pubkey)) };
  } catch (error) {
    // Put the result back so the page's next poll can still log in.
    await ctx.store.set(keys.signed(k1), JSON.stringify(result.signed), { ttlMs: ctx.config.auth.challengeTtlSeconds * 1000, ifAbsent: true }).catch(() => {});
    throw error;
  }
}

/** The page's poll for an erasure: pending until the wallet signs (and the deletion ran), then the counts, once. */
export async function collectErasure(ctx: ServiceContext, query: unknown): Promise<Collected<{ deleted: ErasureCounts }>> {
  const { k1, pollToken } = ErasurePollQuery.parse(query);
  const result = await collect(ctx, 'erase', k1, pollToken);
  if (!('signed' in result)) return result;
  return { status: 'ok', deleted: result.signed.erased! };
}

async function collect(
  ctx: ServiceContext,
  purpose: ChallengePurpose,
  k1: string,
  pollToken: string,
): Promise<{ status: 'pending'; expiresAt: string } | { signed: SignedRecord }> {
  // The mark first: read in this order, "done" with no result can only mean collected.
  const used = await ctx.store.get(keys.used(k1));
  const [challenge, signed] = await Promise.all([
    ctx.store.get(keys.challenge(k1)).then(parseRecord<ChallengeRecord>),
    ctx.store.get(keys.signed(k1)).then(parseRecord<SignedRecord>),
  ]);
  const record = signed ?? challenge;
  const notFound = new HttpError(404, 'CHALLENGE_NOT_FOUND', 'Unknown or expired challenge: ask for a new QR code');
  if (!record) throw notFound;
  if (!sameSecret(sha256Hex(pollToken), record.pollTokenHash)) throw new HttpError(401, 'POLL_TOKEN_INVALID', 'pollToken does not belong to this challenge');
  // A login QR code cannot erase, nor an erasure QR code log in.
  if (record.purpose !== purpose) throw notFound;
  if (!signed) {
    if (used === USED_DONE) throw alreadyCollected();
    const open = challenge!; // with nothing signed, the record is the challenge
    // Signed but still being processed (an erasure running) stays pending even past expiry.
    if (used !== USED_SIGNING && open.expiresAt <= Date.now()) throw notFound;
    return { status: 'pending', expiresAt: new Date(open.expiresAt).toISOString() };
  }
  // Whoever deletes the record collects it; a second poll finds nothing.
  if ((await ctx.store.del(keys.signed(k1))) === 0) throw alreadyCollected();
  return { signed };
}

function alreadyCollected(): HttpError {
  return new HttpError(410, 'ALREADY_COLLECTED', 'This challenge was signed and its result already collected');
}

function parseRecord<T>(raw: string | null): T | null {
  return raw === null ? null : (JSON.parse(raw) as T);
}
