// Managed mode on the hosted side: remember who is owed what for each invoice
// issued with an owner, and turn a confirmed payment into a logged payment, a
// split and (once the owner is owed enough) a payout. The webhook, the payouts
// cron (for payments whose webhook never came) and POST /api/split all go
// through confirmPayment, so they share one ledger and one key: the payment hash.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { HttpError } from '../../http/errors.js';
import type { Queryable } from '../../db/index.js';
import type { InvoiceStatus } from 'l402-paywall/lightning';
import type { ServiceContext } from '../context.js';
import { servicePaymentLog } from '../records/payment-log.js';
import { providerUnavailable } from './provider-errors.js';
import { findSplit, recordSplit, settleOwner, type AttemptResult, type SplitRecord, type SplitSource } from './payouts.js';

export interface ManagedInvoice {
  paymentHash: string;
  ownerAddress: string;
  amountMsat: number;
  endpoint: string | null;
  settledAt: Date | null;
}

/** Called by POST /api/invoice before the invoice is handed out: an invoice whose owner is not on record is never issued. */
export async function rememberOwner(
  ctx: ServiceContext,
  input: { paymentHash: string; ownerAddress: string; amountMsat: number; expiresAt: number; endpoint?: string },
): Promise<void> {
  const db = await ctx.database();
  await db.query(
    `INSERT INTO managed_invoices (payment_hash, owner_address, amount_msat, endpoint, expires_at)
     VALUES ($1, $2, $3, $4, to_timestamp($5)) ON CONFLICT (payment_hash) DO NOTHING`,
    [input.paymentHash, input.ownerAddress, input.amountMsat, input.endpoint ?? null, input.expiresAt],
  );
}

export async function findManagedInvoice(db: Queryable, paymentHash: string): Promise<ManagedInvoice | undefined> {
  const rows = await db.query('SELECT * FROM managed_invoices WHERE payment_hash = $1', [paymentHash]);
  const row = rows[0];
  if (!row) return undefined;
  return {
    paymentHash: String(row.payment_hash),
    ownerAddress: String(row.owner_address),
    amountMsat: Number(row.amount_msat),
    endpoint: (row.endpoint as string | null) ?? null,
    settledAt: row.settled_at ? new Date(row.settled_at as string | Date) : null,
  };
}

export interface ConfirmedPayment {
  paymentHash: string;
  amountMsat: number;
  /** False: the payment had no owner (sovereign use of /api/invoice); it was only logged. */
  managed: boolean;
  split?: SplitRecord;
  payouts: AttemptResult[];
}

/** The provider's word on an invoice: 503 when it cannot be asked, 404 when it does not know the hash. */
async function knownInvoice(ctx: ServiceContext, paymentHash: string): Promise<InvoiceStatus> {
  let status: InvoiceStatus | null;
  try {
    status = await ctx.provider.lookupInvoice(paymentHash);
  } catch (error) {
    throw providerUnavailable(error);
  }
  if (!status) throw new HttpError(404, 'UNKNOWN_INVOICE', 'The Lightning provider does not know this payment hash; nothing was done');
  return status;
}

/**
 * Money moves only after the provider confirms the payment (docs/architecture.md decision 8).
 * Then, each step idempotent: log the payment, record its split, pay the owner
 * what is due. Repeating it for the same hash changes nothing.
 */
export async function confirmPayment(
  ctx: ServiceContext,
  paymentHash: string,
  source: SplitSource,
  options: { status?: InvoiceStatus; ownerAddress?: string } = {},
): Promise<ConfirmedPayment> {
  const hash = paymentHash.toLowerCase();
  const status = options.status ?? (await knownInvoice(ctx, hash));
  if (!status.settled) throw new HttpError(409, 'NOT_SETTLED', 'The Lightning provider does not report this invoice as paid; nothing was done');

  const db = await ctx.database();
  const managed = await findManagedInvoice(db, hash);
  if (managed && options.ownerAddress && managed.ownerAddress !== options.ownerAddress) {
    throw new HttpError(409, 'OWNER_MISMATCH', 'This payment was issued for another owner; nothing was done');
  }
  const ownerAddress = managed?.ownerAddress ?? options.ownerAddress;

  await servicePaymentLog(ctx)?.record({
    paymentHash: hash,
    endpoint: managed?.endpoint ?? '/api/invoice',
    amountSats: Math.floor(status.amountMsat / 1000),
    ownerAddress: ownerAddress ?? null,
  });
  if (!ownerAddress) return { paymentHash: hash, amountMsat: status.amountMsat, managed: false, payouts: [] };

  const split = await recordSplit(db, { paymentHash: hash, ownerAddress, amountMsat: status.amountMsat, source });
  if (split.ownerAddress !== ownerAddress) throw new HttpError(409, 'OWNER_MISMATCH', 'This payment was already split to another owner; nothing was done');
  if (managed && !managed.settledAt) await db.query('UPDATE managed_invoices SET settled_at = now() WHERE payment_hash = $1 AND settled_at IS NULL', [hash]);
  if (split.created)
    console.log(`[managed] payment ${hash} of ${status.amountMsat} msat confirmed (${source}): ${split.ownerMsat} msat owed to ${ownerAddress}`);
  const payouts = await settleOwner(ctx, ownerAddress);
  return { paymentHash: hash, amountMsat: status.amountMsat, managed: true, split, payouts };
}

