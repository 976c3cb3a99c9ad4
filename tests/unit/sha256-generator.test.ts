// The unrolled SHA-256 compression is generated from a short definition
// (scripts/generate-sha256-block.ts): regenerating it must give the committed
// file byte for byte, so a reviewer checks the generator, not 250 lines of rounds.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SHA256_BLOCK_FILE, regenerate, roundConstants } from '../../scripts/generate-sha256-block.js';

describe('sha256-block.ts is what its generator writes', () => {
  it('regenerating the compression changes nothing', () => {
    const committed = readFileSync(SHA256_BLOCK_FILE, 'utf8');
    expect(regenerate(committed)).toBe(committed);
  });

  it('the round constants come out as FIPS 180-4 lists them', () => {
    const k = roundConstants();
    expect(k).toHaveLength(64);
    expect(k.slice(0, 4)).toEqual([0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5]);
    expect(k.slice(-2)).toEqual([0xbef9a3f7, 0xc67178f2]);
  });

  it('a changed round in the file is caught', () => {
    const committed = readFileSync(SHA256_BLOCK_FILE, 'utf8');
    const tampered = committed.replace('0x428a2f98', '0x428a2f99');
    expect(tampered).not.toBe(committed);
    expect(regenerate(tampered)).toBe(committed);
  });
});
