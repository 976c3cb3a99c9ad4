import { readFileSync } from 'node:fs';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, concatBytes, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { bech32 } from '@scure/base';
import fc from 'fast-check';
import { decode as thirdPartyDecode } from 'light-bolt11-decoder';
import { describe, expect, it } from 'vitest';
import { decodeInvoice, encodeInvoice, InvalidInvoice, type DecodedInvoice, type InvoiceFields } from 'l402-paywall/lightning';

// The BOLT #11 test vectors (lightning/bolts, 11-payment-encoding.md), kept as a fixture.
const fixtureUrl = new URL('../fixtures/bolt11-vectors.json', import.meta.url);
interface Vector {
  note: string;
  invoice: string;
}
const vectors = JSON.parse(readFileSync(fixtureUrl, 'utf8')) as {
  signing_private_key: string;
  signing_public_key: string;
  valid: Vector[];
  invalid: Vector[];
};

const KEY = vectors.signing_private_key;
const PUBKEY = '03e7156ae33b0a208d0744199163177e909e80176e55d97a2f221ede0f934dd9ad';
const HASH = '0001020304050607080900010203040506070809000102030405060708090102';
const SECRET = '11'.repeat(32);
const TIMESTAMP = 1496314658;
const CAKE = bytesToHex(
  sha256(
    utf8ToBytes(
      'One piece of chocolate cake, one icecream cone, one pickle, one slice of swiss cheese, one slice of salami, one lollypop, one piece of cherry pie, one sausage, one cupcake, and one slice of watermelon',
    ),
  ),
);
const BECH32 = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';

// Expected values from the BOLT #11 examples section, in the order of the vectors file.
const base = {
  network: 'bitcoin' as const,
  timestamp: TIMESTAMP,
  expirySeconds: 3600,
  paymentHash: HASH,
  paymentSecret: SECRET,
  payeeNodeKey: PUBKEY,
  minFinalCltvExpiry: 18,
  featureBits: [8, 14],
};
const coffeeBeans = { ...base, amountMsat: 2_500_000_000, description: 'coffee beans', featureBits: [8, 14, 99] };
const cake = { ...base, amountMsat: 2_000_000_000, descriptionHash: CAKE };
const donation = { ...base, amountMsat: null, description: 'Please consider supporting this project' };
const expected: [string, Omit<DecodedInvoice, 'expiresAt'>][] = [
  ['no amount, description', donation],
  ['2500u, expiry 60', { ...base, amountMsat: 250_000_000, description: '1 cup coffee', expirySeconds: 60 }],
  ['2500u, UTF-8 description', { ...base, amountMsat: 250_000_000, description: 'ナンセンス 1杯', expirySeconds: 60 }],
  ['20m, hashed description (h)', cake],
  ['testnet, fallback address', { ...cake, network: 'testnet' }],
  ['fallback P2PKH + route hints', cake],
  ['fallback P2SH', cake],
  ['fallback P2WPKH', cake],
  ['fallback P2WSH', cake],
  ['fallback P2TR', cake],
  [
    'pico amount (p), different hash',
    {
      ...base,
      amountMsat: 967_878_534, // 9678785340 pico-BTC
      timestamp: 1572468703,
      expirySeconds: 604800,
      minFinalCltvExpiry: 10,
      paymentHash: '462264ede7e14047e9b249da94fefc47f41f7d02ee9b091815a5506bc8abf75f',
      description:
        'Blockstream Store: 88.85 USD for Blockstream Ledger Nano S x 1, "Back In My Day" Sticker x 2, "I Got Lightning Working" Sticker x 2 and 1 more items',
    },
  ],
  ['feature bits 8,14,99', coffeeBeans],
  ['same as previous, upper case', coffeeBeans],
  ['wrong-length fields must be skipped', coffeeBeans],
  ['metadata field m', { ...base, amountMsat: 1_000_000_000, description: 'payment metadata inside', featureBits: [8, 14, 48] }],
  // Made by replacing s with n - s and keeping the recovery id: normalising s before
  // recovery gives back the vectors' signing key.
  ['high-S signature, recovery', donation],
];

