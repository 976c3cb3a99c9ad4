/**
 * BOLT #11 invoices: a strict decoder (signature checked) and an encoder for the dev node.
 *
 * We own the tagged-field parsing instead of wrapping light-bolt11-decoder: it checks no
 * signature, throws on valid invoices (a wrong-length field it should skip) and accepts
 * invalid ones (unknown even feature, missing `s`, bad signature). It stays a test-time
 * cross-check. Edge-safe: Web APIs, @noble and @scure only.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { bech32 } from '@scure/base';
import { setNewest } from '../util/bounded-map.js';

export type Network = 'bitcoin' | 'testnet' | 'signet' | 'regtest';

export interface DecodedInvoice {
  network: Network;
  /** Integer millisatoshis; null when the invoice leaves the amount to the payer. */
  amountMsat: number | null;
  /** Unix seconds. */
  timestamp: number;
  expirySeconds: number;
  /** timestamp + expirySeconds, unix seconds. */
  expiresAt: number;
  paymentHash: string;
  paymentSecret: string;
  description?: string;
  descriptionHash?: string;
  /** 33-byte compressed hex: from `n` when present, otherwise recovered from the signature. */
  payeeNodeKey: string;
  minFinalCltvExpiry: number;
  /** Set bits of the `9` field, ascending; absent when the invoice has no `9` field. */
  featureBits?: number[];
}

export interface InvoiceFields {
  network: Network;
  amountMsat?: number;
  timestamp: number;
  paymentHash: string;
  paymentSecret: string;
  description?: string;
  descriptionHash?: string;
  expirySeconds?: number;
  minFinalCltvExpiry?: number;
}

export class InvalidInvoice extends Error {
  override name = 'InvalidInvoice';
  constructor(readonly reason: string) {
    super(`Invalid BOLT11 invoice: ${reason}`);
  }
}

function fail(reason: string): never {
  throw new InvalidInvoice(reason);
}

const CURRENCY: Record<string, Network> = { bc: 'bitcoin', tb: 'testnet', tbs: 'signet', bcrt: 'regtest' };
const PREFIX: Record<Network, string> = { bitcoin: 'bc', testnet: 'tb', signet: 'tbs', regtest: 'bcrt' };
// Millisatoshis per unit, times 10 so that `p` (0.1 msat) stays an integer.
const MSAT10 = { '': 10n ** 12n, m: 10n ** 9n, u: 10n ** 6n, n: 10n ** 3n, p: 1n } as const;
type Multiplier = keyof typeof MSAT10;

const TAG = { p: 1, s: 16, d: 13, h: 23, n: 19, x: 6, c: 24, features: 5 } as const;
// Readers skip these fields when their length is wrong (room for future variants).
const FIXED_LENGTH = new Map<number, number>([
  [TAG.p, 52],
  [TAG.s, 52],
  [TAG.h, 52],
  [TAG.n, 53],
]);
// Even bits of the BOLT 9 features a payer may meet in an invoice; an unknown even bit
// means "you must understand this", so the invoice is refused.
const KNOWN_FEATURES = new Set([8, 14, 16, 48]); // var_onion_optin, payment_secret, basic_mpp, payment_metadata
// BOLT 9 dependencies: payment_secret needs var_onion_optin, basic_mpp needs payment_secret.
const FEATURE_DEPENDS: [number, number][] = [
  [14, 8],
  [16, 14],
];
const SIG_WORDS = 104; // 65 bytes: r ‖ s ‖ recovery id
const TIMESTAMP_WORDS = 7;

// Big-endian 5-bit words to bytes. The signed message is zero-padded to a byte boundary;
// field values drop the trailing padding bits.
function wordsToBytes(words: number[], pad: boolean): Uint8Array {
  const out: number[] = [];
  let acc = 0;
  let bits = 0;
  for (const w of words) {
    acc = ((acc << 5) | w) & 0xfff;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out.push((acc >> bits) & 0xff);
    }
  }
  if (pad && bits > 0) out.push((acc << (8 - bits)) & 0xff);
  return Uint8Array.from(out);
}

function wordsToInt(words: number[], what: string): number {
  let n = 0;
  for (const w of words) {
    n = n * 32 + w;
    if (n > Number.MAX_SAFE_INTEGER) fail(`${what} is too large`);
  }
  return n;
}

// Minimal big-endian words (0 -> none), left-padded with zero words to `width`.
function intToWords(n: number, width = 0): number[] {
  const words: number[] = [];
  for (; n > 0; n = Math.floor(n / 32)) words.unshift(n % 32);
  while (words.length < width) words.unshift(0);
  return words;
}

