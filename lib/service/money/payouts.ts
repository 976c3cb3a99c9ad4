// The split ledger and the payouts that settle it (docs/architecture.md decisions 6-7).
// This is where a bug loses real money, so every step is built to be safe when
// repeated, interrupted, or run by two instances at once:
//
// - A payment is split once: `splits` is keyed on the payment hash and written
//   with INSERT ... ON CONFLICT DO NOTHING, whatever the number of deliveries.
// - A share is paid once: one SQL statement locks the owner's accrued splits
//   (FOR UPDATE), creates the payout for exactly their sum and links them to it;
//   a split linked to a payout is never claimed again.
// - A payout is attempted by one instance at a time: an attempt first takes a
//   lease (an UPDATE that succeeds for one caller only) and works while it holds it.
// - The owner's invoice hash is stored BEFORE it is paid. When the outcome of a
//   payment is unknown (the provider timed out or crashed), the next attempt asks
//   the provider about that hash first. A new invoice is paid only once the
//   provider says the old one failed, or the old one can no longer be paid; a
//   provider that has no record of it may still make it later (an NWC request
//   waiting on a relay for an offline wallet), so until then the same invoice is
//   paid again: a payee takes one payment per hash, so that cannot pay twice.
// - Nobody is forgotten: a failed attempt leaves the payout pending with a
//   backoff and the reason; after PAYOUT_MAX_ATTEMPTS attempts that definitely
//   paid nothing it becomes `failed`, and its splits stay owed (state failed)
//   for an operator. Nothing is ever deleted.
// - Never overpay: the invoice must be for exactly the payout's amount on our
//   network (checked by lib/lightning/lnurl.ts and again here), and the routing
//   fee is capped (maxFeeMsat). The service pays the routing fee out of the fee
//   it earned on exactly the payments the payout covers, never more: the cap is
//   at most that earned fee, and shares accrue until it reaches
//   PAYOUT_MIN_FEE_MSAT (a budget a route can be found for). The owner
//   receives exactly the share.
import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../../db/index.js';
import { decodeInvoice } from 'l402-paywall/lightning';
import { fetchInvoiceForAddress, LnurlError, outboundPolicy, type AddressInvoice } from '../../lightning/lnurl.js';
import { PaymentFailed, ProviderConfigError, ProviderUnsupported, type PaymentStatus } from 'l402-paywall/lightning';
import type { ServiceContext } from '../context.js';
import { ownerShareMsat } from './split.js';
import { withTimeout } from '../../util/async.js';
import { describeError } from '../../util/describe-error.js';

export type SplitState = 'accrued' | 'pending' | 'paid' | 'failed';
export type SplitSource = 'webhook' | 'reconcile' | 'manual';
export type PayoutState = 'pending' | 'paid' | 'failed';

export interface SplitRecord {
  paymentHash: string;
  ownerAddress: string;
  amountMsat: number;
  ownerMsat: number;
  feeMsat: number;
  state: SplitState;
  payoutId: string | null;
  source: SplitSource;
  /** False when the row was already there (a redelivery): nothing new was owed. */
  created: boolean;
}

export interface PayoutRow {
  id: string;
  ownerAddress: string;
  amountMsat: number;
  maxFeeMsat: number;
  state: PayoutState;
  invoiceHash: string | null;
  /** The BOLT11 invoice of invoiceHash (public; kept to pay that same invoice again after an unknown outcome). */
  invoice: string | null;
  routingFeeMsat: number | null;
  attempts: number;
  nextAttemptAt: Date;
  reason: string | null;
  lastError: string | null;
}

/** What one attempt did. */
export type AttemptResult =
  | { outcome: 'paid'; payoutId: string; amountMsat: number; routingFeeMsat: number }
  /** Not paid this time; tried again from nextAttemptAt. `reason` is a code (LnurlError codes, PAYMENT_FAILED, PAYMENT_UNKNOWN, ...). */
  | { outcome: 'retry'; payoutId: string; reason: string; nextAttemptAt: Date }
  /** Gave up: definitely not paid after the last allowed attempt; the splits stay owed. */
  | { outcome: 'failed'; payoutId: string; reason: string }
  /** Not due yet, already settled, or another attempt holds it. */
  | { outcome: 'skipped'; payoutId: string };