const invalidReasons: Record<string, RegExp> = {
  'unknown even feature bit 100': /unknown feature bit 100/,
  'bad checksum': /not bech32.*checksum/i,
  'no separator': /not bech32.*separator/,
  'mixed case': /not bech32.*mixed-case/,
  'unrecoverable signature': /not recoverable/,
  'too short': /too short/,
  'invalid multiplier': /unknown prefix or amount "lnbc2500x"/,
  'sub-millisatoshi amount': /sub-millisatoshi/,
  'missing payment secret s': /missing payment secret/,
  'high-S signature with n present': /does not match payee key/,
};

function reasonOf(invoice: string): string {
  try {
    decodeInvoice(invoice);
  } catch (e) {
    if (e instanceof InvalidInvoice) return e.reason;
    throw e;
  }
  throw new Error(`accepted: ${invoice}`);
}

// Builds and signs an invoice from raw tagged fields, independently of encodeInvoice,
// to reach the cases encodeInvoice will not write.
function rawInvoice(hrp: string, fields: [type: number, words: number[]][], opts: { highS?: boolean; recovery?: number } = {}): string {
  const ts: number[] = [];
  for (let n = TIMESTAMP, i = 0; i < 7; i++, n = Math.floor(n / 32)) ts.unshift(n % 32);
  const data = [...ts, ...fields.flatMap(([type, w]) => [type, w.length >> 5, w.length & 31, ...w])];
  let sig = secp256k1.Signature.fromBytes(
    secp256k1.sign(sha256(concatBytes(utf8ToBytes(hrp), packWords(data))), hexToBytes(KEY), { prehash: false, format: 'recovered' }),
    'recovered',
  );
  // High-S the way the BOLT 11 vector makes it: s -> n - s, recovery id kept.
  if (opts.highS) sig = new secp256k1.Signature(sig.r, secp256k1.Point.CURVE().n - sig.s, sig.recovery!);
  const sig65 = concatBytes(sig.toBytes('compact'), Uint8Array.of(opts.recovery ?? sig.recovery!));
  return bech32.encode(hrp, [...data, ...bech32.toWords(sig65)], false);
}

// Deliberately naive (via a bit string) so it shares nothing with the module's packing.
function packWords(words: number[]): Uint8Array {
  const bits = words.map((w) => w.toString(2).padStart(5, '0')).join('');
  const padded = bits.padEnd(Math.ceil(bits.length / 8) * 8, '0');
  return Uint8Array.from(padded.match(/.{8}/g) ?? [], (b) => parseInt(b, 2));
}

const words = (hex: string) => bech32.toWords(hexToBytes(hex));
const P = (hex = HASH): [number, number[]] => [1, words(hex)];
const S: [number, number[]] = [16, words(SECRET)];
const D = (text: string): [number, number[]] => [13, bech32.toWords(utf8ToBytes(text))];
const H: [number, number[]] = [23, words(CAKE)];
const N = (key: string): [number, number[]] => [19, words(key)];
const F = (bits: number): [number, number[]] => {
  const w: number[] = [];
  for (let n = bits; n > 0; n = Math.floor(n / 32)) w.unshift(n % 32);
  return [5, w];
};

