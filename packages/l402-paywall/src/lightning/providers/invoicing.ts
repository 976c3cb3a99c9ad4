// The invoice and payment methods of a backend that makes both kinds of
// invoice with one call (for an amount, or for none) and pays both kinds with
// another (an amount only for an invoice that names none): LND, Core
// Lightning, Phoenixd. Each issued invoice is checked against what was asked
// (checks.ts); an amountless payment is checked before anything is sent.
import type { Network } from '../bolt11.js';
import type { CreateAmountlessInvoiceRequest, LightningProvider, PaidInvoice } from '../provider.js';
import { checkAmountlessPayment, issuedAmountlessInvoice, issuedInvoice } from './checks.js';

export interface InvoicingBackend {
  /** Makes an invoice for `amountMsat`, or (undefined) one whose payer names the amount: its text and the payment hash the backend reports. */
  issue(request: CreateAmountlessInvoiceRequest, amountMsat?: number): Promise<{ invoice: string; paymentHash: string }>;
  /** Pays `invoice`; `amountMsat` only for an invoice without an amount. */
  pay(invoice: string, maxFeeMsat: number, amountMsat?: number): Promise<PaidInvoice>;
}

type InvoicingMethods = Pick<Required<LightningProvider>, 'createInvoice' | 'createAmountlessInvoice' | 'payInvoice' | 'payAmountlessInvoice'>;

/** createInvoice, createAmountlessInvoice, payInvoice and payAmountlessInvoice of `backend` (its name in errors), on `network`. */
export function invoicingMethods(backend: string, network: Network, { issue, pay }: InvoicingBackend): InvoicingMethods {
  return {
    async createInvoice(request) {
      if (!Number.isSafeInteger(request.amountMsat) || request.amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
      const { invoice, paymentHash } = await issue(request, request.amountMsat);
      return issuedInvoice(backend, invoice, { ...request, paymentHash, network });
    },

    async createAmountlessInvoice(request) {
      const { invoice, paymentHash } = await issue(request);
      return issuedAmountlessInvoice(backend, invoice, { ...request, paymentHash, network });
    },

    payInvoice: ({ invoice, maxFeeMsat }) => pay(invoice, maxFeeMsat),

    async payAmountlessInvoice({ invoice, amountMsat, maxFeeMsat }) {
      checkAmountlessPayment(invoice, amountMsat);
      return pay(invoice, maxFeeMsat, amountMsat);
    },
  };
}
