// A verified charge request's terms are read at the text's two ends
// (writtenChargeTerms) where it is as chargeChallenge writes it, and parsed
// (boundChargeTerms) otherwise: on every request chargeChallenge can write,
// descriptions that spell the members' names included, the two agree; on any
// other text the reader at the ends declines and the parse decides.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BindingKeyring } from '../../src/schemes/payment/binding.js';
import { boundChargeTerms, chargeChallenge, writtenChargeTerms, type LightningNetwork } from '../../src/schemes/payment/charge.js';
import { decodeBase64, encodeJson } from '../../src/schemes/payment/wire.js';

const ring = BindingKeyring.fromSecrets('charge-terms-test-secret-0123456789abcdef0123');
const hex64 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Buffer.from(b).toString('hex'));
const invoice = fc.stringMatching(/^[0-9a-z]{20,400}$/).map((rest) => `lnbcrt${rest}`);
const tricky = ['"methodDetails":{"invoice":"lnbc1x"}}', '","currency":"sat",', ',"paymentHash":"', '\\"}}', 'L402 demo: live "BTC" price \u2603', ''];
const description = fc.oneof(fc.constantFrom(...tricky), fc.string({ maxLength: 200 }), fc.string({ unit: 'grapheme', maxLength: 100 }));

function requestBytes(options: {
  amountSats: number;
  description: string | undefined;
  network: LightningNetwork;
  invoice: string;
  paymentHash: string;
}): Uint8Array {
  const challenge = chargeChallenge(ring, { realm: 'terms.example', expires: new Date(Date.now() + 60_000), ...options });
  return decodeBase64(challenge.request)!;
}

describe('writtenChargeTerms', () => {
  it('reads what the parse reads on every request chargeChallenge writes', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 9_007_199_254_740 }),
        fc.option(description, { nil: undefined }),
        fc.constantFrom<LightningNetwork>('mainnet', 'regtest', 'signet'),
        invoice,
        hex64,
        (amountSats, text, network, inv, paymentHash) => {
          const bytes = requestBytes({ amountSats, description: text, network, invoice: inv, paymentHash });
          const read = writtenChargeTerms(bytes);
          expect(read).toBeDefined();
          expect(read).toEqual(boundChargeTerms(JSON.parse(Buffer.from(bytes).toString('utf8'))));
        },
      ),
      { numRuns: 400 },
    );
  });

  it('declines any other text, which the parse then reads or refuses', () => {
    const terms = {
      amount: '21',
      currency: 'sat',
      description: 'x',
      methodDetails: { invoice: 'lnbcrt1abc', network: 'regtest', paymentHash: 'ab'.repeat(32) },
    };
    const bytesOf = (value: unknown) => decodeBase64(encodeJson(value))!;
    const utf8 = (text: string) => new TextEncoder().encode(text);
    for (const bytes of [
      bytesOf({ ...terms, recipient: 'someone' }), // a member after the method details
      bytesOf({ ...terms, methodDetails: { invoice: 'lnbcrt1abc', paymentHash: 'ab'.repeat(32), extra: '1' } }),
      utf8(JSON.stringify(terms, null, 1)), // not as JCS writes it
      utf8(JSON.stringify({ methodDetails: terms.methodDetails, amount: '21', currency: 'sat' })),
      bytesOf({ ...terms, currency: 'usd' }),
      bytesOf({ ...terms, amount: '021' }),
      bytesOf({ ...terms, methodDetails: { ...terms.methodDetails, network: 'testnet' } }),
      bytesOf({ ...terms, methodDetails: { ...terms.methodDetails, paymentHash: 'AB'.repeat(32) } }),
      bytesOf({ ...terms, methodDetails: { ...terms.methodDetails, paymentHash: 'ab'.repeat(31) } }),
      bytesOf({ ...terms, methodDetails: { ...terms.methodDetails, paymentHash: 'ab'.repeat(33) } }),
      Uint8Array.of(0xff, 0xfe),
      new Uint8Array(0),
    ]) {
      expect(writtenChargeTerms(bytes), Buffer.from(bytes).toString()).toBeUndefined();
    }
    // Without a network the ends still read, as the parse does.
    const bare = bytesOf({ ...terms, methodDetails: { invoice: 'lnbcrt1abc', paymentHash: 'ab'.repeat(32) } });
    expect(writtenChargeTerms(bare)).toEqual(boundChargeTerms(JSON.parse(Buffer.from(bare).toString())));
    expect(writtenChargeTerms(bare)).toMatchObject({ amount: '21', network: undefined });
  });
});
