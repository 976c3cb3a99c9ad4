// Writes the unrolled SHA-256 compression in packages/l402-paywall/src/crypto/sha256-block.ts
// (the `compress` function) from the short definition below, FIPS 180-4:
//   §4.2.2  K_t: the first 32 bits of the fractional parts of the cube roots of the first 64 primes
//   §6.2.2  for t in 0..63:
//             W_t = M_t (t < 16), else σ1(W_t-2) + W_t-7 + σ0(W_t-15) + W_t-16
//             T1 = h + Σ1(e) + Ch(e,f,g) + K_t + W_t;  T2 = Σ0(a) + Maj(a,b,c)
//             h = g; g = f; f = e; e = d + T1; d = c; c = b; b = a; a = T1 + T2
//           then H_i += a..h.
// Unrolled, the renaming (h = g, g = f, ...) is done by rotating which local
// plays which role instead of moving values: at round t, role r (a = 0 .. h = 7)
// is the local LOCALS[(r - t) mod 8]. The schedule keeps a 16-word window in
// place: W_t overwrites W_t-16 in local w(t mod 16).
//
//   npx tsx scripts/generate-sha256-block.ts          rewrites the file
//   tests/unit/sha256-generator.test.ts               fails if the committed file differs
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SHA256_BLOCK_FILE = fileURLToPath(new URL('../packages/l402-paywall/src/crypto/sha256-block.ts', import.meta.url));

const LOCALS = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];

const rotr = (x: string, n: number) => `((${x} >>> ${n}) | (${x} << ${32 - n}))`;
const Sigma0 = (x: string) => `${rotr(x, 2)} ^ ${rotr(x, 13)} ^ ${rotr(x, 22)}`;
const Sigma1 = (x: string) => `${rotr(x, 6)} ^ ${rotr(x, 11)} ^ ${rotr(x, 25)}`;
const sigma0 = (x: string) => `${rotr(x, 7)} ^ ${rotr(x, 18)} ^ (${x} >>> 3)`;
const sigma1 = (x: string) => `${rotr(x, 17)} ^ ${rotr(x, 19)} ^ (${x} >>> 10)`;
// Ch and Maj in their cheaper equivalent forms: Ch(e,f,g) = g ^ (e & (f ^ g)), Maj(a,b,c) = (a & b) | (c & (a | b)).
const Ch = (e: string, f: string, g: string) => `(${g} ^ (${e} & (${f} ^ ${g})))`;
const Maj = (a: string, b: string, c: string) => `((${a} & ${b}) | (${c} & (${a} | ${b})))`;

/** The first `count` primes. */
function primes(count: number): number[] {
  const found: number[] = [];
  for (let n = 2; found.length < count; n++) if (found.every((p) => n % p !== 0)) found.push(n);
  return found;
}

/** floor(cbrt(n)) for a non-negative BigInt, exactly (Newton's method from above). */
function integerCubeRoot(n: bigint): bigint {
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / 3) + 1);
  for (;;) {
    const next = (2n * x + n / (x * x)) / 3n;
    if (next >= x) break;
    x = next;
  }
  while (x * x * x > n) x--;
  while ((x + 1n) ** 3n <= n) x++;
  return x;
}

/** K_t: frac(cbrt(p)) * 2^32 = cbrt(p * 2^96) mod 2^32, in integers, so no rounding can creep in. */
export function roundConstants(): number[] {
  return primes(64).map((p) => Number(integerCubeRoot(BigInt(p) << 96n) & 0xffffffffn));
}

const hex = (k: number) => `0x${k.toString(16).padStart(8, '0')}`;

/** The statements of `compress` from the first round to the output words. */
export function compressBody(): string[] {
  const K = roundConstants();
  const lines: string[] = [];
  for (let t = 0; t < 64; t++) {
    const role = (r: number) => LOCALS[(((r - t) % 8) + 8) % 8]!;
    const [a, b, c, d, e, f, g, h] = [0, 1, 2, 3, 4, 5, 6, 7].map(role) as [string, string, string, string, string, string, string, string];
    const w = `w${t % 16}`;
    if (t % 16 === 0) lines.push(t === 0 ? '  // rounds 0-15' : `  // rounds ${t}-${t + 15}: w_t = σ1(w_t-2) + w_t-7 + σ0(w_t-15) + w_t-16, in place`);
    if (t >= 16) lines.push(`  ${w} = ((${sigma1(`w${(t + 14) % 16}`)}) + w${(t + 9) % 16} + (${sigma0(`w${(t + 1) % 16}`)}) + ${w}) | 0;`);
    lines.push(`  ${h} = (${h} + (${Sigma1(e)}) + ${Ch(e, f, g)} + ${hex(K[t]!)} + ${w}) | 0;`); // h becomes T1
    lines.push(`  ${d} = (${d} + ${h}) | 0;`); // the new e
    lines.push(`  ${h} = (${h} + (${Sigma0(a)}) + ${Maj(a, b, c)}) | 0;`); // the new a = T1 + T2
  }
  for (const [i, local] of LOCALS.entries()) lines.push(`  out[${i}] = (${local} + state[${i}]!) | 0;`);
  return lines;
}

const FIRST = '  // rounds 0-15';
const LAST = '  out[7] = (h + state[7]!) | 0;';

/** The file with `compress`'s body regenerated. */
export function regenerate(source: string): string {
  const start = source.indexOf(FIRST);
  const end = source.indexOf(LAST);
  if (start < 0 || end < start) throw new Error(`${SHA256_BLOCK_FILE}: cannot find the generated region ("${FIRST}" … "${LAST}")`);
  return source.slice(0, start) + compressBody().join('\n') + source.slice(end + LAST.length);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const before = readFileSync(SHA256_BLOCK_FILE, 'utf8');
  const after = regenerate(before);
  writeFileSync(SHA256_BLOCK_FILE, after);
  console.log(before === after ? 'sha256-block.ts is up to date' : 'sha256-block.ts regenerated');
}
