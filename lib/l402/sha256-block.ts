// SHA-256 and HMAC-SHA256 of short fixed-size inputs for the token hot path,
// on noble's own compression function. A verification hashes three blocks
// (HMAC inner, HMAC outer, preimage); going through noble's streaming API
// spends as long on buffering, padding and cloning as on the compression, so
// here the final block is laid out once per call (message, 0x80, zeros, bit
// length: FIPS 180-4 §5.1.1) and compressed from a cached state.
// Checked against node:crypto in tests/unit/sha256-block.test.ts.
import { _SHA256, sha256 } from '@noble/hashes/sha2.js';

/** The eight chaining words after some whole blocks. */
export type ChainState = readonly [number, number, number, number, number, number, number, number];

class Compressor extends _SHA256 {
  private readonly lastBlock = new Uint8Array(64);
  private readonly lastView = new DataView(this.lastBlock.buffer);

  initial(): ChainState {
    return this.get();
  }

  /** State after absorbing exactly one 64-byte block from the initial state. */
  absorb(block64: Uint8Array): ChainState {
    const fresh = new _SHA256();
    fresh.update(block64); // a full block is compressed at once
    return (fresh as unknown as Compressor).get();
  }

  /**
   * Compresses the last block: `message` (at most 55 bytes) after
   * `prefixBytes` already absorbed into `state`; writes the digest to `out`.
   */
  finish(state: ChainState, message: Uint8Array, prefixBytes: number, out: Uint8Array): void {
    const b = this.lastBlock;
    const n = message.length;
    if (n > 55) throw new RangeError('one-block SHA-256 takes at most 55 bytes');
    b.set(message);
    b[n] = 0x80;
    b.fill(0, n + 1, 60);
    this.lastView.setUint32(60, (prefixBytes + n) * 8, false); // messages here are far below 2^29 bytes
    this.set(state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7]);
    this.process(this.lastView, 0);
    writeWord(out, 0, this.A);
    writeWord(out, 4, this.B);
    writeWord(out, 8, this.C);
    writeWord(out, 12, this.D);
    writeWord(out, 16, this.E);
    writeWord(out, 20, this.F);
    writeWord(out, 24, this.G);
    writeWord(out, 28, this.H);
  }
}

function writeWord(out: Uint8Array, at: number, word: number): void {
  out[at] = word >>> 24;
  out[at + 1] = word >>> 16;
  out[at + 2] = word >>> 8;
  out[at + 3] = word;
}

const compressor = new Compressor();
const INITIAL = compressor.initial();

/** SHA-256 of at most 55 bytes, into `out`. */
export function sha256Short(message: Uint8Array, out: Uint8Array): void {
  compressor.finish(INITIAL, message, 0, out);
}

/** HMAC-SHA256 with the key's pads absorbed once; messages of at most 55 bytes. */
export class ShortHmac {
  private readonly inner: ChainState;
  private readonly outer: ChainState;
  private readonly innerDigest = new Uint8Array(32);

  constructor(key: Uint8Array) {
    const block = new Uint8Array(64);
    block.set(key.length > 64 ? sha256(key) : key); // RFC 2104: long keys are hashed first
    this.inner = compressor.absorb(block.map((b) => b ^ 0x36));
    this.outer = compressor.absorb(block.map((b) => b ^ 0x5c));
  }

  macInto(message: Uint8Array, out: Uint8Array): void {
    compressor.finish(this.inner, message, 64, this.innerDigest);
    compressor.finish(this.outer, this.innerDigest, 64, out);
  }
}
