// The pure parts every backend shares: answer shapes, unit conversions and the
// checks that keep a backend honest (an issued invoice is what was asked for,
// a claimed preimage hashes to the payment hash). No transport, no Node.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { base64 } from '@scure/base';
import { z } from 'zod';
import { isPreimageOf as isLowerPreimageOf } from '../../crypto/preimage.js';
import { decodeInvoice, InvalidInvoice, type DecodedInvoice, type Network } from '../bolt11.js';
import {
  PaymentFailed,
  ProviderConfigError,
  ProviderUnavailable,
  ProviderUnsupported,
  type CreatedAmountlessInvoice,
  type CreatedInvoice,
} from '../provider.js';

export const Hex32 = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be 32 bytes of hex')
  .transform((s) => s.toLowerCase());

/** An integer that JSON may carry as a number or (gRPC-gateway uint64) a decimal string. */
export const IntLike = z
  .union([
    z.number(),
    z
      .string()
      .regex(/^-?\d{1,17}$/)
      .transform(Number),
  ])
  .pipe(z.number().int().refine(Number.isSafeInteger, 'too large'));

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The backend's own error text (FastAPI `detail`, gRPC-gateway/CLN `message`, plain text), short and single-line. */
export function errorMessage(body: string): string {
  const value = parseJson(body) as Record<string, unknown> | undefined;
  let text: unknown = body;
  if (value && typeof value === 'object') {
    const nested = value.error && typeof value.error === 'object' ? (value.error as Record<string, unknown>) : undefined;
    text = value.detail ?? value.message ?? nested?.message ?? value.reason ?? value.error ?? '';
  }
  if (typeof text !== 'string') return '';
  return text
    .replace(/<[^>]*>/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, 200);
}

export function satToMsat(sat: number): number {
  const msat = sat * 1000;
  if (!Number.isSafeInteger(msat)) throw new ProviderUnavailable('Amount out of range');
  return msat;
}

/** Sat-denominated APIs (LNbits, Phoenixd) cannot ask for a fraction of a sat. */
export function wholeSats(amountMsat: number, backend: string): number {
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
  if (amountMsat % 1000 !== 0) throw new ProviderUnsupported(`${backend} invoices are in whole satoshis; ${amountMsat} msat is not`);
  return amountMsat / 1000;
}

/** Standard or URL-safe base64, padded or not (backends differ). */
export function base64ToHex(b64: string): string {
  const standard = b64.replace(/-/g, '+').replace(/_/g, '/');
  return bytesToHex(base64.decode(standard + '='.repeat((4 - (standard.length % 4)) % 4)));
}

export function hexToBase64(hex: string): string {
  return base64.encode(hexToBytes(hex));
}

export function utf8ToBase64(text: string): string {
  return base64.encode(utf8ToBytes(text));
}

/** Hex SHA-256 of UTF-8 text (a description, for its BOLT11 description hash). */
export function sha256OfText(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** Whether a 32-byte hex preimage hashes to a payment hash (both hex, any case: backends differ). */
export function isPreimageOf(preimage: string, paymentHash: string): boolean {
  return isLowerPreimageOf(preimage.toLowerCase(), paymentHash.toLowerCase());
}

/** Constant-time comparison of two byte strings (length is not secret). */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

/**
 * A preimage the backend claims for `paymentHash`, checked: it must hash to it.
 * All-zero (LNbits' "unknown") or absent gives undefined; a wrong one is nonsense.
 */
export function checkedPreimage(backend: string, paymentHash: string, preimage: string | null | undefined): string | undefined {
  if (!preimage || /^0+$/.test(preimage)) return undefined;
  const hex = preimage.toLowerCase();
  if (!isPreimageOf(hex, paymentHash)) {
    throw new ProviderUnavailable(`${backend} gave a preimage that does not match the payment hash`);
  }
  return hex;
}

/** What an issued invoice must be: the request as asked (`{ ...request, paymentHash, network }`), the hash the backend claims, our network. */
export interface ExpectedInvoice {
  amountMsat: number;
  /** The hash the backend claims the invoice has. */
  paymentHash: string;
  descriptionHash?: string;
  network: Network;
}

/** Decodes an invoice about to be paid; one that does not decode is refused before anything is sent. */
export function invoiceToPay(invoice: string): DecodedInvoice {
  try {
    return decodeInvoice(invoice.trim());
  } catch (error) {
    if (error instanceof InvalidInvoice) throw new PaymentFailed(`Not paid: ${error.message}`);
    throw error;
  }
}

/** Checks a payAmountlessInvoice request: a positive whole amount, and an invoice that names none (one that does goes to payInvoice). */
export function checkAmountlessPayment(invoice: string, amountMsat: number): void {
  if (!Number.isSafeInteger(amountMsat) || amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
  if (invoiceToPay(invoice).amountMsat !== null) throw new PaymentFailed('This invoice names its amount; pay it with payInvoice');
}

/**
 * Decodes (signature checked) the invoice a backend just issued and refuses it unless
 * it is what was asked for: amount, the claimed payment hash, the description hash,
 * our network. Selling with an invoice for another amount or hash would give away
 * the resource or lose the payment, so a mismatch is never accepted.
 * Answers the invoice as createInvoice returns it.
 */
export function issuedInvoice(backend: string, invoice: string, expected: ExpectedInvoice): CreatedInvoice {
  const decoded = checkIssued(backend, invoice, expected);
  return { invoice, paymentHash: decoded.paymentHash, amountMsat: expected.amountMsat, expiresAt: decoded.expiresAt };
}

/**
 * The same checks for an invoice asked for without an amount (a return invoice):
 * one that names an amount would cap or refuse the refund paid to it.
 */
export function issuedAmountlessInvoice(backend: string, invoice: string, expected: Omit<ExpectedInvoice, 'amountMsat'>): CreatedAmountlessInvoice {
  const decoded = checkIssued(backend, invoice, { ...expected, amountMsat: null });
  return { invoice, paymentHash: decoded.paymentHash, expiresAt: decoded.expiresAt };
}

function checkIssued(backend: string, invoice: string, expected: Omit<ExpectedInvoice, 'amountMsat'> & { amountMsat: number | null }): DecodedInvoice {
  let decoded: DecodedInvoice;
  try {
    decoded = decodeInvoice(invoice);
  } catch (error) {
    if (error instanceof InvalidInvoice) throw new ProviderUnavailable(`${backend} issued an invalid invoice (${error.reason})`);
    throw error;
  }
  if (decoded.network !== expected.network) {
    throw new ProviderConfigError('LIGHTNING_NETWORK', `${backend} issues invoices for ${decoded.network}, but LIGHTNING_NETWORK is ${expected.network}`);
  }
  if (decoded.amountMsat !== expected.amountMsat) {
    const asked = expected.amountMsat === null ? 'none' : `${expected.amountMsat} msat`;
    throw new ProviderUnavailable(
      `${backend} issued an invoice for ${decoded.amountMsat === null ? 'any amount' : `${decoded.amountMsat} msat`} instead of ${asked}`,
    );
  }
  if (decoded.paymentHash !== expected.paymentHash.toLowerCase()) {
    throw new ProviderUnavailable(`${backend} issued an invoice whose payment hash is not the one it reported`);
  }
  if (expected.descriptionHash && decoded.descriptionHash !== expected.descriptionHash.toLowerCase()) {
    throw new ProviderUnavailable(`${backend} issued an invoice without the requested description hash`);
  }
  return decoded;
}