describe('decodeInvoice: BOLT #11 vectors', () => {
  it('uses a fixture identical to the shared reference', () => {
    expect(vectors.signing_public_key).toBe(PUBKEY);
    expect(bytesToHex(secp256k1.getPublicKey(hexToBytes(KEY)))).toBe(PUBKEY);
    expect(vectors.valid).toHaveLength(16);
    expect(vectors.invalid).toHaveLength(10);
  });

  it.each(vectors.valid.map((v, i) => [v.note, v.invoice, expected[i]!] as const))('valid: %s', (note, invoice, [expectedNote, want]) => {
    expect(note).toBe(expectedNote);
    expect(decodeInvoice(invoice)).toEqual({ ...want, expiresAt: want.timestamp + want.expirySeconds });
  });

  it.each(vectors.invalid.map((v) => [v.note, v.invoice] as const))('invalid: %s', (note, invoice) => {
    expect(() => decodeInvoice(invoice)).toThrow(InvalidInvoice);
    expect(reasonOf(invoice)).toMatch(invalidReasons[note]!);
  });

  it('rejects the high-S vector with n only for its high S: normalised, it verifies against n', () => {
    const invoice = vectors.invalid.find((v) => v.note === 'high-S signature with n present')!.invoice;
    const { prefix, words: w } = bech32.decode(invoice, false);
    const sig = bech32.fromWords(w.slice(-104));
    const s = BigInt('0x' + bytesToHex(sig.subarray(32, 64)));
    const lowS = secp256k1.Point.CURVE().n - s;
    const fixed = concatBytes(sig.subarray(0, 32), hexToBytes(lowS.toString(16).padStart(64, '0')), sig.subarray(64));
    const decoded = decodeInvoice(bech32.encode(prefix, [...w.slice(0, -104), ...bech32.toWords(fixed)], false));
    expect(decoded.payeeNodeKey).toBe(PUBKEY);
    expect(decoded.amountMsat).toBe(2_500_000_000);
  });

  it('agrees with light-bolt11-decoder wherever that decoder accepts a valid vector', () => {
    for (const { note, invoice } of vectors.valid) {
      if (note === 'wrong-length fields must be skipped') continue; // light-bolt11-decoder 3.2.0 throws on it
      const ours = decodeInvoice(invoice);
      const theirs = thirdPartyDecode(invoice);
      const get = (name: string) => (theirs.sections.find((s) => s.name === name) as { value?: unknown } | undefined)?.value;
      expect(get('amount') ?? null).toBe(ours.amountMsat === null ? null : String(ours.amountMsat));
      expect(get('payment_hash')).toBe(ours.paymentHash);
      expect(get('payment_secret')).toBe(ours.paymentSecret);
      expect(get('description')).toBe(ours.description);
      expect(get('description_hash')).toBe(ours.descriptionHash);
      expect(get('timestamp')).toBe(ours.timestamp);
      expect(theirs.expiry ?? 3600).toBe(ours.expirySeconds);
    }
  });
});

describe('decodeInvoice: rules beyond the vectors', () => {
  it('verifies against n when present and reports it as the payee', () => {
    expect(decodeInvoice(rawInvoice('lnbc10u', [P(), S, D('x'), N(PUBKEY)])).payeeNodeKey).toBe(PUBKEY);
    const other = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey()));
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), N(other)]))).toMatch(/payee key/);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), N(PUBKEY)], { highS: true }))).toMatch(/payee key/);
  });

  it('accepts a high-S signature when the key is recovered', () => {
    expect(decodeInvoice(rawInvoice('lnbc10u', [P(), S, D('x')], { highS: true })).payeeNodeKey).toBe(PUBKEY);
  });

  it('requires p and exactly one of d or h', () => {
    expect(reasonOf(rawInvoice('lnbc10u', [S, D('x')]))).toMatch(/payment hash/);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S]))).toMatch(/exactly one/);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), H]))).toMatch(/exactly one/);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), D('y')]))).toMatch(/exactly one/);
  });

  it('uses the first p that is not skipped', () => {
    const other = 'ff'.repeat(32);
    expect(decodeInvoice(rawInvoice('lnbc10u', [[1, words(HASH).slice(1)], P(other), P(), S, D('x')])).paymentHash).toBe(other);
  });

  it('checks feature bits: unknown even bits and missing dependencies fail, odd bits pass', () => {
    expect(decodeInvoice(rawInvoice('lnbc10u', [P(), S, D('x'), F(2 ** 14 + 2 ** 8 + 2 ** 17)])).featureBits).toEqual([8, 14, 17]);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), F(2 ** 14 + 2 ** 8 + 2 ** 20)]))).toMatch(/unknown feature bit 20/);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), F(2 ** 14)]))).toMatch(/dependency 8/);
  });

  it('rejects invalid UTF-8 in d, zero and oversized amounts, and unknown currencies', () => {
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, [13, bech32.toWords(Uint8Array.of(0xff, 0xfe))]]))).toMatch(/UTF-8/);
    expect(reasonOf(rawInvoice('lnbc0u', [P(), S, D('x')]))).toMatch(/zero/);
    expect(reasonOf(rawInvoice('lnbc100000', [P(), S, D('x')]))).toMatch(/too large/); // 1e16 msat > 2^53
    expect(reasonOf(rawInvoice('lnsb10u', [P(), S, D('x')]))).toMatch(/unknown prefix/);
    expect(reasonOf(rawInvoice('lnbc10u', [P(), S, D('x'), [6, Array(12).fill(31)]]))).toMatch(/expiry is too large/);
  });

  it('rejects what is not a string', () => {
    expect(() => decodeInvoice(42 as unknown as string)).toThrow(InvalidInvoice);
  });
});

