// An invoice a server asks to be paid, decoded here and refused unless it is
// within the caller's limits: its signature, network, amount and expiry, and
// the challenge's own fields agreeing with it. Nothing refused is paid.
import { decodeInvoice, InvalidInvoice, type DecodedInvoice } from '../lightning/bolt11.js';
import { L402ClientError } from './errors.js';
import type { FetchWithL402Options } from './options.js';
import { memoryOf } from './wallet-memory.js';

/** An invoice that passed every check: it names its amount. */
export type CheckedInvoice = DecodedInvoice & { amountMsat: number };

export interface InvoiceLimits {
  /** A Payment challenge's expiry, which may come before its invoice's: the earlier one counts. */
  challengeExpiresAt: number | undefined;
  /** The most it may ask, whole sats. */
  maxSats: number;
  /** What it is, in refusals: "the invoice", "the session deposit". */
  what: string;
  /** Why the challenge's own fields disagree with the invoice, if they do. */
  disagree?: (invoice: DecodedInvoice) => string | undefined;
}

/** The invoice decoded, its signature checked, and refused unless network, amount and expiry are within the caller's limits. */
export function checkedInvoice(bolt11: string, options: FetchWithL402Options, url: URL, where: Record<string, unknown>, limits: InvoiceLimits): CheckedInvoice {
  const { payees } = memoryOf(options.wallet);
  let invoice: DecodedInvoice;
  try {
    invoice = decodeInvoice(bolt11.trim().replace(/^lightning:/i, ''), { expectedPayee: payees.of(url.host) });
  } catch (error) {
    if (error instanceof InvalidInvoice)
      throw new L402ClientError('INVOICE_INVALID', `Not paid: the server's invoice is not a valid BOLT11 invoice (${error.reason})`, where, { cause: error });
    throw error;
  }
  payees.remember(url.host, invoice.payeeNodeKey);
  const { challengeExpiresAt } = limits;
  const expiresAt = challengeExpiresAt !== undefined && challengeExpiresAt < invoice.expiresAt ? challengeExpiresAt : invoice.expiresAt;
  const facts = { ...where, paymentHash: invoice.paymentHash, amountMsat: invoice.amountMsat, network: invoice.network, expiresAt };
  const disagree = limits.disagree?.(invoice);
  if (disagree) throw new L402ClientError('CHALLENGE_INVOICE_MISMATCH', `Not paid: the Payment challenge says ${disagree}`, facts);
  const walletNetwork = options.network ?? options.wallet.network ?? 'bitcoin';
  if (invoice.network !== walletNetwork) {
    throw new L402ClientError('WRONG_NETWORK', `Not paid: the invoice is for ${invoice.network}, the wallet pays on ${walletNetwork}`, {
      ...facts,
      walletNetwork,
    });
  }
  if (invoice.amountMsat === null)
    throw new L402ClientError('INVOICE_WITHOUT_AMOUNT', 'Not paid: the invoice does not say how much (the price must be in the invoice)', facts);
  if (expiresAt <= Date.now() / 1000) {
    const what = expiresAt === invoice.expiresAt ? limits.what : 'the Payment challenge';
    throw new L402ClientError('INVOICE_EXPIRED', `Not paid: ${what} expired at ${new Date(expiresAt * 1000).toISOString()}`, facts);
  }
  const maxPriceMsat = limits.maxSats * 1000;
  if (invoice.amountMsat > maxPriceMsat) {
    throw new L402ClientError(
      'PRICE_ABOVE_MAXIMUM',
      `Not paid: ${limits.what} asks ${invoice.amountMsat / 1000} sats, above the maximum of ${limits.maxSats}`,
      { ...facts, maxPriceMsat },
    );
  }
  return invoice as CheckedInvoice;
}
