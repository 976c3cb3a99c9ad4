// Invoices from the Lightning backend, for every 402: the route's (L402 and
// the charge sell with it) and a session's deposit.
import type { Invoice } from './scheme.js';

/** What the paywall needs from a Lightning backend (lib/lightning providers fit it). */
export interface InvoiceProvider {
  createInvoice(request: { amountMsat: number; memo?: string; expirySeconds?: number }): Promise<{ invoice: string; paymentHash: string }>;
}

/**
 * What the embedded dev node throws under a production NODE_ENV
 * (DevNodeInProduction, l402-paywall/backends), recognised by its code so that
 * the core imports nothing of the backends.
 */
export function isDevNodeInProduction(error: unknown): error is Error & { code: 'DEV_NODE_IN_PRODUCTION' } {
  return error instanceof Error && (error as { code?: unknown }).code === 'DEV_NODE_IN_PRODUCTION';
}

/** Makes a paywall's invoices, each living as long as its challenges. */
export class InvoiceMaker {
  constructor(
    readonly provider: InvoiceProvider,
    private readonly expirySeconds: number,
    private readonly onError: (error: unknown, context: string) => void,
  ) {}

  /**
   * An invoice, its payment hash lower-case, or undefined (onError told)
   * when the provider cannot make one now. Throws only the dev node's refusal
   * under production, which is not a passing failure: the 402 answers it for what it is.
   */
  async make(amountMsat: number, memo: string): Promise<Invoice | undefined> {
    let made: Invoice;
    try {
      made = await this.provider.createInvoice({ amountMsat, memo, expirySeconds: this.expirySeconds });
    } catch (error) {
      this.onError(error, 'creating an invoice failed');
      if (isDevNodeInProduction(error)) throw error;
      return undefined;
    }
    return { invoice: made.invoice, paymentHash: made.paymentHash.toLowerCase() };
  }
}