describe('decodeInvoice with the payee it expects (the cached-table check instead of recovery)', () => {
  const otherKey = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey()));

  it('decodes every valid vector exactly as without it, whether the expected key is right, wrong or not a key', () => {
    for (const { invoice } of vectors.valid) {
      const plain = decodeInvoice(invoice);
      for (const expectedPayee of [PUBKEY, otherKey, '02' + 'ff'.repeat(32), 'not hex']) {
        expect(decodeInvoice(invoice, { expectedPayee })).toEqual(plain);
      }
    }
  });

  it('refuses every invalid vector as without it', () => {
    for (const { invoice } of vectors.invalid) {
      expect(() => decodeInvoice(invoice, { expectedPayee: PUBKEY })).toThrow(InvalidInvoice);
    }
  });

  it('never names the expected key when the recovery id points to another key (the check binds the parity and overflow bits)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.integer({ min: 0, max: 3 }), fc.boolean(), (hash, recovery, highS) => {
        const invoice = rawInvoice('lnbc10u', [P(bytesToHex(hash)), S, D('x')], { recovery, highS });
        const recovered = (() => {
          try {
            return decodeInvoice(invoice).payeeNodeKey;
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidInvoice);
            return 'unrecoverable';
          }
        })();
        const checked = (() => {
          try {
            return decodeInvoice(invoice, { expectedPayee: PUBKEY }).payeeNodeKey;
          } catch (error) {
            expect(error).toBeInstanceOf(InvalidInvoice);
            return 'unrecoverable';
          }
        })();
        expect(checked).toBe(recovered);
      }),
      { numRuns: 200 },
    );
  });

  it('still rejects every one-character change when the right key is expected', () => {
    const invoice = encodeInvoice(
      { network: 'regtest', amountMsat: 1000, timestamp: TIMESTAMP, paymentHash: HASH, paymentSecret: SECRET, description: 'x' },
      KEY,
    );
    for (let i = 'lnbcrt10n1'.length; i < invoice.length; i += 3) {
      const mutated = invoice.slice(0, i) + (invoice[i] === 'q' ? 'p' : 'q') + invoice.slice(i + 1);
      expect(() => decodeInvoice(mutated, { expectedPayee: PUBKEY })).toThrow(InvalidInvoice);
    }
  });
});