// An attempt holds its payout this long. It must outlast the slowest attempt
// (LNURL fetches within the outbound timeout, then the payment within
// PAY_TIMEOUT_MS), or a second attempt could start while the first still runs.
const LEASE_SECONDS = 180;
/** A payment that has not answered by then counts as "outcome unknown": the next attempt looks it up. */
const PAY_TIMEOUT_MS = 60_000;
// Storing the invoice hash requires this much lease left: the payment must finish inside the lease.
const PAY_LEASE_MARGIN_SECONDS = Math.ceil(PAY_TIMEOUT_MS / 1000) + 30;
const MAX_BACKOFF_SECONDS = 6 * 3600;
/** The owner's invoice must stay payable at least this long after we receive it. */
const MIN_INVOICE_EXPIRY_SECONDS = 60;
// Clocks differ: an earlier invoice counts as unpayable only this long after its expiry.
const EXPIRED_INVOICE_GRACE_SECONDS = 120;

/** Records the split of one confirmed payment, once per ledger key (the payment hash). */
export async function recordSplit(
  db: Queryable,
  input: { paymentHash: string; ownerAddress: string; amountMsat: number; source: SplitSource },
): Promise<SplitRecord> {
  const ownerMsat = ownerShareMsat(input.amountMsat);
  const feeMsat = input.amountMsat - ownerMsat;
  const inserted = await db.query(
    `INSERT INTO splits (payment_hash, owner_address, amount_msat, owner_msat, fee_msat, state, source)
     VALUES ($1, $2, $3, $4, $5, 'accrued', $6)
     ON CONFLICT (payment_hash) DO NOTHING
     RETURNING *`,
    [input.paymentHash, input.ownerAddress, input.amountMsat, ownerMsat, feeMsat, input.source],
  );
  if (inserted[0]) return splitRecord(inserted[0], true);
  const existing = await db.query('SELECT * FROM splits WHERE payment_hash = $1', [input.paymentHash]);
  if (!existing[0]) throw new Error('split row vanished after a conflicting insert');
  return splitRecord(existing[0], false);
}

export async function findSplit(db: Queryable, paymentHash: string): Promise<SplitRecord | undefined> {
  const rows = await db.query('SELECT * FROM splits WHERE payment_hash = $1', [paymentHash]);
  return rows[0] ? splitRecord(rows[0], false) : undefined;
}

// One statement, one snapshot: the owner's unclaimed splits are locked, summed,
// covered by a new payout and linked to it together. A split another claimer
// took first fails the re-check under FOR UPDATE and is left out of the sum, so
// the amount is always exactly what the linked splits owe.
// Who pays routing: the service, from the fee it earned on these splits and
// never more (max_fee_msat <= earned_msat). A payout waits until that earned
// fee reaches PAYOUT_MIN_FEE_MSAT ($3): a smaller budget would often find no
// route, and funding one anyway would cost the service more than it earned.
// The default, 3,000 msat, is the 0.3% of 1,000 sats: a payment of 1,000
// sats or more is paid out at once, smaller ones accrue until together they
// earn it (docs/managed-mode.md "Who pays routing fees").
const CLAIM_SQL = `
WITH owed AS (
  SELECT payment_hash, owner_msat, fee_msat FROM splits
  WHERE owner_address = $1 AND state = 'accrued' AND payout_id IS NULL
  FOR UPDATE
), total AS (
  SELECT sum(owner_msat)::bigint AS amount_msat, sum(fee_msat)::bigint AS earned_msat FROM owed
  HAVING sum(owner_msat) >= $2::bigint AND sum(fee_msat) >= $3::bigint
), payout AS (
  INSERT INTO payouts (owner_address, amount_msat, max_fee_msat)
  SELECT $1, amount_msat, least(earned_msat, greatest($3::bigint, (amount_msat * $4::bigint) / 1000000)) FROM total
  RETURNING id
), linked AS (
  UPDATE splits SET state = 'pending', payout_id = payout.id, updated_at = now()
  FROM payout WHERE splits.payment_hash IN (SELECT payment_hash FROM owed)
  RETURNING splits.payment_hash
)
SELECT payout.id, (SELECT count(*) FROM linked)::int AS splits FROM payout`;