function signingHash(hrp: string, dataWords: number[]): Uint8Array {
  return sha256(concatBytes(utf8ToBytes(hrp), wordsToBytes(dataWords, true)));
}

function parseAmount(amount: string | undefined, unit: string): number | null {
  if (amount === undefined) return null;
  if (unit === 'p' && !amount.endsWith('0')) fail('amount in p must end in 0 (sub-millisatoshi)');
  const msat = (BigInt(amount) * MSAT10[unit as Multiplier]) / 10n;
  if (msat === 0n) fail('amount is zero');
  if (msat > BigInt(Number.MAX_SAFE_INTEGER)) fail('amount is too large');
  return Number(msat);
}

export interface DecodeOptions {
  /**
   * The node key this payee signed with before (hex, 33 bytes compressed). When the
   * invoice's signature is that key's, the decoder checks it against a cached table
   * of the key (about a third of the work) instead of recovering the key; otherwise
   * it recovers as usual. The result is the same either way.
   */
  expectedPayee?: string;
}

export function decodeInvoice(invoice: string, options: DecodeOptions = {}): DecodedInvoice {
  if (typeof invoice !== 'string') fail('not a string');
  let prefix: string;
  let words: number[];
  try {
    // No 90-character limit (BOLT 11); bech32 rejects mixed case and a bad checksum.
    ({ prefix, words } = bech32.decode(invoice, false));
  } catch (e) {
    return fail(`not bech32 (${(e as Error).message})`);
  }
  const hrp = /^ln(bcrt|bc|tbs|tb)(?:(\d+)([munp]?))?$/.exec(prefix);
  if (!hrp) return fail(`unknown prefix or amount "${prefix}"`);
  const network = CURRENCY[hrp[1]!]!;
  const amountMsat = parseAmount(hrp[2], hrp[3] ?? '');

  if (words.length < TIMESTAMP_WORDS + SIG_WORDS) fail('too short');
  const data = words.slice(0, -SIG_WORDS);
  const sig = wordsToBytes(words.slice(-SIG_WORDS), false);
  const timestamp = wordsToInt(data.slice(0, TIMESTAMP_WORDS), 'timestamp');

  // The first valid copy of each field counts (BOLT 11: the writer lists its preferred one first).
  const fields = new Map<number, number[]>();
  let descriptions = 0;
  for (let i = TIMESTAMP_WORDS; i < data.length; ) {
    if (i + 3 > data.length) fail('truncated tagged field');
    const type = data[i]!;
    const len = data[i + 1]! * 32 + data[i + 2]!;
    const value = data.slice(i + 3, i + 3 + len);
    if (value.length < len) fail('truncated tagged field');
    i += 3 + len;
    if ((FIXED_LENGTH.get(type) ?? len) !== len) continue;
    if (type === TAG.d || type === TAG.h) descriptions++;
    if (!fields.has(type)) fields.set(type, value);
  }
  const bytes = (tag: number) => {
    const w = fields.get(tag);
    return w && wordsToBytes(w, false);
  };

  const paymentHash = bytes(TAG.p) ?? fail('missing payment hash (p)');
  const paymentSecret = bytes(TAG.s) ?? fail('missing payment secret (s)');
  if (descriptions !== 1) fail('needs exactly one description (d) or description hash (h)');
  let description: string | undefined;
  const d = bytes(TAG.d);
  if (d) {
    try {
      description = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(d);
    } catch {
      fail('description is not UTF-8');
    }
  }
  const descriptionHash = bytes(TAG.h);

  let featureBits: number[] | undefined;
  const features = fields.get(TAG.features);
  if (features) {
    featureBits = [];
    for (let i = 0; i < features.length * 5; i++) {
      if ((features[features.length - 1 - Math.floor(i / 5)]! >> (i % 5)) & 1) featureBits.push(i);
    }
    const set = new Set(featureBits);
    const unknown = featureBits.find((b) => b % 2 === 0 && !KNOWN_FEATURES.has(b));
    if (unknown !== undefined) fail(`requires unknown feature bit ${unknown}`);
    const has = (f: number) => set.has(f) || set.has(f + 1);
    for (const [f, dep] of FEATURE_DEPENDS) {
      if (has(f) && !has(dep)) fail(`feature ${f} set without its dependency ${dep}`);
    }
  }

  const recovery = sig[64]!;
  if (recovery > 3) fail('bad signature recovery id');
  const hash = signingHash(prefix, data);
  let payee = bytes(TAG.n);
  if (payee) {
    // BOLT 11: with `n` the signature must verify against it and be low-S (non-malleable).
    if (!secp256k1.verify(sig.subarray(0, 64), hash, payee, { prehash: false, lowS: true })) {
      fail('signature does not match payee key (n)');
    }
  } else {
    payee = signerOf(sig.subarray(0, 64), recovery, hash, options.expectedPayee);
  }

  const x = fields.get(TAG.x);
  const c = fields.get(TAG.c);
  const expirySeconds = x ? wordsToInt(x, 'expiry') : 3600;
  const expiresAt = timestamp + expirySeconds;
  if (expiresAt > Number.MAX_SAFE_INTEGER) fail('expiry is too large');
  return {
    network,
    amountMsat,
    timestamp,
    expirySeconds,
    expiresAt,
    paymentHash: bytesToHex(paymentHash),
    paymentSecret: bytesToHex(paymentSecret),
    ...(description !== undefined && { description }),
    ...(descriptionHash && { descriptionHash: bytesToHex(descriptionHash) }),
    payeeNodeKey: bytesToHex(payee!),
    minFinalCltvExpiry: c ? wordsToInt(c, 'min_final_cltv_expiry') : 18,
    ...(featureBits && { featureBits }),
  };
}

