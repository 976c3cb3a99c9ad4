// The service's dev node signs invoices with libsecp256k1 (WebAssembly) instead
// of the library's pure-JS default. Both use RFC 6979 nonces, so for the same
// key and hash they must give the same bytes; and the dev node refuses, at
// construction, a signer that would make its invoices unpayable.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { decode as thirdPartyDecode } from 'light-bolt11-decoder';
import { describe, expect, it } from 'vitest';
import { createDevNode, type InvoiceSigner } from 'l402-paywall/backends';
import { decodeInvoice, encodeInvoice, nobleInvoiceSigner } from 'l402-paywall/lightning';
import { libsecp256k1NodeKey, libsecp256k1Signer } from '../../lib/lightning/invoice-signer.js';
import { createMemoryStore } from '../../lib/store/memory.js';

const invoiceFields = () => ({
  network: 'regtest' as const,
  amountMsat: 21_000,
  timestamp: 1_700_000_000,
  paymentHash: bytesToHex(randomBytes(32)),
  paymentSecret: bytesToHex(randomBytes(32)),
  description: 'L402 /api/demo/btc-price',
  expirySeconds: 3600,
});

const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
// A valid secret key: 1 <= d < n.
const secretKey = bytes32.filter((d) => secp256k1.utils.isValidSecretKey(d));

describe('libsecp256k1 invoice signer', () => {
  it('is libsecp256k1 here, not the pure-JS fallback', () => {
    expect(libsecp256k1Signer()).not.toBe(nobleInvoiceSigner);
  });

  it('gives the same signature and recovery id as the pure-JS signer, for any key and hash', () => {
    fc.assert(
      fc.property(secretKey, bytes32, (key, hash) => {
        const ours = libsecp256k1Signer()(hash, key);
        const reference = nobleInvoiceSigner(hash, key);
        expect(bytesToHex(ours.signature)).toBe(bytesToHex(reference.signature));
        expect(ours.recovery).toBe(reference.recovery);
      }),
      { numRuns: 300 },
    );
  });

  it('signs the same invoice string as the default, which decoders read with the node as payee', () => {
    const key = bytesToHex(randomBytes(32));
    const fields = invoiceFields();
    const invoice = encodeInvoice(fields, key, libsecp256k1Signer());
    expect(invoice).toBe(encodeInvoice(fields, key));
    const payee = bytesToHex(secp256k1.getPublicKey(Buffer.from(key, 'hex'), true));
    expect(decodeInvoice(invoice)).toMatchObject({ payeeNodeKey: payee, amountMsat: 21_000, paymentHash: fields.paymentHash });
    const sections = thirdPartyDecode(invoice).sections;
    expect(sections.find((s) => s.name === 'payment_hash')?.value).toBe(fields.paymentHash);
  });

  it("the service's dev node issues invoices its own wallet settles", async () => {
    const node = createDevNode({ store: createMemoryStore(), signInvoice: libsecp256k1Signer() });
    const created = await node.createInvoice({ amountMsat: 5_000, memo: 'signed by libsecp256k1' });
    expect(decodeInvoice(created.invoice).payeeNodeKey).toBe(node.nodeKey);
    expect(await node.pay(created.invoice)).toMatchObject({ paymentHash: created.paymentHash, amountMsat: 5_000 });
  });
});