/**
 * Once the owner's unclaimed shares reach the minimum (SPLIT_MIN_SATS, and a
 * service fee earned on them of at least PAYOUT_MIN_FEE_MSAT), one new payout
 * covers them all; otherwise they keep accruing.
 */
export async function claimOwedShares(ctx: ServiceContext, db: Queryable, ownerAddress: string): Promise<string | undefined> {
  const { minMsat, minFeeMsat, maxFeePpm } = ctx.config.payouts;
  // The minimum is at least 1 msat: a zero-amount payout (1 msat paid -> 0 owed) can never be paid.
  const rows = await db.query<{ id: string }>(CLAIM_SQL, [ownerAddress, Math.max(1, minMsat), minFeeMsat, maxFeePpm]);
  return rows[0]?.id;
}

/** After a new share: claim what the owner is owed and pay what is due for them now. */
export async function settleOwner(ctx: ServiceContext, ownerAddress: string): Promise<AttemptResult[]> {
  const db = await ctx.database();
  await claimOwedShares(ctx, db, ownerAddress);
  const due = await db.query<{ id: string }>(
    `SELECT id FROM payouts WHERE owner_address = $1 AND state = 'pending' AND next_attempt_at <= now()
       AND (claimed_until IS NULL OR claimed_until < now())
     ORDER BY created_at LIMIT 5`,
    [ownerAddress],
  );
  const results: AttemptResult[] = [];
  for (const { id } of due) results.push(await attemptPayout(ctx, id));
  return results;
}

export interface PayoutRunResult {
  /** New payouts created from accrued shares that reached the minimum. */
  claimed: number;
  attempted: number;
  paid: number;
  retrying: number;
  failed: number;
  /** Due payouts left for the next run (the time budget ran out). */
  leftOver: number;
}

/** The scheduled run: claims owners whose accrued total reached the minimum, then attempts due payouts until the budget is spent. */
export async function runDuePayouts(ctx: ServiceContext, options: { budgetMs?: number; limit?: number } = {}): Promise<PayoutRunResult> {
  const deadline = Date.now() + (options.budgetMs ?? 20_000);
  const limit = options.limit ?? 50;
  const db = await ctx.database();
  const result: PayoutRunResult = { claimed: 0, attempted: 0, paid: 0, retrying: 0, failed: 0, leftOver: 0 };

  // Shares that accrued while a claim was interrupted, or before SPLIT_MIN_SATS was lowered.
  const owners = await db.query<{ owner_address: string }>(
    `SELECT owner_address FROM splits WHERE state = 'accrued' AND payout_id IS NULL
     GROUP BY owner_address HAVING sum(owner_msat) >= $1::bigint LIMIT $2`,
    [Math.max(1, ctx.config.payouts.minMsat), limit],
  );
  for (const { owner_address } of owners) if (await claimOwedShares(ctx, db, owner_address)) result.claimed += 1;

  const due = await db.query<{ id: string }>(
    `SELECT id FROM payouts WHERE state = 'pending' AND next_attempt_at <= now()
       AND (claimed_until IS NULL OR claimed_until < now())
     ORDER BY next_attempt_at LIMIT $1`,
    [limit],
  );
  for (const [i, { id }] of due.entries()) {
    if (Date.now() >= deadline) {
      result.leftOver = due.length - i;
      break;
    }
    const attempt = await attemptPayout(ctx, id);
    if (attempt.outcome === 'skipped') continue;
    result.attempted += 1;
    if (attempt.outcome === 'paid') result.paid += 1;
    else if (attempt.outcome === 'retry') result.retrying += 1;
    else result.failed += 1;
  }
  return result;
}

