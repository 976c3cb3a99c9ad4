// The one interface every Lightning backend implements. Amounts are integer
// millisatoshis; hashes and preimages are lower-case hex.

export interface CreateInvoiceRequest {
  amountMsat: number;
  /** Shown to the payer (BOLT11 `d`). Ignored when descriptionHash is set. */
  memo?: string;
  /** Hex SHA256 committed to instead of a memo (BOLT11 `h`, LNURL-pay). */
  descriptionHash?: string;
  expirySeconds?: number;
}

export interface CreatedInvoice {
  invoice: string;
  paymentHash: string;
  amountMsat: number;
  /** Unix seconds after which the invoice can no longer be paid. */
  expiresAt: number;
}

export interface InvoiceStatus {
  paymentHash: string;
  settled: boolean;
  /** Present once settled. */
  preimage?: string;
  amountMsat: number;
}

export interface LightningProvider {
  readonly name: string;
  createInvoice(request: CreateInvoiceRequest): Promise<CreatedInvoice>;
  /** null when the backend does not know the hash. */
  lookupInvoice(paymentHash: string): Promise<InvoiceStatus | null>;
}

/** The backend could not be reached or answered nonsense; callers answer 503. */
export class ProviderUnavailable extends Error {
  override readonly name = 'ProviderUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