describe('createDevNode refuses a signer that would make invoices unpayable', () => {
  const privateKey = bytesToHex(randomBytes(32));
  const otherKey = randomBytes(32);
  const n = secp256k1.Point.Fn.ORDER;
  const wrong: Record<string, InvoiceSigner> = {
    'signs with another key': (hash) => nobleInvoiceSigner(hash, otherKey),
    'gives the other recovery id': (hash, key) => {
      const { signature, recovery } = nobleInvoiceSigner(hash, key);
      return { signature, recovery: recovery ^ 1 };
    },
    'gives a high-S signature': (hash, key) => {
      const { signature, recovery } = nobleInvoiceSigner(hash, key);
      const sig = secp256k1.Signature.fromBytes(signature, 'compact');
      return { signature: new secp256k1.Signature(sig.r, n - sig.s).toBytes('compact'), recovery: recovery ^ 1 };
    },
    'returns 65 bytes': (hash, key) => {
      const { signature, recovery } = nobleInvoiceSigner(hash, key);
      return { signature: Uint8Array.of(...signature, recovery), recovery };
    },
    'gives a recovery id out of range': (hash, key) => ({ signature: nobleInvoiceSigner(hash, key).signature, recovery: 7 }),
    throws: () => {
      throw new Error('no signer here');
    },
  };
  for (const [name, signInvoice] of Object.entries(wrong)) {
    it(`one that ${name}`, () => {
      expect(() => createDevNode({ privateKey, signInvoice })).toThrow(/signInvoice must return a low-S ECDSA signature/);
    });
  }

  it('and takes one that signs right', () => {
    expect(createDevNode({ privateKey, signInvoice: libsecp256k1Signer() }).nodeKey).toMatch(/^0[23][0-9a-f]{64}$/);
  });
});

describe("the dev node's public key from libsecp256k1 (nodeKey: no pure-JS table at a cold start)", () => {
  it('is the key @noble/curves derives, for any key', () => {
    fc.assert(
      fc.property(secretKey, (key) => {
        expect(libsecp256k1NodeKey(bytesToHex(key))).toBe(bytesToHex(secp256k1.getPublicKey(key, true)));
      }),
      { numRuns: 100 },
    );
  });

  it('is undefined for what is not a private key (createDevNode then says what is wrong)', () => {
    expect(libsecp256k1NodeKey('00'.repeat(32))).toBeUndefined();
    expect(libsecp256k1NodeKey('zz')).toBeUndefined();
  });

  it('makes the same dev node as deriving it', async () => {
    const privateKey = bytesToHex(randomBytes(32));
    const derived = createDevNode({ privateKey, signInvoice: libsecp256k1Signer() });
    const given = createDevNode({ store: createMemoryStore(), privateKey, signInvoice: libsecp256k1Signer(), nodeKey: libsecp256k1NodeKey(privateKey) });
    expect(given.nodeKey).toBe(derived.nodeKey);
    const created = await given.createInvoice({ amountMsat: 1_000, memo: 'key given' });
    expect(decodeInvoice(created.invoice).payeeNodeKey).toBe(given.nodeKey);
    expect(await given.pay(created.invoice)).toMatchObject({ paymentHash: created.paymentHash });
  });

  it('is checked: another key, a malformed one, or one without signInvoice is refused', () => {
    const privateKey = bytesToHex(randomBytes(32));
    const another = libsecp256k1NodeKey(bytesToHex(randomBytes(32)))!;
    expect(() => createDevNode({ privateKey, signInvoice: libsecp256k1Signer(), nodeKey: another })).toThrow(/nodeKey, when given, must be its public key/);
    expect(() => createDevNode({ privateKey, signInvoice: libsecp256k1Signer(), nodeKey: 'abc' })).toThrow(/nodeKey must be 33 bytes/);
    expect(() => createDevNode({ privateKey, nodeKey: libsecp256k1NodeKey(privateKey) })).toThrow(/given with signInvoice/);
  });
});

describe('encodeInvoice checks what a signer returns', () => {
  const fields = invoiceFields();
  const key = bytesToHex(randomBytes(32));
  it('refuses a signature that is not 64 bytes or a recovery id outside 0-3', () => {
    const good = nobleInvoiceSigner;
    const shapes: InvoiceSigner[] = [
      (hash, k) => ({ ...good(hash, k), signature: good(hash, k).signature.subarray(0, 63) }),
      (hash, k) => ({ ...good(hash, k), recovery: 4 }),
      (hash, k) => ({ ...good(hash, k), recovery: 0.5 }),
    ];
    for (const sign of shapes) expect(() => encodeInvoice(fields, key, sign)).toThrow(/must return 64 bytes/);
    expect(decodeInvoice(encodeInvoice(fields, key, good)).paymentHash).toBe(fields.paymentHash);
  });
});
