// SHA-256 and HMAC-SHA256 of short fixed-size inputs for the token hot path.
// A verification hashes three blocks (HMAC inner, HMAC outer, preimage), and
// the compression is most of its time. noble's streaming API spends as long on
// buffering, padding and cloning as on the compression, so the final block is
// laid out once per call (FIPS 180-4 §5.1.1) and compressed from a cached
// state. The compression is our own (noble's reads the block through a DataView
// and loops over the rounds with its state on an object): unrolled, on locals,
// allocating nothing. Callers on the hot path hand over big-endian words
// (padBlock, sha256Block, ShortHmac.macBlock) so no byte array sits between hex
// and the hash; the HMAC inner digest is written straight into the outer block.
// Checked against the published test vectors (FIPS 180-2 examples, RFC 4231)
// and against @noble/hashes in the package's tests/sha256-block.test.ts.
// The same compression serves the cold paths too (sha256, hmacSha256: key
// derivation, issuing), so the edge-safe core carries one SHA-256, not two.
import { wordsBytes } from './encoding.js';

// FIPS 180-4 §5.3.3.
const INITIAL = Int32Array.of(0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19);

/**
 * Compresses `block` (16 big-endian words) onto `state` (eight chaining words),
 * writing the eight result words to out[0..7] (which may be another block).
 * FIPS 180-4 §6.2.2, unrolled: its body, from "rounds 0-15" to out[7], is written by
 * scripts/generate-sha256-block.ts from the definition there (a test fails if
 * it differs; edit the generator, not the rounds): 64 rounds with the round constants
 * K_t of §4.2.2 inline, the 16-word schedule window in locals updated in place,
 * and the variable names rotating instead of the values. Each round is
 *   T1 = h + Σ1(e) + Ch(e,f,g) + K_t + W_t;  d += T1;  h = T1 + Σ0(a) + Maj(a,b,c)
 * Measured about a third faster than the same rounds as a loop; Σ, σ, Ch and
 * Maj are written out because as helper functions V8 stops inlining them
 * (five times slower).
 */