export interface ReconcileResult {
  checked: number;
  /** Settled payments found that the webhook had not brought. */
  confirmed: number;
  /** Look-ups that failed (the provider was down); tried again next run. */
  errors: number;
}

/**
 * For managed invoices whose webhook never came (LND and Core Lightning send
 * none at all): asks the provider about the unsettled ones that could still
 * have been paid (not long expired), in small batches looked up in parallel,
 * until the deadline or until every candidate was looked at once this run.
 * In turn: the one whose last look (or creation) is oldest first. Never-checked
 * ones do not go first: most 402 challenges are never paid, and while more of
 * them arrive than a run checks, an invoice paid after its first look would
 * never be looked at again and its owner never paid.
 */
export async function reconcileManagedInvoices(ctx: ServiceContext, options: { deadline?: number; batchSize?: number } = {}): Promise<ReconcileResult> {
  const db = await ctx.database();
  const deadline = options.deadline ?? Date.now() + 10_000;
  const runStarted = new Date();
  const result: ReconcileResult = { checked: 0, confirmed: 0, errors: 0 };
  while (Date.now() < deadline) {
    // Claimed rows get checked_at = now(), so one run never looks at an invoice twice.
    const rows = await db.query<{ payment_hash: string }>(
      `UPDATE managed_invoices SET checked_at = now()
       WHERE payment_hash IN (
         SELECT payment_hash FROM managed_invoices
         WHERE settled_at IS NULL AND expires_at > now() - interval '1 hour' AND created_at < now() - interval '30 seconds'
           AND coalesce(checked_at, created_at) < $2
         ORDER BY coalesce(checked_at, created_at) LIMIT $1 FOR UPDATE SKIP LOCKED
       ) RETURNING payment_hash`,
      [options.batchSize ?? 16, runStarted],
    );
    if (rows.length === 0) break;
    await Promise.all(
      rows.map(async ({ payment_hash }) => {
        result.checked += 1;
        try {
          const status = await ctx.provider.lookupInvoice(payment_hash);
          if (!status?.settled) return;
          await confirmPayment(ctx, payment_hash, 'reconcile', { status });
          result.confirmed += 1;
        } catch (error) {
          result.errors += 1;
          console.error(`[managed] reconciling ${payment_hash} failed:`, error instanceof Error ? error.message : error);
        }
      }),
    );
  }
  return result;
}

export interface ManualSplitInput {
  amountSats: number;
  ownerAddress: string;
  /** The payment being recovered: then it must be a settled invoice of our provider, and shares the webhook's ledger row. */
  paymentHash?: string;
  /** Without a payment hash: what makes two requests for the same owner and amount distinct (default: the UTC day). */
  idempotencyKey?: string;
}

export interface ManualSplitResult {
  ledgerKey: string;
  ownerMsat: number;
  /** True when the ledger already had this key: nothing new was owed. */
  duplicate: boolean;
  /** Below the minimum: the share accrues and is paid with the owner's next ones. */
  accrued: boolean;
  split: SplitRecord;
  payouts: AttemptResult[];
}

/**
 * POST /api/split. With `paymentHash` the ledger key is that hash, exactly as the
 * webhook's, so a payment is never split (or paid) twice whoever comes first.
 * Without one, the key is derived from owner, amount and the idempotency key,
 * so a retried request is recognised instead of paid again.
 */
export async function manualSplit(ctx: ServiceContext, input: ManualSplitInput): Promise<ManualSplitResult> {
  const amountMsat = input.amountSats * 1000;
  let split: SplitRecord;
  let payouts: AttemptResult[];
  let ledgerKey: string;
  if (input.paymentHash) {
    ledgerKey = input.paymentHash.toLowerCase();
    const status = await knownInvoice(ctx, ledgerKey);
    if (status.settled && status.amountMsat !== amountMsat) {
      throw new HttpError(409, 'AMOUNT_MISMATCH', `That payment was for ${status.amountMsat / 1000} sats, not ${input.amountSats}; nothing was done`);
    }
    const confirmed = await confirmPayment(ctx, ledgerKey, 'manual', { status, ownerAddress: input.ownerAddress });
    split = confirmed.split!;
    payouts = confirmed.payouts;
  } else {
    const discriminator = input.idempotencyKey ?? new Date().toISOString().slice(0, 10);
    ledgerKey = `manual:${bytesToHex(sha256(utf8ToBytes(`${input.ownerAddress}\n${input.amountSats}\n${discriminator}`)))}`;
    const db = await ctx.database();
    split = await recordSplit(db, { paymentHash: ledgerKey, ownerAddress: input.ownerAddress, amountMsat, source: 'manual' });
    if (split.created) console.log(`[managed] manual split ${ledgerKey} of ${amountMsat} msat: ${split.ownerMsat} msat owed to ${input.ownerAddress}`);
    payouts = await settleOwner(ctx, input.ownerAddress);
  }
  const duplicate = !split.created;
  // The state after the payout attempt, not before it.
  split = (await findSplit(await ctx.database(), ledgerKey)) ?? split;
  return {
    ledgerKey,
    ownerMsat: split.ownerMsat,
    duplicate,
    // Still waiting to be batched after this call (a share that tipped the owner over the minimum was paid, so not skipped).
    accrued: split.state === 'accrued',
    split,
    payouts,
  };
}
