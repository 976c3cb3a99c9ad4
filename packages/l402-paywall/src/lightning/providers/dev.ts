// The embedded dev Lightning node (docs/architecture.md decision 13): real BOLT11
// invoices signed with its own node key, fake money. Invoices live in the
// key-value store so every instance sharing it sees them; the dev wallet
// settles them exactly once. Dev nodes sharing a store form one fake network:
// any of them can pay another's invoices (payouts to local Lightning
// Addresses), with balances kept in the store. A paid invoice created with a
// `webhookUrl` is announced there, signed like a real backend's webhook.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, randomBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { RandomPool } from '../../crypto/random-pool.js';
import { z } from 'zod';
import { discardBody } from '../../http/discard-body.js';
import { InvalidInvoice, decodeInvoice, encodeInvoice, nobleInvoiceSigner, type InvoiceSigner } from '../bolt11.js';
import { checkAmountlessPayment, equalBytes, invoiceToPay, parseJson } from './checks.js';
import { refuseInProduction } from './dev-environment.js';
import {
  PaymentFailed,
  WebhookRejected,
  type CreateInvoiceRequest,
  type CreatedInvoice,
  type InvoiceStatus,
  type LightningProvider,
  type PaidInvoice,
  type PayAmountlessInvoiceRequest,
  type PaymentStatus,
  type WebhookDelivery,
} from '../provider.js';

const StoredInvoice = z.object({
  invoice: z.string(),
  preimage: z.string(),
  /** Absent for an invoice without an amount: the payer names it (kept under receivedKey once paid). */
  amountMsat: z.number().int().positive().optional(),
  expiresAt: z.number().int(),
  /** The issuing dev node's key (records from before it was kept belong to whoever reads them). */
  payee: z.string().optional(),
  webhookUrl: z.string().optional(),
});

const OutgoingPayment = z.object({ preimage: z.string(), feeMsat: z.number().int() });

/** The dev node's webhook body (like Phoenixd's), signed in `x-dev-node-signature: t=<unix ms>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. */
export const DEV_WEBHOOK_SIGNATURE_HEADER = 'x-dev-node-signature';
const DevWebhookBody = z.object({
  type: z.literal('payment_received'),
  paymentHash: z.string().regex(/^[0-9a-f]{64}$/),
  amountMsat: z.number().int(),
  timestamp: z.number().int(),
});
const WEBHOOK_TOLERANCE_MS = 5 * 60_000;
const WEBHOOK_TIMEOUT_MS = 5_000;

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
  /** The dev wallet (fake money, no balance): settles an invoice of any dev node on this store and returns the proof. */
  pay(invoice: string): Promise<{ preimage: string; paymentHash: string; amountMsat: number }>;
  readWebhook(delivery: WebhookDelivery): { paymentHash: string };
  /** An invoice without an amount, as a wallet gives for a refund: whoever pays it names the amount. */
  createAmountlessInvoice(request: Omit<CreateInvoiceRequest, 'amountMsat'>): Promise<{ invoice: string; paymentHash: string; expiresAt: number }>;
  payAmountlessInvoice(request: PayAmountlessInvoiceRequest): Promise<PaidInvoice>;
  /** Signs a webhook body as this node does (tests forge and replay deliveries with it). */
  signWebhook(body: string, timestampMs: number): string;
}

/** The longest an invoice of the dev node may be paid (a longer expiry asked for is cut to it). */
export const DEV_MAX_EXPIRY_SECONDS = 7 * 24 * 3600;

/**
 * Where a dev node keeps invoices and balances: the part of a key-value store
 * it uses. Share one store between instances (Redis) and they form one fake
 * network; the default keeps everything in this process.
 */
export interface DevNodeStore {
  get(key: string): Promise<string | null>;
  /** Returns false when `ifAbsent` was set and the key existed. */
  set(key: string, value: string, options?: { ttlMs?: number; ifAbsent?: boolean }): Promise<boolean>;
  /** Atomically adds `delta` to the integer at `key` (0 when missing) and returns the new value. */
  incrementBy(key: string, delta: number): Promise<number>;
}