function compress(state: Int32Array, block: Int32Array, out: Int32Array): void {
  let w0 = block[0]!, w1 = block[1]!, w2 = block[2]!, w3 = block[3]!, w4 = block[4]!, w5 = block[5]!, w6 = block[6]!, w7 = block[7]!;
  let w8 = block[8]!, w9 = block[9]!, w10 = block[10]!, w11 = block[11]!, w12 = block[12]!, w13 = block[13]!, w14 = block[14]!, w15 = block[15]!;
  let a = state[0]!, b = state[1]!, c = state[2]!, d = state[3]!;
  let e = state[4]!, f = state[5]!, g = state[6]!, h = state[7]!;
  // rounds 0-15
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0x428a2f98 + w0) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0x71374491 + w1) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0xb5c0fbcf + w2) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0xe9b5dba5 + w3) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0x3956c25b + w4) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0x59f111f1 + w5) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0x923f82a4 + w6) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0xab1c5ed5 + w7) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0xd807aa98 + w8) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0x12835b01 + w9) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0x243185be + w10) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0x550c7dc3 + w11) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0x72be5d74 + w12) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0x80deb1fe + w13) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0x9bdc06a7 + w14) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0xc19bf174 + w15) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  // rounds 16-31: w_t = σ1(w_t-2) + w_t-7 + σ0(w_t-15) + w_t-16, in place
  w0 = ((((w14 >>> 17) | (w14 << 15)) ^ ((w14 >>> 19) | (w14 << 13)) ^ (w14 >>> 10)) + w9 + (((w1 >>> 7) | (w1 << 25)) ^ ((w1 >>> 18) | (w1 << 14)) ^ (w1 >>> 3)) + w0) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0xe49b69c1 + w0) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  w1 = ((((w15 >>> 17) | (w15 << 15)) ^ ((w15 >>> 19) | (w15 << 13)) ^ (w15 >>> 10)) + w10 + (((w2 >>> 7) | (w2 << 25)) ^ ((w2 >>> 18) | (w2 << 14)) ^ (w2 >>> 3)) + w1) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0xefbe4786 + w1) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  w2 = ((((w0 >>> 17) | (w0 << 15)) ^ ((w0 >>> 19) | (w0 << 13)) ^ (w0 >>> 10)) + w11 + (((w3 >>> 7) | (w3 << 25)) ^ ((w3 >>> 18) | (w3 << 14)) ^ (w3 >>> 3)) + w2) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0x0fc19dc6 + w2) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  w3 = ((((w1 >>> 17) | (w1 << 15)) ^ ((w1 >>> 19) | (w1 << 13)) ^ (w1 >>> 10)) + w12 + (((w4 >>> 7) | (w4 << 25)) ^ ((w4 >>> 18) | (w4 << 14)) ^ (w4 >>> 3)) + w3) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0x240ca1cc + w3) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  w4 = ((((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)) + w13 + (((w5 >>> 7) | (w5 << 25)) ^ ((w5 >>> 18) | (w5 << 14)) ^ (w5 >>> 3)) + w4) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0x2de92c6f + w4) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  w5 = ((((w3 >>> 17) | (w3 << 15)) ^ ((w3 >>> 19) | (w3 << 13)) ^ (w3 >>> 10)) + w14 + (((w6 >>> 7) | (w6 << 25)) ^ ((w6 >>> 18) | (w6 << 14)) ^ (w6 >>> 3)) + w5) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0x4a7484aa + w5) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  w6 = ((((w4 >>> 17) | (w4 << 15)) ^ ((w4 >>> 19) | (w4 << 13)) ^ (w4 >>> 10)) + w15 + (((w7 >>> 7) | (w7 << 25)) ^ ((w7 >>> 18) | (w7 << 14)) ^ (w7 >>> 3)) + w6) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0x5cb0a9dc + w6) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  w7 = ((((w5 >>> 17) | (w5 << 15)) ^ ((w5 >>> 19) | (w5 << 13)) ^ (w5 >>> 10)) + w0 + (((w8 >>> 7) | (w8 << 25)) ^ ((w8 >>> 18) | (w8 << 14)) ^ (w8 >>> 3)) + w7) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0x76f988da + w7) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  w8 = ((((w6 >>> 17) | (w6 << 15)) ^ ((w6 >>> 19) | (w6 << 13)) ^ (w6 >>> 10)) + w1 + (((w9 >>> 7) | (w9 << 25)) ^ ((w9 >>> 18) | (w9 << 14)) ^ (w9 >>> 3)) + w8) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0x983e5152 + w8) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  w9 = ((((w7 >>> 17) | (w7 << 15)) ^ ((w7 >>> 19) | (w7 << 13)) ^ (w7 >>> 10)) + w2 + (((w10 >>> 7) | (w10 << 25)) ^ ((w10 >>> 18) | (w10 << 14)) ^ (w10 >>> 3)) + w9) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0xa831c66d + w9) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  w10 = ((((w8 >>> 17) | (w8 << 15)) ^ ((w8 >>> 19) | (w8 << 13)) ^ (w8 >>> 10)) + w3 + (((w11 >>> 7) | (w11 << 25)) ^ ((w11 >>> 18) | (w11 << 14)) ^ (w11 >>> 3)) + w10) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0xb00327c8 + w10) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  w11 = ((((w9 >>> 17) | (w9 << 15)) ^ ((w9 >>> 19) | (w9 << 13)) ^ (w9 >>> 10)) + w4 + (((w12 >>> 7) | (w12 << 25)) ^ ((w12 >>> 18) | (w12 << 14)) ^ (w12 >>> 3)) + w11) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0xbf597fc7 + w11) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  w12 = ((((w10 >>> 17) | (w10 << 15)) ^ ((w10 >>> 19) | (w10 << 13)) ^ (w10 >>> 10)) + w5 + (((w13 >>> 7) | (w13 << 25)) ^ ((w13 >>> 18) | (w13 << 14)) ^ (w13 >>> 3)) + w12) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0xc6e00bf3 + w12) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  w13 = ((((w11 >>> 17) | (w11 << 15)) ^ ((w11 >>> 19) | (w11 << 13)) ^ (w11 >>> 10)) + w6 + (((w14 >>> 7) | (w14 << 25)) ^ ((w14 >>> 18) | (w14 << 14)) ^ (w14 >>> 3)) + w13) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0xd5a79147 + w13) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  w14 = ((((w12 >>> 17) | (w12 << 15)) ^ ((w12 >>> 19) | (w12 << 13)) ^ (w12 >>> 10)) + w7 + (((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)) + w14) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0x06ca6351 + w14) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  w15 = ((((w13 >>> 17) | (w13 << 15)) ^ ((w13 >>> 19) | (w13 << 13)) ^ (w13 >>> 10)) + w8 + (((w0 >>> 7) | (w0 << 25)) ^ ((w0 >>> 18) | (w0 << 14)) ^ (w0 >>> 3)) + w15) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0x14292967 + w15) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  // rounds 32-47: w_t = σ1(w_t-2) + w_t-7 + σ0(w_t-15) + w_t-16, in place
  w0 = ((((w14 >>> 17) | (w14 << 15)) ^ ((w14 >>> 19) | (w14 << 13)) ^ (w14 >>> 10)) + w9 + (((w1 >>> 7) | (w1 << 25)) ^ ((w1 >>> 18) | (w1 << 14)) ^ (w1 >>> 3)) + w0) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0x27b70a85 + w0) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  w1 = ((((w15 >>> 17) | (w15 << 15)) ^ ((w15 >>> 19) | (w15 << 13)) ^ (w15 >>> 10)) + w10 + (((w2 >>> 7) | (w2 << 25)) ^ ((w2 >>> 18) | (w2 << 14)) ^ (w2 >>> 3)) + w1) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0x2e1b2138 + w1) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  w2 = ((((w0 >>> 17) | (w0 << 15)) ^ ((w0 >>> 19) | (w0 << 13)) ^ (w0 >>> 10)) + w11 + (((w3 >>> 7) | (w3 << 25)) ^ ((w3 >>> 18) | (w3 << 14)) ^ (w3 >>> 3)) + w2) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0x4d2c6dfc + w2) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  w3 = ((((w1 >>> 17) | (w1 << 15)) ^ ((w1 >>> 19) | (w1 << 13)) ^ (w1 >>> 10)) + w12 + (((w4 >>> 7) | (w4 << 25)) ^ ((w4 >>> 18) | (w4 << 14)) ^ (w4 >>> 3)) + w3) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0x53380d13 + w3) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  w4 = ((((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)) + w13 + (((w5 >>> 7) | (w5 << 25)) ^ ((w5 >>> 18) | (w5 << 14)) ^ (w5 >>> 3)) + w4) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0x650a7354 + w4) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  w5 = ((((w3 >>> 17) | (w3 << 15)) ^ ((w3 >>> 19) | (w3 << 13)) ^ (w3 >>> 10)) + w14 + (((w6 >>> 7) | (w6 << 25)) ^ ((w6 >>> 18) | (w6 << 14)) ^ (w6 >>> 3)) + w5) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0x766a0abb + w5) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  w6 = ((((w4 >>> 17) | (w4 << 15)) ^ ((w4 >>> 19) | (w4 << 13)) ^ (w4 >>> 10)) + w15 + (((w7 >>> 7) | (w7 << 25)) ^ ((w7 >>> 18) | (w7 << 14)) ^ (w7 >>> 3)) + w6) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0x81c2c92e + w6) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  w7 = ((((w5 >>> 17) | (w5 << 15)) ^ ((w5 >>> 19) | (w5 << 13)) ^ (w5 >>> 10)) + w0 + (((w8 >>> 7) | (w8 << 25)) ^ ((w8 >>> 18) | (w8 << 14)) ^ (w8 >>> 3)) + w7) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0x92722c85 + w7) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  w8 = ((((w6 >>> 17) | (w6 << 15)) ^ ((w6 >>> 19) | (w6 << 13)) ^ (w6 >>> 10)) + w1 + (((w9 >>> 7) | (w9 << 25)) ^ ((w9 >>> 18) | (w9 << 14)) ^ (w9 >>> 3)) + w8) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0xa2bfe8a1 + w8) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  w9 = ((((w7 >>> 17) | (w7 << 15)) ^ ((w7 >>> 19) | (w7 << 13)) ^ (w7 >>> 10)) + w2 + (((w10 >>> 7) | (w10 << 25)) ^ ((w10 >>> 18) | (w10 << 14)) ^ (w10 >>> 3)) + w9) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0xa81a664b + w9) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  w10 = ((((w8 >>> 17) | (w8 << 15)) ^ ((w8 >>> 19) | (w8 << 13)) ^ (w8 >>> 10)) + w3 + (((w11 >>> 7) | (w11 << 25)) ^ ((w11 >>> 18) | (w11 << 14)) ^ (w11 >>> 3)) + w10) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0xc24b8b70 + w10) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  w11 = ((((w9 >>> 17) | (w9 << 15)) ^ ((w9 >>> 19) | (w9 << 13)) ^ (w9 >>> 10)) + w4 + (((w12 >>> 7) | (w12 << 25)) ^ ((w12 >>> 18) | (w12 << 14)) ^ (w12 >>> 3)) + w11) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0xc76c51a3 + w11) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  w12 = ((((w10 >>> 17) | (w10 << 15)) ^ ((w10 >>> 19) | (w10 << 13)) ^ (w10 >>> 10)) + w5 + (((w13 >>> 7) | (w13 << 25)) ^ ((w13 >>> 18) | (w13 << 14)) ^ (w13 >>> 3)) + w12) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0xd192e819 + w12) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  w13 = ((((w11 >>> 17) | (w11 << 15)) ^ ((w11 >>> 19) | (w11 << 13)) ^ (w11 >>> 10)) + w6 + (((w14 >>> 7) | (w14 << 25)) ^ ((w14 >>> 18) | (w14 << 14)) ^ (w14 >>> 3)) + w13) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0xd6990624 + w13) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  w14 = ((((w12 >>> 17) | (w12 << 15)) ^ ((w12 >>> 19) | (w12 << 13)) ^ (w12 >>> 10)) + w7 + (((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)) + w14) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0xf40e3585 + w14) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  w15 = ((((w13 >>> 17) | (w13 << 15)) ^ ((w13 >>> 19) | (w13 << 13)) ^ (w13 >>> 10)) + w8 + (((w0 >>> 7) | (w0 << 25)) ^ ((w0 >>> 18) | (w0 << 14)) ^ (w0 >>> 3)) + w15) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0x106aa070 + w15) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  // rounds 48-63: w_t = σ1(w_t-2) + w_t-7 + σ0(w_t-15) + w_t-16, in place
  w0 = ((((w14 >>> 17) | (w14 << 15)) ^ ((w14 >>> 19) | (w14 << 13)) ^ (w14 >>> 10)) + w9 + (((w1 >>> 7) | (w1 << 25)) ^ ((w1 >>> 18) | (w1 << 14)) ^ (w1 >>> 3)) + w0) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0x19a4c116 + w0) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  w1 = ((((w15 >>> 17) | (w15 << 15)) ^ ((w15 >>> 19) | (w15 << 13)) ^ (w15 >>> 10)) + w10 + (((w2 >>> 7) | (w2 << 25)) ^ ((w2 >>> 18) | (w2 << 14)) ^ (w2 >>> 3)) + w1) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0x1e376c08 + w1) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  w2 = ((((w0 >>> 17) | (w0 << 15)) ^ ((w0 >>> 19) | (w0 << 13)) ^ (w0 >>> 10)) + w11 + (((w3 >>> 7) | (w3 << 25)) ^ ((w3 >>> 18) | (w3 << 14)) ^ (w3 >>> 3)) + w2) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0x2748774c + w2) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  w3 = ((((w1 >>> 17) | (w1 << 15)) ^ ((w1 >>> 19) | (w1 << 13)) ^ (w1 >>> 10)) + w12 + (((w4 >>> 7) | (w4 << 25)) ^ ((w4 >>> 18) | (w4 << 14)) ^ (w4 >>> 3)) + w3) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0x34b0bcb5 + w3) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  w4 = ((((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)) + w13 + (((w5 >>> 7) | (w5 << 25)) ^ ((w5 >>> 18) | (w5 << 14)) ^ (w5 >>> 3)) + w4) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0x391c0cb3 + w4) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  w5 = ((((w3 >>> 17) | (w3 << 15)) ^ ((w3 >>> 19) | (w3 << 13)) ^ (w3 >>> 10)) + w14 + (((w6 >>> 7) | (w6 << 25)) ^ ((w6 >>> 18) | (w6 << 14)) ^ (w6 >>> 3)) + w5) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0x4ed8aa4a + w5) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  w6 = ((((w4 >>> 17) | (w4 << 15)) ^ ((w4 >>> 19) | (w4 << 13)) ^ (w4 >>> 10)) + w15 + (((w7 >>> 7) | (w7 << 25)) ^ ((w7 >>> 18) | (w7 << 14)) ^ (w7 >>> 3)) + w6) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0x5b9cca4f + w6) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  w7 = ((((w5 >>> 17) | (w5 << 15)) ^ ((w5 >>> 19) | (w5 << 13)) ^ (w5 >>> 10)) + w0 + (((w8 >>> 7) | (w8 << 25)) ^ ((w8 >>> 18) | (w8 << 14)) ^ (w8 >>> 3)) + w7) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0x682e6ff3 + w7) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  w8 = ((((w6 >>> 17) | (w6 << 15)) ^ ((w6 >>> 19) | (w6 << 13)) ^ (w6 >>> 10)) + w1 + (((w9 >>> 7) | (w9 << 25)) ^ ((w9 >>> 18) | (w9 << 14)) ^ (w9 >>> 3)) + w8) | 0;
  h = (h + (((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))) + (g ^ (e & (f ^ g))) + 0x748f82ee + w8) | 0;
  d = (d + h) | 0;
  h = (h + (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))) + ((a & b) | (c & (a | b)))) | 0;
  w9 = ((((w7 >>> 17) | (w7 << 15)) ^ ((w7 >>> 19) | (w7 << 13)) ^ (w7 >>> 10)) + w2 + (((w10 >>> 7) | (w10 << 25)) ^ ((w10 >>> 18) | (w10 << 14)) ^ (w10 >>> 3)) + w9) | 0;
  g = (g + (((d >>> 6) | (d << 26)) ^ ((d >>> 11) | (d << 21)) ^ ((d >>> 25) | (d << 7))) + (f ^ (d & (e ^ f))) + 0x78a5636f + w9) | 0;
  c = (c + g) | 0;
  g = (g + (((h >>> 2) | (h << 30)) ^ ((h >>> 13) | (h << 19)) ^ ((h >>> 22) | (h << 10))) + ((h & a) | (b & (h | a)))) | 0;
  w10 = ((((w8 >>> 17) | (w8 << 15)) ^ ((w8 >>> 19) | (w8 << 13)) ^ (w8 >>> 10)) + w3 + (((w11 >>> 7) | (w11 << 25)) ^ ((w11 >>> 18) | (w11 << 14)) ^ (w11 >>> 3)) + w10) | 0;
  f = (f + (((c >>> 6) | (c << 26)) ^ ((c >>> 11) | (c << 21)) ^ ((c >>> 25) | (c << 7))) + (e ^ (c & (d ^ e))) + 0x84c87814 + w10) | 0;
  b = (b + f) | 0;
  f = (f + (((g >>> 2) | (g << 30)) ^ ((g >>> 13) | (g << 19)) ^ ((g >>> 22) | (g << 10))) + ((g & h) | (a & (g | h)))) | 0;
  w11 = ((((w9 >>> 17) | (w9 << 15)) ^ ((w9 >>> 19) | (w9 << 13)) ^ (w9 >>> 10)) + w4 + (((w12 >>> 7) | (w12 << 25)) ^ ((w12 >>> 18) | (w12 << 14)) ^ (w12 >>> 3)) + w11) | 0;
  e = (e + (((b >>> 6) | (b << 26)) ^ ((b >>> 11) | (b << 21)) ^ ((b >>> 25) | (b << 7))) + (d ^ (b & (c ^ d))) + 0x8cc70208 + w11) | 0;
  a = (a + e) | 0;
  e = (e + (((f >>> 2) | (f << 30)) ^ ((f >>> 13) | (f << 19)) ^ ((f >>> 22) | (f << 10))) + ((f & g) | (h & (f | g)))) | 0;
  w12 = ((((w10 >>> 17) | (w10 << 15)) ^ ((w10 >>> 19) | (w10 << 13)) ^ (w10 >>> 10)) + w5 + (((w13 >>> 7) | (w13 << 25)) ^ ((w13 >>> 18) | (w13 << 14)) ^ (w13 >>> 3)) + w12) | 0;
  d = (d + (((a >>> 6) | (a << 26)) ^ ((a >>> 11) | (a << 21)) ^ ((a >>> 25) | (a << 7))) + (c ^ (a & (b ^ c))) + 0x90befffa + w12) | 0;
  h = (h + d) | 0;
  d = (d + (((e >>> 2) | (e << 30)) ^ ((e >>> 13) | (e << 19)) ^ ((e >>> 22) | (e << 10))) + ((e & f) | (g & (e | f)))) | 0;
  w13 = ((((w11 >>> 17) | (w11 << 15)) ^ ((w11 >>> 19) | (w11 << 13)) ^ (w11 >>> 10)) + w6 + (((w14 >>> 7) | (w14 << 25)) ^ ((w14 >>> 18) | (w14 << 14)) ^ (w14 >>> 3)) + w13) | 0;
  c = (c + (((h >>> 6) | (h << 26)) ^ ((h >>> 11) | (h << 21)) ^ ((h >>> 25) | (h << 7))) + (b ^ (h & (a ^ b))) + 0xa4506ceb + w13) | 0;
  g = (g + c) | 0;
  c = (c + (((d >>> 2) | (d << 30)) ^ ((d >>> 13) | (d << 19)) ^ ((d >>> 22) | (d << 10))) + ((d & e) | (f & (d | e)))) | 0;
  w14 = ((((w12 >>> 17) | (w12 << 15)) ^ ((w12 >>> 19) | (w12 << 13)) ^ (w12 >>> 10)) + w7 + (((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)) + w14) | 0;
  b = (b + (((g >>> 6) | (g << 26)) ^ ((g >>> 11) | (g << 21)) ^ ((g >>> 25) | (g << 7))) + (a ^ (g & (h ^ a))) + 0xbef9a3f7 + w14) | 0;
  f = (f + b) | 0;
  b = (b + (((c >>> 2) | (c << 30)) ^ ((c >>> 13) | (c << 19)) ^ ((c >>> 22) | (c << 10))) + ((c & d) | (e & (c | d)))) | 0;
  w15 = ((((w13 >>> 17) | (w13 << 15)) ^ ((w13 >>> 19) | (w13 << 13)) ^ (w13 >>> 10)) + w8 + (((w0 >>> 7) | (w0 << 25)) ^ ((w0 >>> 18) | (w0 << 14)) ^ (w0 >>> 3)) + w15) | 0;
  a = (a + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) ^ ((f >>> 25) | (f << 7))) + (h ^ (f & (g ^ h))) + 0xc67178f2 + w15) | 0;
  e = (e + a) | 0;
  a = (a + (((b >>> 2) | (b << 30)) ^ ((b >>> 13) | (b << 19)) ^ ((b >>> 22) | (b << 10))) + ((b & c) | (d & (b | c)))) | 0;
  out[0] = (a + state[0]!) | 0;
  out[1] = (b + state[1]!) | 0;
  out[2] = (c + state[2]!) | 0;
  out[3] = (d + state[3]!) | 0;
  out[4] = (e + state[4]!) | 0;
  out[5] = (f + state[5]!) | 0;
  out[6] = (g + state[6]!) | 0;
  out[7] = (h + state[7]!) | 0;
}


