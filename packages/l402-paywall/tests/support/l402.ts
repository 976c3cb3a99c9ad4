// Test helpers: a preimage/hash pair and a recording invoice provider for unit
// tests of the paywall alone (end-to-end tests use the embedded dev node).
import { sha256 } from '@noble/hashes/sha2.js';
import { expect } from 'vitest';
import { bytesToHex, hexToBytes, randomBytes } from '@noble/hashes/utils.js';
import type { InvoiceProvider } from 'l402-paywall';
import { ProviderUnavailable, type LightningProvider } from 'l402-paywall/lightning';

export function newPreimage(): { preimage: string; hash: string } {
  const preimage = bytesToHex(randomBytes(32));
  return { preimage, hash: bytesToHex(sha256(hexToBytes(preimage))) };
}

export interface RecordingProvider extends InvoiceProvider {
  /** payment hash -> preimage, as the payer's wallet would learn it. */
  preimages: Map<string, string>;
  requests: { amountMsat: number; memo?: string; expirySeconds?: number }[];
  failing: boolean;
}

export function recordingProvider(): RecordingProvider {
  const provider: RecordingProvider = {
    preimages: new Map(),
    requests: [],
    failing: false,
    async createInvoice(request) {
      if (provider.failing) throw new Error('backend down');
      provider.requests.push(request);
      const { preimage, hash } = newPreimage();
      provider.preimages.set(hash, preimage);
      return { invoice: `lnbcrt-test-${hash.slice(0, 8)}`, paymentHash: hash };
    },
  };
  return provider;
}

/** Pays a 402 answer: returns the Authorization header to retry with. */
export async function payChallenge(response: Response, provider: RecordingProvider): Promise<string> {
  const body = (await response.json()) as { macaroon: string; paymentHash: string };
  const preimage = provider.preimages.get(body.paymentHash);
  if (!preimage) throw new Error('challenge for an unknown invoice');
  return `L402 ${body.macaroon}:${preimage}`;
}

/** A Lightning backend that is down: every call fails with ProviderUnavailable. */
export function unreachableProvider(name = 'down'): LightningProvider {
  const down = () => Promise.reject(new ProviderUnavailable('connection refused (test)'));
  return { name, createInvoice: down, lookupInvoice: down, payInvoice: down, lookupPayment: down, balance: down };
}

/** The error `work` rejects with, checked to be a `type`. */
export async function rejection<T extends Error>(work: Promise<unknown>, type: new (...args: never[]) => T): Promise<T> {
  const error = await work.then(
    () => expect.fail('expected a rejection'),
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(type);
  return error as T;
}

/** Rejects with `type` within `bound` ms (a backend that fails must fail fast, never hang). */
export async function rejectsWithin<T extends Error>(work: Promise<unknown>, type: new (...args: never[]) => T, bound: number): Promise<T> {
  const started = Date.now();
  const error = await rejection(work, type);
  expect(Date.now() - started).toBeLessThan(bound);
  return error;
}

/** The 402 body of the paywall's L402 challenges. */
export interface ChallengeBody {
  error: string;
  code: string;
  macaroon: string;
  invoice: string;
  paymentHash: string;
  priceSats: number;
  expiresAt: string;
}

/**
 * An L402 macaroon (standard base64) with its identifier's payment hash
 * replaced and its signature kept: what a forger who paid another invoice
 * would send. The identifier is the macaroon's first field: version byte,
 * field type, length 66, then uint16 version 0 and the hash (docs/l402-token.md).
 */
export function withPaymentHash(macaroon: string, hash: string): string {
  const bytes = Buffer.from(macaroon, 'base64');
  if (bytes[0] !== 2 || bytes[1] !== 2 || bytes[2] !== 66) throw new Error('not an L402 macaroon without location');
  Buffer.from(hash, 'hex').copy(bytes, 5);
  return bytes.toString('base64');
}

/**
 * An L402 macaroon (standard base64) with its caveats edited and its signature
 * kept: what a client that rewrites a condition would send. The macaroon is
 * read as mintToken writes it (no location; identifier, then each caveat as
 * field 2 with a one-byte length; docs/l402-token.md).
 */
export function withCaveats(macaroon: string, edit: (caveats: string[]) => string[]): string {
  const bytes = Buffer.from(macaroon, 'base64');
  const caveats: string[] = [];
  let at = 70;
  while (bytes[at] !== 0) {
    const length = bytes[at + 1]!;
    caveats.push(bytes.subarray(at + 2, at + 2 + length).toString('latin1'));
    at += 3 + length;
  }
  const sections = edit(caveats).map((c) => Buffer.concat([Buffer.from([2, c.length]), Buffer.from(c, 'latin1'), Buffer.from([0])]));
  return Buffer.concat([bytes.subarray(0, 70), ...sections, bytes.subarray(at)]).toString('base64');
}
