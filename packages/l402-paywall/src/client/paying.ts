// Paying one checked invoice: at most once per wallet (PaidInvoices), the
// budget charged in the same synchronous step as its check and given back
// only when the payment surely did not happen, and the wallet's preimage
// used only once it hashes to the invoice's payment hash.
import { isPreimageOf } from '../crypto/preimage.js';
import type { ClientCall } from '../events/client.js';
import type { DecodedInvoice } from '../lightning/bolt11.js';
import type { BudgetReservation } from './budget.js';
import { L402ClientError, outcomeUnknown } from './errors.js';
import type { CheckedInvoice } from './invoice-check.js';
import { chooseOffer, type Chosen, type Offer } from './offers.js';
import { DEFAULT_MAX_FEE_SATS, type FetchWithL402Options } from './options.js';
import type { Proof } from './proofs.js';
import { memoryOf } from './wallet-memory.js';

/** Pays the invoice, or joins its payment made or under way; `paidByThisCall` says which. */
export async function payInvoice(
  bolt11: string,
  invoice: CheckedInvoice,
  options: FetchWithL402Options,
  host: string,
): Promise<{ proof: Proof; paidByThisCall: boolean }> {
  const { proof, first } = memoryOf(options.wallet).paidInvoices.payOnce(
    invoice.paymentHash,
    invoice.expiresAt,
    async () => {
      // Runs synchronously up to the wallet call: the budget's check and charge are one step (createBudget).
      const reservation: BudgetReservation | undefined = options.budget?.reserve(host, invoice.amountMsat);
      try {
        const paid = await walletPayment(options, bolt11, invoice);
        reservation?.commit();
        return paid;
      } catch (error) {
        // Money that may have left stays counted; money that surely did not is given back.
        if (error instanceof L402ClientError && error.code === 'PAYMENT_FAILED') reservation?.release();
        else reservation?.commit();
        throw error;
      }
    },
    // Only a payment that surely did not happen may be tried again by a later call.
    (error) => error instanceof L402ClientError && (error.code === 'PAYMENT_FAILED' || error.code === 'BUDGET_EXCEEDED'),
  );
  return { proof: await proof, paidByThisCall: first };
}

async function walletPayment(options: FetchWithL402Options, bolt11: string, invoice: DecodedInvoice): Promise<Proof> {
  const facts = { paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat };
  let answer: { preimage: string; feeMsat?: number };
  try {
    answer = await options.wallet.payInvoice({ invoice: bolt11, maxFeeMsat: (options.maxFeeSats ?? DEFAULT_MAX_FEE_SATS) * 1000 });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (outcomeUnknown(error))
      throw new L402ClientError('PAYMENT_OUTCOME_UNKNOWN', `The wallet could not say whether it paid: ${message}`, facts, { cause: error });
    throw new L402ClientError('PAYMENT_FAILED', `The wallet did not pay: ${message}`, facts, { cause: error });
  }
  const preimage = typeof answer?.preimage === 'string' ? answer.preimage.toLowerCase() : '';
  if (!isPreimageOf(preimage, invoice.paymentHash)) {
    throw new L402ClientError('PREIMAGE_MISMATCH', 'The wallet answered a preimage that does not match the invoice; it was not used', facts);
  }
  const feeMsat = Number.isSafeInteger(answer.feeMsat) && answer.feeMsat! >= 0 ? answer.feeMsat! : 0;
  return { preimage, feeMsat };
}

/** What a chosen offer's payment leaves for the rest of the call: the offer, its invoice's facts (for events and receipts), the proof, and the event that caused what follows. */
export interface PaidOffer {
  chosen: Chosen;
  facts: { paymentHash: string; amountMsat: number; invoice: string };
  proof: Proof;
  paidByThisCall: boolean;
  /** payment.sent's id (challenge.received's when another call had paid), when events are on. */
  cause?: string;
}

/**
 * The offer to pay chosen among `offers` (or the first refusal thrown: an
 * invoice.refused event), then its invoice paid at most once per wallet, with
 * challenge.received and payment.sent: steps 3 and 4 of a paid HTTP request
 * (fetch.ts) and of a paid tool call (mcp-tools.ts) alike.
 */
export async function chooseAndPay(offers: Offer[], options: FetchWithL402Options, url: URL, events: ClientCall | undefined): Promise<PaidOffer> {
  let chosen: Chosen;
  try {
    chosen = chooseOffer(offers, options, url);
  } catch (error) {
    if (events && error instanceof L402ClientError) {
      const facts = { ...error.details, invoice: offers[0]!.invoice };
      events.invoiceRefused(error.code, facts, events.challengeReceived(facts));
    }
    throw error;
  }
  const facts = { paymentHash: chosen.invoice.paymentHash, amountMsat: chosen.invoice.amountMsat, invoice: chosen.offer.invoice };
  let cause = events?.challengeReceived(facts);
  const payStartedAt = events ? performance.now() : 0;
  let paid: { proof: Proof; paidByThisCall: boolean };
  try {
    paid = await payInvoice(chosen.offer.invoice, chosen.invoice, options, url.host);
  } catch (error) {
    if (events && error instanceof L402ClientError && error.refused) events.invoiceRefused(error.code, facts, cause!);
    throw error;
  }
  if (events && paid.paidByThisCall) cause = events.paymentSent({ ...facts, feeMsat: paid.proof.feeMsat, payStartedAt }, cause!);
  return { chosen, facts, ...paid, ...(cause !== undefined && { cause }) };
}