/**
 * Final-block layout for the word-level calls below (FIPS 180-4 §5.1.1): the
 * message's big-endian words, then 0x80, zeros, and the bit length of
 * everything hashed (HMAC's 64-byte key block included) in word 15.
 */
export function padBlock(block: Int32Array, messageBytes: number, prefixBytes: number): void {
  if (messageBytes > 55) throw new RangeError('one-block SHA-256 takes at most 55 bytes');
  const word = messageBytes >> 2;
  const shift = 24 - 8 * (messageBytes & 3);
  block[word] = (block[word]! & (shift === 24 ? 0 : -1 << (shift + 8))) | (0x80 << shift);
  block.fill(0, word + 1, 15);
  block[15] = (prefixBytes + messageBytes) * 8;
}

/** SHA-256 of one final block, laid out by padBlock, into out[0..7]. */
export function sha256Block(block: Int32Array, out: Int32Array): void {
  compress(INITIAL, block, out);
}

/** HMAC-SHA256 with the key's pads absorbed once; messages of at most 55 bytes. */
export class ShortHmac {
  private readonly inner: Int32Array;
  private readonly outer: Int32Array;
  // The outer block: the inner digest (written here by compress), then the
  // padding of a 32-byte message. Each HMAC has its own: no scratch is shared.
  private readonly outerBlock = new Int32Array(16);