/** One attempt at one payout, under a lease; never throws for Lightning or LNURL trouble (it is recorded instead). */
export async function attemptPayout(ctx: ServiceContext, payoutId: string): Promise<AttemptResult> {
  const db = await ctx.database();
  const token = randomUUID();
  const claimed = await db.query(
    `UPDATE payouts SET claimed_until = now() + make_interval(secs => $3), claim_token = $2, attempts = attempts + 1, updated_at = now()
     WHERE id = $1 AND state = 'pending' AND next_attempt_at <= now() AND (claimed_until IS NULL OR claimed_until < now())
     RETURNING *`,
    [payoutId, token, LEASE_SECONDS],
  );
  if (!claimed[0]) return { outcome: 'skipped', payoutId };
  const payout = payoutRow(claimed[0]);
  const attempt = new Attempt(ctx, db, payout, token);

  // A payment from an earlier attempt may have gone through: ask before paying anything new.
  let invoice: AddressInvoice | undefined;
  if (payout.invoiceHash) {
    let status: PaymentStatus | null;
    try {
      status = await ctx.provider.lookupPayment(payout.invoiceHash);
    } catch (error) {
      return attempt.retry('unknown', 'PROVIDER_UNAVAILABLE', `could not look up the earlier payment: ${describeError(error)}`);
    }
    if (status?.state === 'succeeded') return attempt.paid(payout.invoiceHash, status.feeMsat ?? 0);
    if (status?.state === 'pending') return attempt.retry('waiting', 'PAYMENT_IN_FLIGHT', 'the earlier payment is still in flight');
    // failed: definitely not paid, a new invoice is safe. Unknown to the provider: it may
    // still make it, so the same invoice again while it can be paid, a new one only after.
    if (!status && payout.invoice) {
      const earlier = earlierInvoice(payout.invoice, payout.invoiceHash);
      if (earlier === 'expiring')
        return attempt.retry('waiting', 'PAYMENT_UNKNOWN', 'the provider does not know the earlier payment; waiting for its invoice to expire');
      invoice = earlier;
    }
  }
  const repaying = invoice !== undefined;

  if (!invoice) {
    try {
      invoice = await fetchInvoiceForAddress(payout.ownerAddress, payout.amountMsat, {
        policy: outboundPolicy(ctx.config),
        network: ctx.config.lightning.network,
        minExpirySeconds: MIN_INVOICE_EXPIRY_SECONDS,
      });
    } catch (error) {
      if (error instanceof LnurlError) return attempt.retry('refused', error.code, error.message, { known: true });
      return attempt.retry('refused', 'REMOTE_ERROR', describeError(error), { known: true });
    }
  }
  // lib/lightning/lnurl.ts checked it; money leaves here, so check what matters once more.
  const mismatch = invoiceMismatch(invoice, payout.amountMsat, ctx.config.lightning.network);
  if (mismatch) return attempt.retry('refused', mismatch.code, mismatch.message, { known: true });

  // The hash is on record before any money moves, and only while this attempt still holds the lease long enough to finish.
  const stored = await db.query(
    `UPDATE payouts SET invoice_hash = $3, invoice = $5, updated_at = now()
     WHERE id = $1 AND claim_token = $2 AND state = 'pending' AND claimed_until > now() + make_interval(secs => $4)
     RETURNING id`,
    [payout.id, token, invoice.paymentHash, PAY_LEASE_MARGIN_SECONDS, invoice.invoice],
  );
  // Repaying, the earlier attempt's payment may still go through: this attempt's refusal proves nothing, so never give up on it.
  const known = !repaying;
  if (!stored[0]) return attempt.retry('failed', 'LEASE_EXPIRED', 'the attempt took too long and did not pay', { known, invoiceHash: invoice.paymentHash });

  try {
    const paid = await withTimeout(
      ctx.provider.payInvoice({ invoice: invoice.invoice, maxFeeMsat: payout.maxFeeMsat }),
      PAY_TIMEOUT_MS,
      () => new PayTimeout(`no answer from the provider within ${PAY_TIMEOUT_MS} ms`),
    );
    return attempt.paid(invoice.paymentHash, paid.feeMsat);
  } catch (error) {
    if (error instanceof PaymentFailed) return attempt.retry('failed', 'PAYMENT_FAILED', error.message, { known, invoiceHash: invoice.paymentHash });
    // Refused before anything was sent: an operator must fix a setting (or the backend cannot pay this amount).
    if (error instanceof ProviderConfigError)
      return attempt.retry('failed', 'PROVIDER_MISCONFIGURED', `check ${error.setting}: ${error.message}`, { known, invoiceHash: invoice.paymentHash });
    if (error instanceof ProviderUnsupported)
      return attempt.retry('failed', 'UNSUPPORTED_BY_PROVIDER', error.message, { known, invoiceHash: invoice.paymentHash });
    // ProviderUnavailable, a timeout, anything else: it may have been paid. The next attempt looks it up first.
    return attempt.retry('unknown', 'PAYMENT_UNKNOWN', describeError(error), { invoiceHash: invoice.paymentHash });
  }
}