describe('encodeInvoice', () => {
  const fields: InvoiceFields = {
    network: 'bitcoin',
    timestamp: TIMESTAMP,
    paymentHash: HASH,
    paymentSecret: SECRET,
    description: '1 cup coffee',
  };

  it.each([
    [1, 'lnbc10p'],
    [1000, 'lnbc10n'],
    [10_000, 'lnbc100n'],
    [1_234_567, 'lnbc12345670p'],
    [250_000_000, 'lnbc2500u'],
    [2_000_000_000, 'lnbc20m'],
    [2_100_000_000_000, 'lnbc21'],
  ])('writes %d msat as the shortest exact amount (%s)', (amountMsat, hrp) => {
    const invoice = encodeInvoice({ ...fields, amountMsat }, KEY);
    expect(invoice.startsWith(`${hrp}1`)).toBe(true);
    expect(decodeInvoice(invoice).amountMsat).toBe(amountMsat);
    expect(thirdPartyDecode(invoice).sections.find((s) => s.name === 'amount')?.value).toBe(String(amountMsat));
  });

  it.each(['bitcoin', 'testnet', 'signet', 'regtest'] as const)('round-trips on %s', (network) => {
    const invoice = encodeInvoice({ ...fields, network, amountMsat: 21_000 }, KEY);
    expect(invoice.startsWith({ bitcoin: 'lnbc', testnet: 'lntb', signet: 'lntbs', regtest: 'lnbcrt' }[network] + '210n1')).toBe(true);
    expect(decodeInvoice(invoice).network).toBe(network);
  });

  it('writes p, s, d or h, x, c and features 8 and 14, with a low-S signature', () => {
    const invoice = encodeInvoice({ ...fields, expirySeconds: 600, minFinalCltvExpiry: 80 }, KEY);
    expect(decodeInvoice(invoice)).toEqual({
      ...base,
      amountMsat: null,
      description: '1 cup coffee',
      expirySeconds: 600,
      expiresAt: TIMESTAMP + 600,
      minFinalCltvExpiry: 80,
    });
    const sig = bech32.fromWords(bech32.decode(invoice, false).words.slice(-104));
    expect(secp256k1.Signature.fromBytes(sig.subarray(0, 64)).hasHighS()).toBe(false);

    const hashed = decodeInvoice(encodeInvoice({ ...fields, description: undefined, descriptionHash: CAKE }, KEY));
    expect(hashed.descriptionHash).toBe(CAKE);
    expect(hashed.description).toBeUndefined();
    expect(hashed.expirySeconds).toBe(3600);
    expect(hashed.minFinalCltvExpiry).toBe(18);
  });

  it('keeps a description byte-exact, leading byte-order mark included', () => {
    const invoice = encodeInvoice({ ...fields, description: '\uFEFFhi' }, KEY);
    expect(decodeInvoice(invoice).description).toBe('\uFEFFhi');
  });

  it('refuses fields it cannot encode', () => {
    expect(() => encodeInvoice({ ...fields, descriptionHash: CAKE }, KEY)).toThrow(TypeError);
    expect(() => encodeInvoice({ ...fields, description: undefined }, KEY)).toThrow(TypeError);
    expect(() => encodeInvoice({ ...fields, amountMsat: 0 }, KEY)).toThrow(RangeError);
    expect(() => encodeInvoice({ ...fields, amountMsat: 1.5 }, KEY)).toThrow(RangeError);
    expect(() => encodeInvoice({ ...fields, paymentHash: 'abcd' }, KEY)).toThrow(TypeError);
    expect(() => encodeInvoice({ ...fields, description: 'x'.repeat(640) }, KEY)).toThrow(RangeError);
  });

  it('round-trips random fields through our decoder and light-bolt11-decoder', () => {
    const hex32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map(bytesToHex);
    fc.assert(
      fc.property(
        fc.record({
          network: fc.constantFrom('bitcoin', 'testnet', 'signet', 'regtest' as const),
          amountMsat: fc.option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { nil: undefined }),
          timestamp: fc.integer({ min: 0, max: 2 ** 35 - 1 }),
          paymentHash: hex32,
          paymentSecret: hex32,
          description: fc.option(fc.string({ unit: 'binary', maxLength: 150 }), { nil: undefined }),
          expirySeconds: fc.option(fc.integer({ min: 1, max: 2 ** 40 }), { nil: undefined }),
          minFinalCltvExpiry: fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
        }),
        fc.uint8Array({ minLength: 32, maxLength: 32 }).filter((k) => secp256k1.utils.isValidSecretKey(k)),
        (f, key) => {
          const input: InvoiceFields = f.description === undefined ? { ...f, descriptionHash: CAKE } : f;
          const invoice = encodeInvoice(input, bytesToHex(key));
          const ours = decodeInvoice(invoice);
          expect(ours.payeeNodeKey).toBe(bytesToHex(secp256k1.getPublicKey(key)));
          expect(ours.amountMsat).toBe(f.amountMsat ?? null);
          expect(ours).toMatchObject({
            network: f.network,
            timestamp: f.timestamp,
            paymentHash: f.paymentHash,
            paymentSecret: f.paymentSecret,
            expirySeconds: f.expirySeconds ?? 3600,
            minFinalCltvExpiry: f.minFinalCltvExpiry ?? 18,
          });
          expect(ours.description).toBe(f.description);

          const theirs = thirdPartyDecode(invoice);
          const get = (name: string) => (theirs.sections.find((s) => s.name === name) as { value?: unknown } | undefined)?.value;
          expect(get('amount')).toBe(f.amountMsat === undefined ? undefined : String(f.amountMsat));
          expect(get('payment_hash')).toBe(f.paymentHash);
          expect(get('timestamp')).toBe(f.timestamp);
          if (f.description !== undefined && !f.description.startsWith('\uFEFF')) expect(get('description')).toBe(f.description);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('decodeInvoice under fuzzing', () => {
  const onlyInvalidInvoice = (input: string) => {
    try {
      decodeInvoice(input);
    } catch (e) {
      if (!(e instanceof InvalidInvoice)) throw e;
    }
  };

  it('throws nothing but InvalidInvoice on random strings', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string(), fc.string({ unit: 'binary' }), fc.stringMatching(/^ln[a-z0-9]{0,12}1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{0,300}$/)),
        onlyInvalidInvoice,
      ),
      { numRuns: 500 },
    );
  });

  it('throws nothing but InvalidInvoice on well-checksummed random data', () => {
    const field = fc.tuple(fc.integer({ min: 0, max: 31 }), fc.array(fc.integer({ min: 0, max: 31 }), { maxLength: 60 }));
    const hrp = fc.constantFrom('lnbc', 'lntb', 'lntbs', 'lnbcrt', 'lnbc10u', 'lnbc0', 'lnbc1p', 'lnbc10p', 'lnbc2500x', 'ln', 'lnbc99999999999999999999');
    fc.assert(
      fc.property(
        hrp,
        fc.array(field, { maxLength: 8 }),
        fc.array(fc.integer({ min: 0, max: 31 }), { minLength: 0, maxLength: 120 }),
        (prefix, fields, tail) => {
          const data = [...fields.flatMap(([t, w]) => [t, w.length >> 5, w.length & 31, ...w]), ...tail];
          onlyInvalidInvoice(bech32.encode(prefix, data, false));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('rejects every one-character change of a valid invoice', () => {
    const valid = [
      ...vectors.valid.map((v) => v.invoice),
      encodeInvoice({ network: 'regtest', amountMsat: 1000, timestamp: TIMESTAMP, paymentHash: HASH, paymentSecret: SECRET, description: 'x' }, KEY),
    ];
    fc.assert(
      fc.property(fc.constantFrom(...valid), fc.nat(), fc.constantFrom(...BECH32, '1'), (invoice, at, replacement) => {
        const i = at % invoice.length;
        const upper = invoice === invoice.toUpperCase();
        const char = upper ? replacement.toUpperCase() : replacement;
        fc.pre(invoice[i] !== char);
        const mutated = invoice.slice(0, i) + char + invoice.slice(i + 1);
        expect(() => decodeInvoice(mutated)).toThrow(InvalidInvoice);
      }),
      { numRuns: 2000 },
    );
  });
});