  constructor(key: Uint8Array) {
    [this.inner, this.outer] = keyPads(key);
    padBlock(this.outerBlock, 32, 64);
  }

  /** The MAC of the message in `block` (laid out by padBlock with prefixBytes 64), into out[0..7]. */
  macBlock(block: Int32Array, out: Int32Array): void {
    compress(this.inner, block, this.outerBlock);
    compress(this.outer, this.outerBlock, out);
  }
}

/**
 * HMAC-SHA256 of messages of any length with the key's pads absorbed once
 * (the Payment scheme's challenge binding, schemes/payment/binding.ts, MACs about a
 * kilobyte per credential): the same compression as above, so a MAC costs
 * its blocks and nothing more. Not for concurrent use: the scratch is its own.
 *
 * It also keeps the state after each of the last message's first
 * RESUMED_BLOCKS whole blocks: a route's binding inputs begin alike (realm,
 * method, intent, the start of the request), so a message whose first blocks
 * are those resumes after them. A block is compared whole, every word (no
 * early exit): the time says only whether whole 64-byte blocks equal the last
 * message's, never how much of one matched.
 */
export class KeyedHmac {
  private readonly inner: Int32Array;
  private readonly outer: Int32Array;
  private readonly state = new Int32Array(8);
  private readonly block = new Int32Array(16);
  private readonly outerBlock = new Int32Array(16);
  // resumedStates[k] is the inner state after resumedWords' blocks 0..k; the first `resumable` are valid.
  private readonly resumedWords = new Int32Array(RESUMED_BLOCKS * 16);
  private readonly resumedStates = Array.from({ length: RESUMED_BLOCKS }, () => new Int32Array(8));
  private resumable = 0;