/** How long a paid invoice's record is kept: a day past its expiry (unix seconds), so a late look-up finds it settled. */
const settledRecordTtlMs = (expiresAt: number) => Math.max(1, expiresAt * 1000 + 86_400_000 - Date.now());

/** How often, at most, an in-process store looks through its entries for expired ones (on a write). */
const EXPIRED_SWEEP_INTERVAL_MS = 10_000;

/** An in-process DevNodeStore (entries expire as asked, and are dropped from memory within EXPIRED_SWEEP_INTERVAL_MS of a write after). */
export function memoryDevNodeStore(): DevNodeStore {
  const entries = new Map<string, { value: string; expiresAt: number }>();
  const live = (key: string) => {
    const entry = entries.get(key);
    if (entry && entry.expiresAt <= Date.now()) entries.delete(key);
    return entries.get(key);
  };
  // Expired entries nobody reads again (unpaid invoices) would otherwise stay for the life of the process.
  let sweptAt = Date.now();
  const sweep = () => {
    const now = Date.now();
    if (now - sweptAt < EXPIRED_SWEEP_INTERVAL_MS) return;
    sweptAt = now;
    for (const [key, entry] of entries) if (entry.expiresAt <= now) entries.delete(key);
  };
  return {
    async get(key) {
      return live(key)?.value ?? null;
    },
    async set(key, value, { ttlMs, ifAbsent = false } = {}) {
      if (ifAbsent && live(key)) return false;
      sweep();
      entries.set(key, { value, expiresAt: ttlMs === undefined ? Infinity : Date.now() + ttlMs });
      return true;
    },
    async incrementBy(key, delta) {
      const entry = live(key);
      const next = Number(entry?.value ?? 0) + delta;
      entries.set(key, { value: String(next), expiresAt: entry?.expiresAt ?? Infinity });
      return next;
    },
  };
}

export interface DevNodeOptions {
  /** Default: an in-process store (invoices are gone when the process ends). */
  store?: DevNodeStore;
  /** The node key, 32 bytes of hex; default a fresh random key (keep it to recognise this node's invoices after a restart). */
  privateKey?: string;
  /**
   * Signs the invoices. Default: @noble/curves, pure JS, wherever the library
   * runs. On Node, libsecp256k1 (e.g. tiny-secp256k1's `signRecoverable`)
   * signs about three times faster; the signer is checked once, here.
   */
  signInvoice?: InvoiceSigner;
  /**
   * The node's public key (33 bytes compressed, hex), when the caller derives
   * it with the library that signs (libsecp256k1's pointFromScalar). Derived
   * here otherwise, in pure JS, whose first use builds @noble/curves' table
   * for the generator: tens of milliseconds of a cold start. Needs
   * `signInvoice`, whose signature is checked against it here.
   */
  nodeKey?: string;
}

/**
 * The embedded dev node: real BOLT11 on regtest, fake money. Never a production
 * backend: under a production NODE_ENV (anything but unset, development or
 * test) it makes no invoice and pays nothing (DevNodeInProduction, which
 * withL402 answers as 503 DEV_NODE_IN_PRODUCTION). Making one is allowed
 * everywhere, so a build (`next build` runs with NODE_ENV=production) that
 * evaluates a module making one still passes.
 */
