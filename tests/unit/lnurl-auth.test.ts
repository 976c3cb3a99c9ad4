// LUD-04 signature checks: the spec's test data, real keys signing real k1s,
// and everything a wallet (or an attacker) might send instead.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes, randomBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../lib/config.js';
import { verifyLnurlAuthSignature } from '../../lib/lightning/lnurl-auth.js';

// The test data of LUD-04 (lnurl/luds, 04.md).
const LUD04 = {
  k1: 'e2af6254a8df433264fa23f67eb8188635d15ce883e8fc020989d5f82ae6f11e',
  key: '02c3b844b8104f0c1b15c507774c9ba7fc609f58f343b9b149122e944dd20c9362',
  sig: '304402203767faf494f110b139293d9bab3c50e07b3bf33c463d4aa767256cd09132dc5102205821f8efacdb5c595b92ada255876d9201e126e2f31a140d44561cc1f7e9e43d',
};

const N = secp256k1.Point.CURVE().n;

function keyPair() {
  const secretKey = secp256k1.utils.randomSecretKey();
  return { secretKey, pubkey: bytesToHex(secp256k1.getPublicKey(secretKey, true)) };
}

function sign(k1: string, secretKey: Uint8Array): string {
  return bytesToHex(secp256k1.sign(hexToBytes(k1), secretKey, { prehash: false, format: 'der' }));
}

describe('verifyLnurlAuthSignature', () => {
  it('accepts the LUD-04 test data', () => {
    expect(verifyLnurlAuthSignature(LUD04.k1, LUD04.sig, LUD04.key)).toEqual({ ok: true });
  });

  it('accepts the test data in upper case (hex case is not meaningful)', () => {
    expect(verifyLnurlAuthSignature(LUD04.k1.toUpperCase(), LUD04.sig.toUpperCase(), LUD04.key.toUpperCase())).toEqual({ ok: true });
  });

  it('refuses the test data with one bit of k1, sig or key changed', () => {
    const flip = (hex: string, at: number) => hex.slice(0, at) + (parseInt(hex[at]!, 16) ^ 1).toString(16) + hex.slice(at + 1);
    expect(verifyLnurlAuthSignature(flip(LUD04.k1, 63), LUD04.sig, LUD04.key).ok).toBe(false);
    expect(verifyLnurlAuthSignature(LUD04.k1, flip(LUD04.sig, 20), LUD04.key).ok).toBe(false);
    expect(verifyLnurlAuthSignature(LUD04.k1, LUD04.sig, flip(LUD04.key, 65)).ok).toBe(false);
  });

  it('signs the raw k1 bytes, not their SHA-256: a wallet that hashes first is refused', () => {
    const { secretKey, pubkey } = keyPair();
    const k1 = bytesToHex(randomBytes(32));
    const hashedFirst = bytesToHex(secp256k1.sign(hexToBytes(k1), secretKey, { prehash: true, format: 'der' }));
    expect(verifyLnurlAuthSignature(k1, hashedFirst, pubkey).ok).toBe(false);
    expect(verifyLnurlAuthSignature(k1, sign(k1, secretKey), pubkey)).toEqual({ ok: true });
  });

  it('accepts any real key signing any k1, and refuses that signature for another k1 or another key', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 32, maxLength: 32 }), (k1Bytes, otherBytes) => {
        fc.pre(bytesToHex(k1Bytes) !== bytesToHex(otherBytes));
        const alice = keyPair();
        const mallory = keyPair();
        const k1 = bytesToHex(k1Bytes);
        const sig = sign(k1, alice.secretKey);
        expect(verifyLnurlAuthSignature(k1, sig, alice.pubkey)).toEqual({ ok: true });
        expect(verifyLnurlAuthSignature(bytesToHex(otherBytes), sig, alice.pubkey).ok).toBe(false);
        expect(verifyLnurlAuthSignature(k1, sig, mallory.pubkey).ok).toBe(false);
      }),
      { numRuns: 50 },
    );
  });

  it('accepts the high-S twin of a valid signature (wallets are not bound to BIP-62 here; k1 is single use anyway)', () => {
    const { secretKey, pubkey } = keyPair();
    const k1 = bytesToHex(randomBytes(32));
    const low = secp256k1.Signature.fromBytes(hexToBytes(sign(k1, secretKey)), 'der');
    const high = new secp256k1.Signature(low.r, N - low.s);
    expect(verifyLnurlAuthSignature(k1, high.toHex('der'), pubkey)).toEqual({ ok: true });
  });

  it('refuses compact (64-byte) and recovered signatures: LUD-04 says DER', () => {
    const { secretKey, pubkey } = keyPair();
    const k1 = bytesToHex(randomBytes(32));
    const compact = bytesToHex(secp256k1.sign(hexToBytes(k1), secretKey, { prehash: false }));
    expect(verifyLnurlAuthSignature(k1, compact, pubkey).ok).toBe(false);
  });

  it.each([
    ['k1 too short', LUD04.k1.slice(2), LUD04.sig, LUD04.key],
    ['k1 not hex', 'zz' + LUD04.k1.slice(2), LUD04.sig, LUD04.key],
    ['uncompressed key', LUD04.k1, LUD04.sig, '04' + LUD04.key.slice(2) + '00'.repeat(32)],
    ['key with a bad prefix', LUD04.k1, LUD04.sig, '05' + LUD04.key.slice(2)],
    ['key not on the curve', LUD04.k1, LUD04.sig, '02' + 'ff'.repeat(32)],
    ['empty signature', LUD04.k1, '', LUD04.key],
    ['signature of odd length', LUD04.k1, LUD04.sig + '0', LUD04.key],
    ['truncated DER', LUD04.k1, LUD04.sig.slice(0, -4), LUD04.key],
    ['DER with trailing bytes', LUD04.k1, LUD04.sig + '00', LUD04.key],
    ['DER with r = 0', LUD04.k1, '3006020100020101', LUD04.key],
    ['not DER at all', LUD04.k1, 'ab'.repeat(64), LUD04.key],
    ['huge input', LUD04.k1, '30' + 'ff'.repeat(10_000), LUD04.key],
  ])('refuses %s without throwing', (_name, k1, sig, key) => {
    const result = verifyLnurlAuthSignature(k1, sig, key);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/\w/);
  });
});

describe('ADMIN_PUBKEYS', () => {
  const env = { DATA_DIR: '/tmp/l402-unit-lnurl-auth', L402_SECRET: 'x'.repeat(32), DEV_NODE_PRIVATE_KEY: '11'.repeat(32) };

  it('reads comma-separated compressed keys, in lower case', () => {
    const config = loadConfig({ ...env, ADMIN_PUBKEYS: ` ${LUD04.key.toUpperCase()} ,03${'ab'.repeat(32)}` });
    expect(config.auth.adminPubkeys).toEqual([LUD04.key, `03${'ab'.repeat(32)}`]);
    expect(loadConfig(env).auth.adminPubkeys).toEqual([]);
  });

  it.each([
    ['an npub', 'npub1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq'],
    ['an uncompressed key', '04' + 'ab'.repeat(64)],
    ['a truncated key', LUD04.key.slice(0, -2)],
    ['a trailing comma', `${LUD04.key},`],
  ])('refuses %s', (_name, value) => {
    expect(() => loadConfig({ ...env, ADMIN_PUBKEYS: value })).toThrow(ConfigError);
  });
});