  constructor(key: Uint8Array) {
    [this.inner, this.outer] = keyPads(key);
    padBlock(this.outerBlock, 32, 64);
  }

  /** The MAC of `message`, as 32 bytes. */
  mac(message: Uint8Array): Uint8Array {
    const { state, block, resumedWords, resumedStates } = this;
    state.set(this.inner);
    const remembered = Math.min(message.length >> 6, RESUMED_BLOCKS);
    for (let k = 0; k < remembered; k++) {
      wordsOfBlock(message, 64 * k, block);
      if (k < this.resumable && sameBlock(block, resumedWords, 16 * k)) {
        state.set(resumedStates[k]!);
        continue;
      }
      // Block k is this message's from here on: the ones kept after it no longer follow it.
      compress(state, block, state);
      resumedWords.set(block, 16 * k);
      resumedStates[k]!.set(state);
      this.resumable = k + 1;
    }
    finish(state, block, message, 64 * remembered, message.length, this.outerBlock, 64 * (1 + remembered));
    const digest = new Int32Array(8);
    compress(this.outer, this.outerBlock, digest);
    return wordsBytes(digest);
  }
}

/** SHA-256 of a message of any length. */
export function sha256(message: Uint8Array): Uint8Array {
  const digest = new Int32Array(8);
  finish(INITIAL.slice(), new Int32Array(16), message, 0, message.length, digest, 0);
  return wordsBytes(digest);
}

