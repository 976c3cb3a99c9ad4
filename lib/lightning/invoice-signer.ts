// How the service's dev node signs its invoices: libsecp256k1, the library
// Bitcoin Core uses, compiled to WebAssembly by tiny-secp256k1. The library's
// default (@noble/curves, pure JS) runs everywhere; the service runs on Node,
// where this signs about three times faster. Both use RFC 6979 nonces, so they
// give the same signature for the same invoice (tests/unit/invoice-signer.test.ts).
//
// Loaded when a dev node is built, never at import: compiling the 1.2 MB of
// WebAssembly takes about 20 ms, which no production function (they never run
// the dev node) should pay at a cold start.
import { createRequire } from 'node:module';
import { nobleInvoiceSigner, type InvoiceSigner } from 'l402-paywall/lightning';

let signer: InvoiceSigner | undefined;

/** libsecp256k1's signer; the pure-JS one, said once, if it cannot be loaded here. */
export function libsecp256k1Signer(): InvoiceSigner {
  if (signer) return signer;
  try {
    const { signRecoverable } = createRequire(import.meta.url)('tiny-secp256k1') as typeof import('tiny-secp256k1');
    signer = (hash, privateKey) => {
      const { signature, recoveryId } = signRecoverable(hash, privateKey);
      return { signature, recovery: recoveryId };
    };
  } catch (error) {
    console.warn('[dev-node] libsecp256k1 could not be loaded; signing invoices in pure JS (slower):', error instanceof Error ? error.message : error);
    signer = nobleInvoiceSigner;
  }
  return signer;
}