export function createDevNode(options: DevNodeOptions = {}): DevNode {
  const store = options.store ?? memoryDevNodeStore();
  const privateKey = options.privateKey ?? bytesToHex(randomBytes(32));
  const random = new RandomPool();
  if (!/^[0-9a-fA-F]{64}$/.test(privateKey)) throw new TypeError('createDevNode: privateKey must be 32 bytes of hex');
  if (options.nodeKey !== undefined && (!options.signInvoice || !/^0[23][0-9a-fA-F]{64}$/.test(options.nodeKey)))
    throw new TypeError('createDevNode: nodeKey must be 33 bytes of hex (a compressed public key), given with signInvoice');
  const nodeKey = options.nodeKey?.toLowerCase() ?? bytesToHex(secp256k1.getPublicKey(hexToBytes(privateKey), true));
  const signInvoice = options.signInvoice ?? nobleInvoiceSigner;
  if (options.signInvoice) checkSigner(signInvoice, privateKey, nodeKey);
  const invoiceKey = (hash: string) => `devnode:invoice:${hash}`;
  const paidKey = (hash: string) => `devnode:paid:${hash}`;
  const outgoingKey = (hash: string) => `devnode:out:${nodeKey}:${hash}`;
  const balanceKey = (key: string) => `devnode:balance:${key}`;
  const receivedKey = (hash: string) => `devnode:received:${hash}`;
  const webhookKey = hmac(sha256, hexToBytes(privateKey), utf8ToBytes('dev-node webhook'));
  const signWebhook = (body: string, timestampMs: number) => bytesToHex(hmac(sha256, webhookKey, utf8ToBytes(`${timestampMs}.${body}`)));

  async function load(hash: string) {
    const raw = await store.get(invoiceKey(hash));
    return raw === null ? null : StoredInvoice.parse(JSON.parse(raw));
  }

  /**
   * Settles an invoice of any dev node on this store, once; credits the payee
   * and announces it. An invoice without an amount is paid `payerAmountMsat`;
   * one with an amount is paid that amount, and refused a different one.
   */
  async function settle(invoice: string, payerAmountMsat?: number) {
    let decoded;
    try {
      decoded = decodeInvoice(invoice.trim());
    } catch (error) {
      if (error instanceof InvalidInvoice) throw new DevPaymentError('INVALID_INVOICE', error.message);
      throw error;
    }
    const record = await load(decoded.paymentHash);
    if (!record || (record.payee ?? nodeKey) !== decoded.payeeNodeKey) {
      if (decoded.payeeNodeKey !== nodeKey)
        throw new DevPaymentError('NOT_DEV_INVOICE', 'This invoice was not issued by the embedded dev node; pay it with a real wallet');
      throw new DevPaymentError('UNKNOWN_INVOICE', 'The dev node does not know this invoice (it may have been created before a restart)');
    }
    if (record.expiresAt <= Date.now() / 1000) throw new DevPaymentError('INVOICE_EXPIRED', 'Invoice expired; request a new one');
    const amountMsat = record.amountMsat ?? payerAmountMsat;
    if (amountMsat === undefined) throw new DevPaymentError('INVALID_INVOICE', 'This invoice names no amount: the payer must name one');
    if (payerAmountMsat !== undefined && payerAmountMsat !== amountMsat)
      throw new DevPaymentError('INVALID_INVOICE', `This invoice is for ${record.amountMsat} msat, not ${payerAmountMsat}`);
    // SET NX: concurrent payers race here and exactly one settles.
    const settledNow = await store.set(paidKey(decoded.paymentHash), String(Date.now()), {
      ttlMs: (record.expiresAt - Math.floor(Date.now() / 1000) + 86_400) * 1000,
      ifAbsent: true,
    });
    if (!settledNow) throw new DevPaymentError('ALREADY_PAID', 'Invoice already paid');
    // Paid: kept a day past its expiry (it was kept until its expiry only), so a late look-up still finds it settled.
    await store.set(invoiceKey(decoded.paymentHash), JSON.stringify(record), { ttlMs: settledRecordTtlMs(record.expiresAt) });
    if (record.amountMsat === undefined)
      await store.set(receivedKey(decoded.paymentHash), String(amountMsat), { ttlMs: (record.expiresAt - Math.floor(Date.now() / 1000) + 86_400) * 1000 });
    await store.incrementBy(balanceKey(decoded.payeeNodeKey), amountMsat);
    if (record.webhookUrl) await deliverWebhook(record.webhookUrl, decoded.paymentHash, amountMsat);
    return { preimage: record.preimage, paymentHash: decoded.paymentHash, amountMsat };
  }

  /** Pays `amountMsat` to a dev-node invoice from this node's balance, once. */
  async function payOut(invoice: string, amountMsat: number, maxFeeMsat: number): Promise<PaidInvoice> {
    refuseInProduction();
    if (!Number.isSafeInteger(maxFeeMsat) || maxFeeMsat < 0) throw new RangeError('maxFeeMsat must be a non-negative integer');
    const { payeeNodeKey } = invoiceToPay(invoice);
    // Paying its own invoice (a local owner's address served by this same node) moves nothing:
    // it needs no balance, so a fresh local server can pay out and send link proofs.
    const debit = payeeNodeKey === nodeKey ? 0 : amountMsat;
    // Debit first so concurrent payments cannot spend the same balance twice.
    if ((await store.incrementBy(balanceKey(nodeKey), -debit)) < 0) {
      await store.incrementBy(balanceKey(nodeKey), debit);
      throw new PaymentFailed('Insufficient balance on the dev node');
    }
    let paid;
    try {
      paid = await settle(invoice, amountMsat);
      // settle() credited the payee, which is this node: take back what a self-payment cannot add.
      if (debit === 0) await store.incrementBy(balanceKey(nodeKey), -amountMsat);
    } catch (error) {
      await store.incrementBy(balanceKey(nodeKey), debit);
      if (error instanceof DevPaymentError) throw new PaymentFailed(`Payment failed: ${error.message}`);
      throw error;
    }
    await store.set(outgoingKey(paid.paymentHash), JSON.stringify({ preimage: paid.preimage, feeMsat: 0 }));
    return { paymentHash: paid.paymentHash, preimage: paid.preimage, feeMsat: 0 };
  }

  /** Makes and keeps an invoice; without `amountMsat`, one whose payer names the amount. */
  async function issue(request: Omit<CreateInvoiceRequest, 'amountMsat'> & { amountMsat?: number }) {
    const expirySeconds = Math.min(request.expirySeconds ?? 3600, DEV_MAX_EXPIRY_SECONDS);
    // Both secrets from the node's pool: each call to the system's random source has a fixed cost.
    const secrets = random.take(64);
    const preimage = secrets.subarray(0, 32);
    const paymentHash = bytesToHex(sha256(preimage));
    const timestamp = Math.floor(Date.now() / 1000);
    const invoice = encodeInvoice(
      {
        network: 'regtest',
        ...(request.amountMsat === undefined ? {} : { amountMsat: request.amountMsat }),
        timestamp,
        paymentHash,
        paymentSecret: bytesToHex(secrets.subarray(32)),
        ...(request.descriptionHash ? { descriptionHash: request.descriptionHash } : { description: request.memo ?? '' }),
        expirySeconds,
      },
      privateKey,
      signInvoice,
    );
    const record = {
      invoice,
      preimage: bytesToHex(preimage),
      ...(request.amountMsat === undefined ? {} : { amountMsat: request.amountMsat }),
      expiresAt: timestamp + expirySeconds,
      payee: nodeKey,
      ...(request.webhookUrl ? { webhookUrl: request.webhookUrl } : {}),
    };
    // Kept until it expires: an invoice nobody paid is dropped then (every 402 makes one, so
    // unpaid ones must not pile up); settle() keeps a paid one a day longer.
    await store.set(invoiceKey(paymentHash), JSON.stringify(record), { ttlMs: expirySeconds * 1000 });
    return { invoice, paymentHash, expiresAt: record.expiresAt };
  }

  // One attempt, bounded: a lost delivery is what the service's look-ups at the provider are for.
  async function deliverWebhook(url: string, paymentHash: string, amountMsat: number): Promise<void> {
    const timestamp = Date.now();
    const body = JSON.stringify({ type: 'payment_received', paymentHash, amountMsat, timestamp });
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', [DEV_WEBHOOK_SIGNATURE_HEADER]: `t=${timestamp},v1=${signWebhook(body, timestamp)}` },
        body,
        signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
      });
      discardBody(response.body);
      if (!response.ok) console.error(`[dev-node] webhook to ${url} answered ${response.status}`);
    } catch (error) {
      console.error(`[dev-node] webhook to ${url} failed:`, error instanceof Error ? error.message : error);
    }
  }

  return {
    name: 'dev',
    nodeKey,
    // Settled in the store, never routed: a payment costs no fee (feeMsat 0), so refunds keep nothing back.
    noRoutingFee: true,

    async createInvoice(request: CreateInvoiceRequest): Promise<CreatedInvoice> {
      refuseInProduction();
      if (!Number.isSafeInteger(request.amountMsat) || request.amountMsat <= 0) throw new RangeError('amountMsat must be a positive integer');
      return { ...(await issue(request)), amountMsat: request.amountMsat };
    },

    async createAmountlessInvoice(request) {
      refuseInProduction();
      return issue({ ...request, amountMsat: undefined });
    },

    async lookupInvoice(paymentHash: string): Promise<InvoiceStatus | null> {
      const record = await load(paymentHash);
      if (!record) return null;
      const settled = (await store.get(paidKey(paymentHash))) !== null;
      // An invoice without an amount: what its payer paid (0 until then).
      const amountMsat = record.amountMsat ?? Number((await store.get(receivedKey(paymentHash))) ?? 0);
      return { paymentHash, settled, amountMsat, ...(settled ? { preimage: record.preimage } : {}) };
    },

    async pay(invoice: string) {
      refuseInProduction();
      return await settle(invoice);
    },

    async payInvoice({ invoice, maxFeeMsat }): Promise<PaidInvoice> {
      const { amountMsat } = invoiceToPay(invoice);
      if (amountMsat === null) throw new PaymentFailed('This invoice names no amount; pay it with payAmountlessInvoice');
      return payOut(invoice, amountMsat, maxFeeMsat);
    },

    async payAmountlessInvoice({ invoice, amountMsat, maxFeeMsat }): Promise<PaidInvoice> {
      checkAmountlessPayment(invoice, amountMsat);
      return payOut(invoice, amountMsat, maxFeeMsat);
    },

    async lookupPayment(paymentHash: string): Promise<PaymentStatus | null> {
      const raw = await store.get(outgoingKey(paymentHash));
      if (raw === null) return null;
      const payment = OutgoingPayment.parse(JSON.parse(raw));
      return { paymentHash, state: 'succeeded', preimage: payment.preimage, feeMsat: payment.feeMsat };
    },

    async balance() {
      const raw = await store.get(balanceKey(nodeKey));
      return { balanceMsat: raw === null ? 0 : Number(raw) };
    },

    readWebhook({ headers, body, now = Date.now() }: WebhookDelivery) {
      const header = headers.get(DEV_WEBHOOK_SIGNATURE_HEADER);
      const match = header ? /^t=(\d{1,15}),v1=([0-9a-f]{64})$/.exec(header) : null;
      if (!match) throw new WebhookRejected(`Missing or malformed ${DEV_WEBHOOK_SIGNATURE_HEADER} header`);
      const timestampMs = Number(match[1]);
      if (!equalBytes(hexToBytes(signWebhook(body, timestampMs)), hexToBytes(match[2]!))) throw new WebhookRejected('Webhook signature does not match');
      if (Math.abs(now - timestampMs) > WEBHOOK_TOLERANCE_MS) throw new WebhookRejected('Webhook timestamp is outside the 5-minute tolerance');
      const parsed = DevWebhookBody.safeParse(parseJson(body));
      if (!parsed.success) throw new WebhookRejected('Webhook body is not a dev-node payment_received event');
      return { paymentHash: parsed.data.paymentHash };
    },

    signWebhook,
  };
}

/**
 * A signer that signs with another key, or gives a high-S signature or a wrong
 * recovery id, would make every invoice unpayable or name another payee:
 * refused at construction rather than discovered by the first payer.
 */
function checkSigner(sign: InvoiceSigner, privateKey: string, nodeKey: string): void {
  const hash = sha256(utf8ToBytes('dev-node signer check'));
  let recovered: string | undefined;
  try {
    const { signature, recovery } = sign(hash, hexToBytes(privateKey));
    const sig = secp256k1.Signature.fromBytes(signature, 'compact');
    if (!sig.hasHighS()) recovered = sig.addRecoveryBit(recovery).recoverPublicKey(hash).toHex(true);
  } catch {
    // a throw is a wrong signer too
  }
  if (recovered !== nodeKey)
    throw new TypeError(
      'createDevNode: signInvoice must return a low-S ECDSA signature (64 bytes r ‖ s) and its recovery id, made with the node key (and nodeKey, when given, must be its public key)',
    );
}