/** HMAC-SHA256 (RFC 2104) of a message under a key, each of any length: the cold paths' MAC (key derivation, issuing). */
export function hmacSha256(key: Uint8Array, message: Uint8Array): Uint8Array {
  const [inner, outer] = keyPads(key);
  const outerBlock = new Int32Array(16);
  padBlock(outerBlock, 32, 64);
  finish(inner, new Int32Array(16), message, 0, message.length, outerBlock, 64);
  compress(outer, outerBlock, inner);
  return wordsBytes(inner);
}

/** The states after an HMAC key's inner and outer pad blocks (RFC 2104: a key longer than a block is hashed first). */
function keyPads(key: Uint8Array): [inner: Int32Array, outer: Int32Array] {
  const bytes = new Uint8Array(64);
  bytes.set(key.length > 64 ? sha256(key) : key);
  const innerBlock = new Int32Array(16);
  const outerBlock = new Int32Array(16);
  for (let i = 0, at = 0; i < 16; i++, at += 4) {
    const word = (bytes[at]! << 24) | (bytes[at + 1]! << 16) | (bytes[at + 2]! << 8) | bytes[at + 3]!;
    innerBlock[i] = word ^ 0x36363636;
    outerBlock[i] = word ^ 0x5c5c5c5c;
  }
  const inner = new Int32Array(8);
  const outer = new Int32Array(8);
  compress(INITIAL, innerBlock, inner);
  compress(INITIAL, outerBlock, outer);
  return [inner, outer];
}


