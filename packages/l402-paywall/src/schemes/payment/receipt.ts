// The Payment-Receipt header of a paid answer (draft-httpauth-payment,
// "Payment-Receipt Header"; draft-lightning-charge, "Receipt Generation"):
//   Payment-Receipt: base64url(JCS JSON {method: "lightning", challengeId,
//                    reference: <payment hash>, status: "success", timestamp})
// The reference is the payment hash, public by design; never the preimage,
// which is a bearer secret.
import { z } from 'zod';
import { LIGHTNING_METHOD, firstIssue } from './challenge.js';
import { PAYMENT_RECEIPT_HEADER } from './charge.js';
import { decodeBase64, encodeJson, formatTime, parseJsonBytes, parseTime } from './wire.js';

export { PAYMENT_RECEIPT_HEADER };

/** A Lightning receipt; receipts of other methods, and fields this module does not know, are not read. */
export const LightningReceiptSchema = z.object({
  method: z.literal(LIGHTNING_METHOD),
  challengeId: z.string().min(1).max(256),
  reference: z.string().regex(/^[0-9a-f]{64}$/, 'must be a payment hash in lower-case hex'),
  status: z.literal('success'),
  timestamp: z
    .string()
    .max(40)
    .refine((t) => parseTime(t) !== undefined, 'must be an RFC 3339 date-time'),
});

export type LightningReceipt = z.infer<typeof LightningReceiptSchema>;

export interface ReceiptInput {
  challengeId: string;
  /** Hex; written lower-case. */
  paymentHash: string;
  /** When the payment was verified (settlement, for Lightning); whole seconds. */
  settledAt: Date;
}

/** The Payment-Receipt value for a verified charge. Throws a TypeError on input that is not a receipt. */
export function formatReceipt({ challengeId, paymentHash, settledAt }: ReceiptInput): string {
  const receipt = LightningReceiptSchema.safeParse({
    method: LIGHTNING_METHOD,
    challengeId,
    reference: typeof paymentHash === 'string' ? paymentHash.toLowerCase() : paymentHash,
    status: 'success',
    timestamp: settledAt instanceof Date && !Number.isNaN(settledAt.getTime()) ? formatTime(settledAt.getTime() / 1000) : undefined,
  });
  if (!receipt.success) throw new TypeError(`receipt: ${firstIssue(receipt.error)}`);
  return encodeJson(receipt.data);
}

export type ReceiptParse = { ok: true; receipt: LightningReceipt } | { ok: false; detail: string };

/** Reads a Payment-Receipt value as a Lightning receipt; never throws. */
export function parseReceipt(value: string | null | undefined): ReceiptParse {
  const bytes = value ? decodeBase64(value.trim()) : undefined;
  const json = bytes && parseJsonBytes(bytes);
  if (json === undefined) return { ok: false, detail: 'Payment-Receipt is not base64url JSON' };
  const receipt = LightningReceiptSchema.safeParse(json);
  return receipt.success ? { ok: true, receipt: receipt.data } : { ok: false, detail: `Payment-Receipt: ${firstIssue(receipt.error)}` };
}