type AttemptOutcome = 'failed' | 'unknown' | 'refused' | 'waiting';

/** Ends one leased attempt and writes what happened to the ledger. */
class Attempt {
  constructor(
    private readonly ctx: ServiceContext,
    private readonly db: Database,
    private readonly payout: PayoutRow,
    private readonly token: string,
  ) {}

  // Unconditional on the lease: once the provider says it is paid, it is paid, whoever noticed.
  async paid(invoiceHash: string, routingFeeMsat: number): Promise<AttemptResult> {
    const { payout } = this;
    await this.db.query(
      `WITH done AS (
         UPDATE payouts SET state = 'paid', invoice_hash = $2, routing_fee_msat = $3, paid_at = now(), updated_at = now(),
           claimed_until = NULL, claim_token = NULL, reason = NULL, last_error = NULL
         WHERE id = $1 AND state = 'pending' RETURNING id
       )
       UPDATE splits SET state = 'paid', updated_at = now() WHERE payout_id IN (SELECT id FROM done)`,
      [payout.id, invoiceHash, routingFeeMsat],
    );
    await this.log('paid', invoiceHash, null, null);
    console.log(`[payouts] payout ${payout.id}: ${payout.amountMsat} msat paid to ${payout.ownerAddress} (routing fee ${routingFeeMsat} msat)`);
    return { outcome: 'paid', payoutId: payout.id, amountMsat: payout.amountMsat, routingFeeMsat };
  }

  /**
   * Not paid now. `known`: definitely nothing was paid (so giving up is safe once the
   * attempts are spent); otherwise the payout stays pending until the provider can tell.
   */
  async retry(outcome: AttemptOutcome, reason: string, message: string, options: { known?: boolean; invoiceHash?: string } = {}): Promise<AttemptResult> {
    const { payout } = this;
    const detail = message.slice(0, 500);
    const giveUp = options.known === true && payout.attempts >= this.ctx.config.payouts.maxAttempts;
    const delaySeconds = Math.min(MAX_BACKOFF_SECONDS, this.ctx.config.payouts.retryBaseSeconds * 2 ** Math.min(30, payout.attempts - 1));
    const rows = await this.db.query<{ next_attempt_at: Date }>(
      `WITH released AS (
         UPDATE payouts SET state = $3::text, reason = $4, last_error = $5, claimed_until = NULL, claim_token = NULL, updated_at = now(),
           next_attempt_at = now() + make_interval(secs => $6)
         WHERE id = $1 AND claim_token = $2 AND state = 'pending'
         RETURNING id, next_attempt_at
       ), gave_up AS (
         UPDATE splits SET state = 'failed', updated_at = now() WHERE $3::text = 'failed' AND payout_id IN (SELECT id FROM released)
       )
       SELECT next_attempt_at FROM released`,
      [payout.id, this.token, giveUp ? 'failed' : 'pending', reason, detail, delaySeconds],
    );
    await this.log(outcome, options.invoiceHash ?? payout.invoiceHash, reason, detail);
    console.error(`[payouts] payout ${payout.id} to ${payout.ownerAddress} not paid (${reason}): ${detail}${giveUp ? '; marked failed' : ''}`);
    if (giveUp && rows[0]) return { outcome: 'failed', payoutId: payout.id, reason };
    return { outcome: 'retry', payoutId: payout.id, reason, nextAttemptAt: rows[0]?.next_attempt_at ?? new Date(Date.now() + delaySeconds * 1000) };
  }