/** How many leading blocks of its last message a KeyedHmac resumes after: a route's shared prefix is about two. */
const RESUMED_BLOCKS = 4;

/** The 16 big-endian words of message[at, at + 64) into block. */
function wordsOfBlock(message: Uint8Array, at: number, block: Int32Array): void {
  for (let i = 0; i < 16; i++, at += 4) block[i] = (message[at]! << 24) | (message[at + 1]! << 16) | (message[at + 2]! << 8) | message[at + 3]!;
}

/** Whether block equals words[at, at + 16), every word compared. */
function sameBlock(block: Int32Array, words: Int32Array, at: number): boolean {
  let diff = 0;
  for (let i = 0; i < 16; i++) diff |= block[i]! ^ words[at + i]!;
  return diff === 0;
}

/**
 * HMAC-SHA256 under a key that changes with every call (a macaroon's
 * signature chain: each caveat is MACed under the signature before it), the
 * key given as eight big-endian words and the message as bytes. The key's pads
 * cost two compressions per call, as they must; the message and the
 * padding are laid out here without copies, so a chain link on a caveat of up
 * to 55 bytes costs four compressions and nothing else. Not for concurrent
 * use: the scratch is its own.
 */
export class HmacChain {
  // The key's blocks XOR the pads: a 32-byte key fills words 0-7, and words
  // 8-15 are the pad bytes alone (the key's zeros), written once here.
  private readonly innerKeyBlock = new Int32Array(16).fill(0x36363636);
  private readonly outerKeyBlock = new Int32Array(16).fill(0x5c5c5c5c);
  private readonly innerState = new Int32Array(8);
  private readonly outerState = new Int32Array(8);
  private readonly block = new Int32Array(16);
  private readonly outerBlock = new Int32Array(16);

