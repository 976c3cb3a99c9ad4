// Token verifier throughput on one core: valid and forged tokens side by side.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, checkCaveats, mintToken, verifyToken } from 'l402-paywall';

/** Median of five timed runs after a warm-up: one noisy neighbour moves one run, not the answer. */
/** Median of five timed runs after `warmUp` calls; `fn` answers true each time or the bench stops (a changed result). */
export function opsPerSecond(fn: (i: number) => boolean, iterations: number, warmUp = 50_000): number {
  for (let i = 0; i < warmUp; i++) if (!fn(i)) throw new Error('warm-up result changed');
  const rates: number[] = [];
  for (let run = 0; run < 5; run++) {
    const start = performance.now();
    for (let i = 0; i < iterations; i++) if (!fn(i)) throw new Error('result changed');
    rates.push(iterations / ((performance.now() - start) / 1000));
  }
  return rates.sort((a, b) => a - b)[2]!;
}

export function benchTokens(): { valid: number; forged: number } {
  const keyring = new Keyring(['bench-secret-'.padEnd(64, 'x')]);
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const caveats = { route: '/api/demo/btc-price', price_msat: 1000 };
  const N = 256;
  const valid: { token: string; preimage: string }[] = [];
  const forged: { token: string; preimage: string }[] = [];
  for (let i = 0; i < N; i++) {
    const preimageBytes = randomBytes(32);
    const preimage = bytesToHex(preimageBytes);
    const hash = bytesToHex(sha256(preimageBytes));
    valid.push({ token: mintToken(keyring, { paymentHash: hash, expiresAt, caveats }), preimage });
    // The client's own preimage and hash, with a made-up signature.
    const fake = {
      v: 1,
      kid: keyring.signingKid,
      hash,
      exp: expiresAt,
      caveats: ['price_msat=1000', 'route=/api/demo/btc-price'],
      sig: bytesToHex(randomBytes(32)),
    };
    forged.push({ token: Buffer.from(JSON.stringify(fake)).toString('base64url'), preimage });
  }
  const expect = { route: '/api/demo/btc-price', priceMsat: 1000 };
  const validOps = opsPerSecond((i) => {
    const t = valid[i & (N - 1)]!;
    const r = verifyToken(keyring, t.token, t.preimage);
    return r.ok && checkCaveats(r.token.caveats, expect).ok;
  }, 400_000);
  const forgedOps = opsPerSecond((i) => {
    const t = forged[i & (N - 1)]!;
    return !verifyToken(keyring, t.token, t.preimage).ok;
  }, 400_000);
  return { valid: validOps, forged: forgedOps };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(benchTokens());
