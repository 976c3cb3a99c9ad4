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

type Libsecp256k1 = typeof import('tiny-secp256k1');

/**
 * tiny-secp256k1, loaded on first use (Node's module cache keeps it, so a
 * later call costs a lookup); null, said, when it cannot be loaded here. Asked
 * once per dev node the service builds.
 */
function libsecp256k1(): Libsecp256k1 | null {
  try {
    return createRequire(import.meta.url)('tiny-secp256k1') as Libsecp256k1;
  } catch (error) {
    console.warn('[dev-node] libsecp256k1 could not be loaded; signing invoices in pure JS (slower):', error instanceof Error ? error.message : error);
    return null;
  }
}

/** libsecp256k1's signer; the pure-JS one, said, if it cannot be loaded here. */
export function libsecp256k1Signer(): InvoiceSigner {
  const secp = libsecp256k1();
  return secp
    ? (hash, privateKey) => {
        const { signature, recoveryId } = secp.signRecoverable(hash, privateKey);
        return { signature, recovery: recoveryId };
      }
    : nobleInvoiceSigner;
}

/**
 * The node key's public key (compressed, hex) by libsecp256k1, for
 * createDevNode's `nodeKey` with libsecp256k1Signer(): derived in pure JS
 * instead, the first derivation builds a table for tens of milliseconds.
 * Undefined when libsecp256k1 cannot be loaded (the dev node derives it).
 */
export function libsecp256k1NodeKey(privateKeyHex: string): string | undefined {
  const secp = libsecp256k1();
  if (!secp || !/^[0-9a-fA-F]{64}$/.test(privateKeyHex)) return undefined;
  try {
    const key = secp.pointFromScalar(Buffer.from(privateKeyHex, 'hex'), true);
    return key ? Buffer.from(key).toString('hex') : undefined;
  } catch {
    return undefined; // not a valid key: createDevNode says so
  }
}