  constructor() {
    padBlock(this.outerBlock, 32, 64);
  }

  /** HMAC-SHA256(key, message[from, to)) into out[0..7] (which may be `key`). */
  mac(key: Int32Array, message: Uint8Array, from: number, to: number, out: Int32Array): void {
    const { innerKeyBlock, outerKeyBlock, innerState, outerState } = this;
    for (let i = 0; i < 8; i++) {
      const word = key[i]!;
      innerKeyBlock[i] = word ^ 0x36363636;
      outerKeyBlock[i] = word ^ 0x5c5c5c5c;
    }
    compress(INITIAL, innerKeyBlock, innerState);
    compress(INITIAL, outerKeyBlock, outerState);
    finish(innerState, this.block, message, from, to, this.outerBlock, 64);
    compress(outerState, this.outerBlock, out);
  }
}

/**
 * A hash finished: message[from, to) absorbed onto `state` (which has
 * `absorbed` bytes in it already: an HMAC key's pad, or none) in 64-byte
 * blocks, then the tail, 0x80, zeros and the bit length of everything hashed:
 * one block, or two when the tail leaves no room. The digest goes to out[0..7].
 */
function finish(state: Int32Array, block: Int32Array, message: Uint8Array, from: number, to: number, out: Int32Array, absorbed: number): void {
  const length = to - from;
  const full = from + (length & ~63);
  for (let at = from; at < full; at += 64) {
    wordsOfBlock(message, at, block);
    compress(state, block, state);
  }
  // The tail a word at a time, then 0x80 after its last byte, then zeros.
  const tail = to - full;
  const whole = tail >> 2;
  let at = full;
  for (let i = 0; i < whole; i++, at += 4) block[i] = (message[at]! << 24) | (message[at + 1]! << 16) | (message[at + 2]! << 8) | message[at + 3]!;
  let last = 0x80 << (24 - 8 * (tail & 3));
  for (let k = 0; k < (tail & 3); k++) last |= message[at + k]! << (24 - 8 * k);
  block[whole] = last;
  for (let i = whole + 1; i < 16; i++) block[i] = 0;
  if (tail > 55) {
    compress(state, block, state);
    for (let i = 0; i < 16; i++) block[i] = 0;
  }
  const bits = (absorbed + length) * 8;
  block[14] = Math.floor(bits / 0x1_0000_0000);
  block[15] = bits >>> 0;
  compress(state, block, out);
}
