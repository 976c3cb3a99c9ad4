// The verifier alone, for comparing two versions of it in one session:
// valid tokens (verifyToken + checkCaveats), forged ones, and the same valid
// tokens through the plain @noble implementation of the format
// (plain-verifier.ts). Each is timed by the wall clock and by the process's
// CPU time: on a machine shared with other work the wall clock measures the
// share of a core the process got, CPU time what the work cost.
// `npx tsx bench/verifier.ts` prints one JSON line; run it on both trees,
// alternating, and compare the lines.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, checkCaveats, mintToken, verifyToken } from 'l402-paywall';
import { plainKeys, plainVerify } from './plain-verifier.js';

const N = 256;
const ROUTE = '/api/demo/btc-price';

interface Rates {
  /** Per wall-clock second. */
  wall: number;
  /** Per CPU second of this process. */
  cpu: number;
}

/** Medians of five timed runs after a warm-up. */
function rates(fn: (i: number) => boolean, iterations: number): Rates {
  for (let i = 0; i < 20_000; i++) if (!fn(i)) throw new Error('warm-up result changed');
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let run = 0; run < 5; run++) {
    const startCpu = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < iterations; i++) if (!fn(i)) throw new Error('result changed');
    const elapsed = performance.now() - start;
    const used = process.cpuUsage(startCpu);
    wall.push(iterations / (elapsed / 1000));
    cpu.push(iterations / ((used.user + used.system) / 1e6));
  }
  const median = (v: number[]) => Math.round(v.sort((a, b) => a - b)[2]!);
  return { wall: median(wall), cpu: median(cpu) };
}

export function benchVerifier(): { valid: Rates; forged: Rates; plainNoble: Rates } {
  const secret = 'bench-verifier-secret-'.padEnd(64, 'x');
  const keyring = new Keyring([secret]);
  const keys = plainKeys([secret]);
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const valid: { token: string; preimage: string }[] = [];
  const forged: { token: string; preimage: string }[] = [];
  for (let i = 0; i < N; i++) {
    const preimageBytes = randomBytes(32);
    const preimage = bytesToHex(preimageBytes);
    const hash = bytesToHex(sha256(preimageBytes));
    valid.push({ token: mintToken(keyring, { paymentHash: hash, expiresAt, caveats: { route: ROUTE, price_msat: 1000 } }), preimage });
    // The client's own preimage and hash, with a made-up signature.
    const fake = { v: 1, kid: keyring.signingKid, hash, exp: expiresAt, caveats: ['price_msat=1000', `route=${ROUTE}`], sig: bytesToHex(randomBytes(32)) };
    forged.push({ token: Buffer.from(JSON.stringify(fake)).toString('base64url'), preimage });
  }
  const expect = { route: ROUTE, priceMsat: 1000 };
  return {
    valid: rates((i) => {
      const t = valid[i & (N - 1)]!;
      const r = verifyToken(keyring, t.token, t.preimage);
      return r.ok && checkCaveats(r.token.caveats, expect).ok;
    }, 400_000),
    forged: rates((i) => {
      const t = forged[i & (N - 1)]!;
      return !verifyToken(keyring, t.token, t.preimage).ok;
    }, 400_000),
    plainNoble: rates((i) => {
      const t = valid[i & (N - 1)]!;
      const caveats = plainVerify(keys, t.token, t.preimage, Date.now() / 1000);
      return caveats !== null && checkCaveats(caveats, expect).ok;
    }, 50_000),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { valid, forged, plainNoble } = benchVerifier();
  console.log(
    JSON.stringify({ valid, forged, plainNoble, ratioCpu: +(valid.cpu / plainNoble.cpu).toFixed(2), ratioWall: +(valid.wall / plainNoble.wall).toFixed(2) }),
  );
}
