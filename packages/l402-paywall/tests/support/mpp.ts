// Test helpers for the Payment scheme (src/schemes/payment/): a real Lightning charge
// challenge over a real, signed regtest invoice, and the credential a payer
// would send for it.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { encodeInvoice } from 'l402-paywall/lightning';
import {
  BindingKeyring,
  formatChallenge,
  formatCredential,
  lightningChargeChallenge,
  type LightningChargeOptions,
  type PaymentChallenge,
} from '../../src/mpp.js';
import { encodeJson } from '../../src/schemes/payment/wire.js';
import { newPreimage } from './l402.js';

export const MPP_SECRET = 'mpp-unit-test-secret-0123456789abcdef';
export const OTHER_SECRET = 'another-servers-secret-0123456789abcdef';
const NODE_KEY = bytesToHex(randomBytes(32));

/** Unix seconds the fixtures are made at; challenges last ten minutes from then. */
export const ISSUED_AT = 1_900_000_000;
export const LIFETIME_SECONDS = 600;

export interface ChargeFixture {
  ring: BindingKeyring;
  preimage: string;
  paymentHash: string;
  invoice: string;
  challenge: PaymentChallenge;
  /** The WWW-Authenticate value. */
  header: string;
  /** The Authorization value that pays it. */
  credential: string;
}

/** A 21-sat regtest charge for /weather, bound to route and owner, issued at ISSUED_AT under `ring`. */
export function chargeFixture(ring = BindingKeyring.fromSecrets(MPP_SECRET), options: Partial<LightningChargeOptions> = {}): ChargeFixture {
  const { preimage, hash } = newPreimage();
  const invoice = encodeInvoice(
    {
      network: 'regtest',
      amountMsat: 21_000,
      timestamp: ISSUED_AT,
      paymentHash: hash,
      paymentSecret: bytesToHex(randomBytes(32)),
      description: 'Weather for 94107',
      expirySeconds: LIFETIME_SECONDS,
    },
    NODE_KEY,
  );
  const challenge = lightningChargeChallenge(ring, {
    realm: 'api.example.com',
    invoice,
    paymentHash: hash,
    amountSats: 21,
    network: 'regtest',
    description: 'Weather for 94107',
    expires: new Date((ISSUED_AT + LIFETIME_SECONDS) * 1000),
    binding: { route: '/weather', owner: 'alice@example.com' },
    ...options,
  });
  return { ring, preimage, paymentHash: hash, invoice, challenge, header: formatChallenge(challenge), credential: formatCredential(challenge, preimage) };
}

/** The request parameter's JSON. */
export function requestOf(challenge: PaymentChallenge): Record<string, unknown> & { methodDetails: Record<string, unknown> } {
  return JSON.parse(Buffer.from(challenge.request, 'base64url').toString('utf8'));
}

/** The challenge with its request JSON edited and re-encoded as a server would (JCS, base64url), the id left as issued. */
export function withRequest(challenge: PaymentChallenge, edit: (request: ReturnType<typeof requestOf>) => void): PaymentChallenge {
  const request = requestOf(challenge);
  edit(request);
  return { ...challenge, request: encodeJson(request) };
}

/** A credential object encoded as a payer would send it, whatever it holds. */
export function authorizationFor(credential: unknown): string {
  return `Payment ${Buffer.from(JSON.stringify(credential)).toString('base64url')}`;
}

/**
 * Any text, lone surrogates included: what fc.string({ unit: 'binary' }) gives,
 * without the seconds that unit takes to set up on first use.
 */
export const anyText = (constraints: { maxLength?: number } = {}) =>
  fc.string({
    ...constraints,
    unit: fc.oneof(fc.integer({ min: 0, max: 0x7f }), fc.integer({ min: 0x80, max: 0x10ffff })).map((c) => String.fromCodePoint(c)),
  });