/**
 * The node that made a BOLT 11 signature without `n`: the key recovered from it.
 * BOLT 11 accepts high-S here; its vector ("high-S signature, recovery") was made by
 * replacing s with n - s while keeping the recovery id, so s is normalised to low-S
 * first: that yields the node that signed (the vectors' key).
 */
function signerOf(rs: Uint8Array, recovery: number, hash: Uint8Array, expectedPayee: string | undefined): Uint8Array {
  let signature: InstanceType<typeof secp256k1.Signature>;
  try {
    signature = secp256k1.Signature.fromBytes(rs);
  } catch {
    return fail('signature is not recoverable');
  }
  if (signature.hasHighS()) signature = new secp256k1.Signature(signature.r, Point.Fn.neg(signature.s));
  if (expectedPayee && isSignerOf(signature, recovery, hash, expectedPayee)) return hexToBytes(expectedPayee);
  try {
    return signature.addRecoveryBit(recovery).recoverPublicKey(hash).toBytes(true);
  } catch {
    return fail('signature is not recoverable');
  }
}

const { Point } = secp256k1;
type CurvePoint = InstanceType<typeof Point>;
// Window sizes of the multiplication tables: a product costs one addition per window
// (256 / w of them), a table 2^(w-1) points per window. The generator's table is made
// once per process (about 4,200 points, under 1 MB); a payee's is smaller, for up to
// PAYEE_TABLES_MAX recently seen keys (about 1,400 points each). Both are pure
// precomputation: a table is a function of its point alone, and a decode answers the
// same with or without one, only sooner.
const GENERATOR_WINDOW = 8;
const PAYEE_WINDOW = 6;
const PAYEE_TABLES_MAX = 8;
// Made on the first decode that needs it, not at import: most importers never check a signature this way.
const generatorTable = computedOnce(() => Point.fromAffine(Point.BASE.toAffine()).precompute(GENERATOR_WINDOW));
const payeeTables = new Map<string, CurvePoint>();

/** compute's value, computed on the first call and kept: for pure precomputation only (the same value whoever asks first). */
function computedOnce<T>(compute: () => T): () => T {
  let computed: { value: T } | undefined;
  return () => (computed ??= { value: compute() }).value;
}

function payeeTable(keyHex: string): CurvePoint | undefined {
  let point = payeeTables.get(keyHex);
  if (!point) {
    try {
      point = Point.fromHex(keyHex).precompute(PAYEE_WINDOW);
    } catch {
      return undefined;
    }
    setNewest(payeeTables, keyHex, point, PAYEE_TABLES_MAX);
  }
  return point;
}

/**
 * Whether recovering (signature, recovery id) over hash would give keyHex: ECDSA
 * verification R = (z/s)G + (r/s)P with R.x = r, plus R's parity and overflow bits
 * equal to the recovery id (R is the very point recovery starts from). Both products
 * use precomputed tables, which is what makes this cheaper than recovery.
 */
function isSignerOf(signature: InstanceType<typeof secp256k1.Signature>, recovery: number, hash: Uint8Array, keyHex: string): boolean {
  const key = payeeTable(keyHex);
  if (!key) return false;
  const { Fn } = Point;
  const { r, s } = signature;
  const sInverse = Fn.inv(s);
  // A copy of the generator, so that its wider table is ours and not every noble user's.
  const R = generatorTable()
    .multiplyUnsafe(Fn.mul(Fn.fromBytes(hash, true), sInverse))
    .add(key.multiplyUnsafe(Fn.mul(r, sInverse)));
  if (R.is0()) return false;
  const { x, y } = R.toAffine();
  if (Fn.create(x) !== r) return false;
  return recovery === (Number(y & 1n) | (x === r ? 0 : 2));
}

