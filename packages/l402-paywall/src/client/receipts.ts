// What a call paid, kept beside the response it returned (getPaymentReceipt),
// and the server's Payment-Receipt read and checked against that payment.
import { PAYMENT_RECEIPT_HEADER, parseReceipt } from '../schemes/payment/receipt.js';
import type { LightningSessionOffer } from '../schemes/session/codec.js';
import type { CheckedInvoice } from './invoice-check.js';
import type { PaymentScheme } from './options.js';
import type { Proof } from './proofs.js';

/** A server's Payment-Receipt, read and checked: its reference is the payment hash this call paid. */
export interface ServerReceipt {
  /** The id of the challenge the server says was paid. */
  challengeId: string;
  /** The payment hash (never the preimage). */
  reference: string;
  /** When the server verified the payment (RFC 3339). */
  timestamp: string;
}

/** What a call paid, for the response it returned. */
export interface PaymentReceipt {
  url: string;
  host: string;
  paymentHash: string;
  /** The invoice's amount, integer msat. */
  amountMsat: number;
  /** Routing fee reported by the wallet, integer msat. */
  feeMsat: number;
  /** False when another call had already paid this invoice and this call used its proof. */
  paidByThisCall: boolean;
  /** The scheme the paid request was sent with (L402 also for a server that named it LSAT). */
  scheme: PaymentScheme;
  /** The schemes the server offered a challenge in that this client pays, L402 first. */
  offered: PaymentScheme[];
  /** Payment: the id of the challenge answered. */
  challengeId?: string;
  /** Payment: the server's Payment-Receipt, when it sent one for this payment. */
  serverReceipt?: ServerReceipt;
  /** Payment: why no serverReceipt, on an answer below 400: none sent, unreadable, or for another payment or challenge. */
  serverReceiptProblem?: string;
  /** A session deposit was paid by this call: `open` (the session opened with it) or `topUp`; the session is its payment hash for open. */
  session?: { action: 'open' | 'topUp'; sessionId: string };
  /** With `sessions` set, a session was offered and not used: why (the wallet cannot make a return invoice). The call paid per request. */
  sessionNotUsed?: string;
}

/** The receipt's former name, kept for existing code. */
export type L402Receipt = PaymentReceipt;

// Each receipt is an annotation of the one response it describes, looked up by that response (the caller holds it,
// and it goes with it): no call or client sees another's, and nothing here is a cache.
const receipts = new WeakMap<Response, PaymentReceipt>();

/** What the call that returned this response paid, in either scheme; undefined when it paid nothing (free, or served with a stored credential). */
export function getPaymentReceipt(response: Response): PaymentReceipt | undefined {
  return receipts.get(response);
}

/** The same as getPaymentReceipt (its former name). */
export function getL402Receipt(response: Response): PaymentReceipt | undefined {
  return receipts.get(response);
}

/** Says what the call that returns `response` paid. */
export function recordReceipt(response: Response, receipt: PaymentReceipt): void {
  receipts.set(response, receipt);
}

/** The answer's Payment-Receipt, taken only when it is for this payment (its reference the hash paid) and this challenge. */
export function serverReceipt(
  response: Response,
  expectedChallengeId: string,
  paymentHash: string,
): Pick<PaymentReceipt, 'serverReceipt' | 'serverReceiptProblem'> {
  const header = response.headers.get(PAYMENT_RECEIPT_HEADER);
  if (header === null) return response.status < 400 ? { serverReceiptProblem: `the answer carries no ${PAYMENT_RECEIPT_HEADER}` } : {};
  const read = parseReceipt(header);
  if (!read.ok) return { serverReceiptProblem: read.detail };
  const { challengeId, reference, timestamp } = read.receipt;
  if (reference !== paymentHash) return { serverReceiptProblem: `the ${PAYMENT_RECEIPT_HEADER} is for another payment (reference ${reference})` };
  if (challengeId !== expectedChallengeId) return { serverReceiptProblem: `the ${PAYMENT_RECEIPT_HEADER} is for another challenge (${challengeId})` };
  return { serverReceipt: { challengeId, reference, timestamp } };
}

/** The receipt of a call that paid a session's deposit (open) or a top-up: the payment, and what `rest` says of the session. */
export function depositReceipt(
  request: Request,
  url: URL,
  offer: LightningSessionOffer,
  invoice: CheckedInvoice,
  proof: Proof,
  paidByThisCall: boolean,
  rest: Pick<PaymentReceipt, 'offered' | 'session'> & Partial<PaymentReceipt>,
): PaymentReceipt {
  return {
    url: request.url,
    host: url.host,
    paymentHash: invoice.paymentHash,
    amountMsat: invoice.amountMsat,
    feeMsat: paidByThisCall ? proof.feeMsat : 0,
    paidByThisCall,
    scheme: 'Payment',
    challengeId: offer.challenge.id,
    ...rest,
  };
}