  private async log(outcome: AttemptOutcome | 'paid', invoiceHash: string | null, reason: string | null, detail: string | null): Promise<void> {
    try {
      await this.db.query(
        `INSERT INTO payout_attempts (payout_id, attempt, invoice_hash, outcome, reason, detail) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (payout_id, attempt) DO NOTHING`,
        [this.payout.id, this.payout.attempts, invoiceHash, outcome, reason, detail],
      );
    } catch (error) {
      // The payout row holds the state and the last reason; the history is a convenience.
      console.error(`[payouts] could not record attempt ${this.payout.attempts} of payout ${this.payout.id}: ${describeError(error)}`);
    }
  }
}

/** The earlier attempt's invoice, to pay again while it can be paid; undefined once it cannot be any more (a new one is safe). */
function earlierInvoice(bolt11: string, paymentHash: string): AddressInvoice | 'expiring' | undefined {
  let decoded;
  try {
    decoded = decodeInvoice(bolt11);
  } catch {
    return undefined; // cannot happen: it was decoded and checked before it was stored
  }
  if (decoded.paymentHash !== paymentHash || decoded.amountMsat === null) return undefined;
  const secondsLeft = decoded.expiresAt - Math.floor(Date.now() / 1000);
  if (secondsLeft >= MIN_INVOICE_EXPIRY_SECONDS) return { invoice: bolt11, decoded, paymentHash, amountMsat: decoded.amountMsat };
  return secondsLeft > -EXPIRED_INVOICE_GRACE_SECONDS ? 'expiring' : undefined;
}

function invoiceMismatch(invoice: AddressInvoice, amountMsat: number, network: string): { code: string; message: string } | undefined {
  if (invoice.decoded.amountMsat !== amountMsat || invoice.amountMsat !== amountMsat) {
    return { code: 'INVOICE_AMOUNT_MISMATCH', message: `the invoice is for ${invoice.decoded.amountMsat} msat, not the ${amountMsat} msat asked` };
  }
  if (invoice.decoded.paymentHash !== invoice.paymentHash) return { code: 'INVALID_INVOICE', message: 'the invoice payment hash does not match' };
  if (invoice.decoded.network !== network) return { code: 'WRONG_NETWORK', message: `the invoice is for ${invoice.decoded.network}, not ${network}` };
  if (invoice.decoded.expiresAt <= Math.floor(Date.now() / 1000)) return { code: 'INVOICE_EXPIRED', message: 'the invoice has expired' };
  return undefined;
}

/** The payouts of one owner, newest first (operators and tests read the ledger through it). */
export async function payoutsOf(db: Queryable, ownerAddress: string): Promise<PayoutRow[]> {
  const rows = await db.query('SELECT * FROM payouts WHERE owner_address = $1 ORDER BY created_at DESC', [ownerAddress]);
  return rows.map(payoutRow);
}

function splitRecord(row: Record<string, unknown>, created: boolean): SplitRecord {
  return {
    paymentHash: String(row.payment_hash),
    ownerAddress: String(row.owner_address),
    amountMsat: Number(row.amount_msat),
    ownerMsat: Number(row.owner_msat),
    feeMsat: Number(row.fee_msat),
    state: row.state as SplitState,
    payoutId: row.payout_id === null || row.payout_id === undefined ? null : String(row.payout_id),
    source: (row.source ?? 'webhook') as SplitSource,
    created,
  };
}

function payoutRow(row: Record<string, unknown>): PayoutRow {
  return {
    id: String(row.id),
    ownerAddress: String(row.owner_address),
    amountMsat: Number(row.amount_msat),
    maxFeeMsat: Number(row.max_fee_msat),
    state: row.state as PayoutState,
    invoiceHash: (row.invoice_hash as string | null) ?? null,
    invoice: (row.invoice as string | null) ?? null,
    routingFeeMsat: row.routing_fee_msat === null || row.routing_fee_msat === undefined ? null : Number(row.routing_fee_msat),
    attempts: Number(row.attempts),
    nextAttemptAt: new Date(row.next_attempt_at as string | Date),
    reason: (row.reason as string | null) ?? null,
    lastError: (row.last_error as string | null) ?? null,
  };
}

class PayTimeout extends Error {
  override readonly name = 'PayTimeout';
}
