// A LUD-04 wallet for tests: a real secp256k1 key that reads a challenge's
// LNURL, signs the 32 raw bytes of k1 (DER) and calls the service back, the
// way a phone wallet does after scanning the QR code.
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { decodeLnurl } from '../../lib/lightning/lnurl.js';

export interface ChallengeBody {
  k1: string;
  lnurl: string;
  expiresAt: string;
  pollToken: string;
  /** SVG of the QR code of lnurl. */
  qr: string;
}

export interface TestWallet {
  secretKey: Uint8Array;
  /** 33-byte compressed public key, hex. */
  pubkey: string;
  /** DER signature (hex) over the raw bytes of `k1`. */
  sign(k1: string): string;
  /** Scans `lnurl`, signs its k1 and calls back; returns the HTTP status and the wallet's answer. */
  scan(lnurl: string): Promise<{ status: number; body: { status: string; reason?: string } }>;
}

export function testWallet(secretKey: Uint8Array = secp256k1.utils.randomSecretKey()): TestWallet {
  const pubkey = bytesToHex(secp256k1.getPublicKey(secretKey, true));
  const sign = (k1: string) => bytesToHex(secp256k1.sign(hexToBytes(k1), secretKey, { prehash: false, format: 'der' }));
  return {
    secretKey,
    pubkey,
    sign,
    async scan(lnurl) {
      const url = new URL(decodeLnurl(lnurl));
      const k1 = url.searchParams.get('k1')!;
      return callBack(url, { sig: sign(k1), key: pubkey });
    },
  };
}

/** Calls the callback URL of a challenge with whatever sig/key a test chooses (forgeries included). */
export async function callBack(callback: URL | string, params: Record<string, string>): Promise<{ status: number; body: { status: string; reason?: string } }> {
  const url = new URL(callback);
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value);
  const response = await fetch(url);
  return { status: response.status, body: (await response.json()) as { status: string; reason?: string } };
}

/** The whole dashboard login as a person does it at the server at `serverUrl`: the page asks, `wallet` scans and signs, the page collects; answers the login token. */
export async function logIn(serverUrl: string, wallet: TestWallet = testWallet()): Promise<string> {
  const challenge = (await (await fetch(`${serverUrl}/api/lnurl-auth`)).json()) as ChallengeBody;
  const signed = await wallet.scan(challenge.lnurl);
  if (signed.body.status !== 'OK') throw new Error(`the wallet's signature was refused: ${JSON.stringify(signed.body)}`);
  const collected = await fetch(`${serverUrl}/api/lnurl-auth?${new URLSearchParams({ k1: challenge.k1, pollToken: challenge.pollToken })}`);
  const body = (await collected.json()) as { token?: string };
  if (collected.status !== 200 || !body.token) throw new Error(`the login was not collected: ${collected.status} ${JSON.stringify(body)}`);
  return body.token;
}
