// The embedded dev Lightning node (DESIGN.md decision 13): real BOLT11
// invoices signed with its own node key, fake money. Invoices live in the
// key-value store so every instance sharing it sees them; the dev wallet
// settles them exactly once.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, randomBytes } from '@noble/hashes/utils.js';
import { z } from 'zod';
import type { KeyValueStore } from '../../store/types.js';
import { InvalidInvoice, decodeInvoice, encodeInvoice } from '../bolt11.js';
import type { CreateInvoiceRequest, CreatedInvoice, InvoiceStatus, LightningProvider } from '../provider.js';

const StoredInvoice = z.object({
  invoice: z.string(),
  preimage: z.string(),
  amountMsat: z.number().int().positive(),
  expiresAt: z.number().int(),
});

/** Why the dev wallet refused to pay; `code` becomes the HTTP error code. */
export class DevPaymentError extends Error {
  override readonly name = 'DevPaymentError';
  constructor(
    readonly code: 'INVALID_INVOICE' | 'NOT_DEV_INVOICE' | 'UNKNOWN_INVOICE' | 'INVOICE_EXPIRED' | 'ALREADY_PAID',
    message: string,
  ) {
    super(message);
  }
}

export interface DevNode extends LightningProvider {
  readonly nodeKey: string;
  /** The dev wallet: settles one of this node's invoices and returns the proof. */
  pay(invoice: string): Promise<{ preimage: string; paymentHash: string; amountMsat: number }>;
}

const MAX_EXPIRY_SECONDS = 7 * 24 * 3600;

export function createDevNode(options: { store: KeyValueStore; privateKey: string }): DevNode {
  const { store, privateKey } = options;
  const nodeKey = bytesToHex(secp256k1.getPublicKey(hexToBytes(privateKey), true));
  const invoiceKey = (hash: string) => `devnode:invoice:${hash}`;
  const paidKey = (hash: string) => `devnode:paid:${hash}`;

  async function load(hash: string) {
    const raw = await store.get(invoiceKey(hash));
    return raw === null ? null : StoredInvoice.parse(JSON.parse(raw));
  }

  return {
    name: 'dev',
    nodeKey,

    async createInvoice(request: CreateInvoiceRequest): Promise<CreatedInvoice> {
      if (!Number.isSafeInteger(request.amountMsat) || request.amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
      const expirySeconds = Math.min(request.expirySeconds ?? 3600, MAX_EXPIRY_SECONDS);
      const preimage = randomBytes(32);
      const paymentHash = bytesToHex(sha256(preimage));
      const timestamp = Math.floor(Date.now() / 1000);
      const invoice = encodeInvoice(
        {
          network: 'regtest',
          amountMsat: request.amountMsat,
          timestamp,
          paymentHash,
          paymentSecret: bytesToHex(randomBytes(32)),
          ...(request.descriptionHash ? { descriptionHash: request.descriptionHash } : { description: request.memo ?? '' }),
          expirySeconds,
        },
        privateKey,
      );
      const record = { invoice, preimage: bytesToHex(preimage), amountMsat: request.amountMsat, expiresAt: timestamp + expirySeconds };
      // Kept a day past expiry so a late look-up still finds a settled invoice.
      await store.set(invoiceKey(paymentHash), JSON.stringify(record), { ttlMs: (expirySeconds + 86_400) * 1000 });
      return { invoice, paymentHash, amountMsat: request.amountMsat, expiresAt: record.expiresAt };
    },

    async lookupInvoice(paymentHash: string): Promise<InvoiceStatus | null> {
      const record = await load(paymentHash);
      if (!record) return null;
      const settled = (await store.get(paidKey(paymentHash))) !== null;
      return { paymentHash, settled, amountMsat: record.amountMsat, ...(settled ? { preimage: record.preimage } : {}) };
    },

    async pay(invoice: string) {
      let decoded;
      try {
        decoded = decodeInvoice(invoice.trim());
      } catch (error) {
        if (error instanceof InvalidInvoice) throw new DevPaymentError('INVALID_INVOICE', error.message);
        throw error;
      }
      if (decoded.payeeNodeKey !== nodeKey) throw new DevPaymentError('NOT_DEV_INVOICE', 'This invoice was not issued by the embedded dev node; pay it with a real wallet');
      const record = await load(decoded.paymentHash);
      if (!record) throw new DevPaymentError('UNKNOWN_INVOICE', 'The dev node does not know this invoice (it may have been created before a restart)');
      if (record.expiresAt <= Date.now() / 1000) throw new DevPaymentError('INVOICE_EXPIRED', 'Invoice expired; request a new one');
      // SET NX: concurrent payers race here and exactly one settles.
      const settledNow = await store.set(paidKey(decoded.paymentHash), String(Date.now()), { ttlMs: (record.expiresAt - Math.floor(Date.now() / 1000) + 86_400) * 1000, ifAbsent: true });
      if (!settledNow) throw new DevPaymentError('ALREADY_PAID', 'Invoice already paid');
      return { preimage: record.preimage, paymentHash: decoded.paymentHash, amountMsat: record.amountMsat };
    },
  };
}