// Largest unit that still divides the amount exactly gives the shortest amount string.
function encodeAmount(msat: number): string {
  const msat10 = BigInt(msat) * 10n;
  for (const unit of ['', 'm', 'u', 'n', 'p'] as const) {
    if (msat10 % MSAT10[unit] === 0n) return `${msat10 / MSAT10[unit]}${unit}`;
  }
  throw new Error('unreachable: p divides every amount');
}

function tagged(type: number, words: number[]): number[] {
  if (words.length > 1023) throw new RangeError(`tagged field ${type} is longer than 1023 words`);
  return [type, words.length >> 5, words.length & 31, ...words];
}

function hash32(hex: string, name: string): number[] {
  if (!/^[0-9a-f]{64}$/i.test(hex)) throw new TypeError(`${name} must be 32 bytes of hex`);
  return bech32.toWords(hexToBytes(hex));
}

function assertInt(n: number, min: number, max: number, name: string): void {
  if (!Number.isSafeInteger(n) || n < min || n > max) throw new RangeError(`${name} must be an integer in [${min}, ${max}]`);
}

/**
 * Signs an invoice's 32-byte signing hash with the node's 32-byte key: ECDSA on
 * secp256k1, low-S, as the 64 bytes r ‖ s and the recovery id (0-3) that a
 * decoder needs to recover the payee.
 */
export type InvoiceSigner = (hash: Uint8Array, privateKey: Uint8Array) => { signature: Uint8Array; recovery: number };

/** The default signer: @noble/curves (pure JS, runs everywhere; RFC 6979 nonces). */
export const nobleInvoiceSigner: InvoiceSigner = (hash, privateKey) => {
  // noble's recovered format is recovery id ‖ r ‖ s.
  const sig = secp256k1.sign(hash, privateKey, { prehash: false, format: 'recovered' });
  return { signature: sig.subarray(1), recovery: sig[0]! };
};

/**
 * Signs a BOLT 11 invoice with the node key. No `n` field: any BOLT 11 decoder recovers
 * the payee from the (low-S) signature, and the invoice stays shorter for QR codes.
 */
export function encodeInvoice(fields: InvoiceFields, privateKeyHex: string, sign: InvoiceSigner = nobleInvoiceSigner): string {
  const { amountMsat, timestamp, description, descriptionHash, expirySeconds, minFinalCltvExpiry = 18 } = fields;
  if ((description === undefined) === (descriptionHash === undefined)) {
    throw new TypeError('give exactly one of description and descriptionHash');
  }
  if (amountMsat !== undefined) assertInt(amountMsat, 1, Number.MAX_SAFE_INTEGER, 'amountMsat');
  assertInt(timestamp, 0, 2 ** 35 - 1, 'timestamp');
  if (expirySeconds !== undefined) assertInt(expirySeconds, 1, Number.MAX_SAFE_INTEGER, 'expirySeconds');
  assertInt(minFinalCltvExpiry, 0, Number.MAX_SAFE_INTEGER, 'minFinalCltvExpiry');

  const hrp = `ln${PREFIX[fields.network]}${amountMsat === undefined ? '' : encodeAmount(amountMsat)}`;
  const data = [
    ...intToWords(timestamp, TIMESTAMP_WORDS),
    ...tagged(TAG.p, hash32(fields.paymentHash, 'paymentHash')),
    ...tagged(TAG.s, hash32(fields.paymentSecret, 'paymentSecret')),
    ...(description !== undefined ? tagged(TAG.d, bech32.toWords(utf8ToBytes(description))) : tagged(TAG.h, hash32(descriptionHash!, 'descriptionHash'))),
    ...(expirySeconds !== undefined ? tagged(TAG.x, intToWords(expirySeconds)) : []),
    ...tagged(TAG.c, intToWords(minFinalCltvExpiry)),
    ...tagged(TAG.features, intToWords((1 << 14) | (1 << 8))), // payment_secret, var_onion_optin: required
  ];
  const { signature, recovery } = sign(signingHash(hrp, data), hexToBytes(privateKeyHex));
  if (signature.length !== 64 || !Number.isInteger(recovery) || recovery < 0 || recovery > 3)
    throw new TypeError('the invoice signer must return 64 bytes (r ‖ s) and a recovery id 0-3');
  const sig65 = concatBytes(signature, Uint8Array.of(recovery)); // BOLT 11: r ‖ s ‖ recovery id
  return bech32.encode(hrp, [...data, ...bech32.toWords(sig65)], false);
}
