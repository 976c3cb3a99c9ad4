// The Payment scheme's codecs (the l402-paywall/mpp entry, src/mpp.ts over
// src/schemes/payment/ and the session codec) are meant for the edge (docs/mpp.md): bundled for a
// browser, as edge-safe.test.ts bundles those entries, it must
// resolve without any Node built-in, and it must not drag in the secp256k1
// curve, which verifying a preimage does not need.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCES = fileURLToPath(new URL('../../src/', import.meta.url));

/** Bundles `contents` (resolved from src/) for the browser; esbuild refuses a Node built-in there. */
const bundle = (contents: string) =>
  build({
    stdin: { contents, resolveDir: SOURCES, loader: 'ts' },
    bundle: true,
    write: false,
    metafile: true,
    platform: 'browser',
    format: 'esm',
    logLevel: 'silent',
  });

describe('l402-paywall/mpp bundles for the edge', () => {
  it('with no Node built-in and no elliptic curve', async () => {
    const result = await bundle(`export * from './mpp.js';`);
    expect(result.errors).toEqual([]);
    // What the bundle holds: modules whose code tree-shaking removed entirely are parsed, but hold 0 bytes.
    const [output] = Object.values(result.metafile.outputs);
    const inputs = Object.entries(output!.inputs)
      .filter(([, input]) => input.bytesInOutput > 0)
      .map(([path]) => path);
    expect(inputs.some((path) => path.includes('src/schemes/payment/credential.ts'))).toBe(true);
    expect(inputs.filter((path) => path.startsWith('node:'))).toEqual([]);
    expect(inputs.filter((path) => path.includes('@noble/curves'))).toEqual([]);
  });

  it('and the check would see one', async () => {
    await expect(bundle(`export * from './mpp.js'; export { createHash } from 'node:crypto';`)).rejects.toThrow(/node:crypto/);
  });
});
