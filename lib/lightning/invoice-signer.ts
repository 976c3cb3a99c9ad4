// How the service's dev node signs its invoices: libsecp256k1, the library
// Bitcoin Core uses, compiled to WebAssembly by tiny-secp256k1. The library's
// default (@noble/curves, pure JS) runs everywhere; the service runs on Node,
// where this signs about three times faster. Both use RFC 6979 nonces, so they
// give the same signature for the same invoice (tests/unit/invoice-signer.test.ts).
import { signRecoverable } from 'tiny-secp256k1';
import type { InvoiceSigner } from 'l402-paywall/lightning';

export const libsecp256k1Signer: InvoiceSigner = (hash, privateKey) => {
  const { signature, recoveryId } = signRecoverable(hash, privateKey);
  return { signature, recovery: recoveryId };
};
