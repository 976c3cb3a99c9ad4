// The verifier alone, for comparing two versions of it: valid and forged
// tokens through verifyToken, and the same valid tokens through the plain
// @noble implementation of the format (plain-verifier.ts), in one process.
// `npx tsx bench/verifier.ts` prints one JSON line; run it on both trees,
// alternating, and compare the lines.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, checkCaveats, mintToken } from 'l402-paywall';
import { benchTokens } from './token.js';
import { plainKeys, plainVerify } from './plain-verifier.js';

const N = 256;

/** Median of five timed runs after a warm-up. */
function opsPerSecond(fn: (i: number) => boolean, iterations: number): number {
  for (let i = 0; i < 20_000; i++) if (!fn(i)) throw new Error('warm-up result changed');
  const rates: number[] = [];
  for (let run = 0; run < 5; run++) {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) if (!fn(i)) throw new Error('result changed');
    rates.push(iterations / ((performance.now() - start) / 1000));
  }
  return rates.sort((a, b) => a - b)[2]!;
}

/** Verifications per second of valid tokens by the plain @noble implementation. */
export function benchPlainNoble(): number {
  const secret = 'bench-plain-secret-'.padEnd(64, 'x');
  const keyring = new Keyring([secret]);
  const keys = plainKeys([secret]);
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const expect = { route: '/api/demo/btc-price', priceMsat: 1000 };
  const tokens = Array.from({ length: N }, () => {
    const preimage = randomBytes(32);
    const hash = bytesToHex(sha256(preimage));
    return {
      token: mintToken(keyring, { paymentHash: hash, expiresAt, caveats: { route: expect.route, price_msat: 1000 } }),
      preimage: bytesToHex(preimage),
    };
  });
  return opsPerSecond((i) => {
    const t = tokens[i & (N - 1)]!;
    const caveats = plainVerify(keys, t.token, t.preimage, Date.now() / 1000);
    return caveats !== null && checkCaveats(caveats, expect).ok;
  }, 50_000);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const ours = benchTokens();
  const plain = benchPlainNoble();
  console.log(
    JSON.stringify({ valid: Math.round(ours.valid), forged: Math.round(ours.forged), plainNoble: Math.round(plain), ratio: +(ours.valid / plain).toFixed(2) }),
  );
}
