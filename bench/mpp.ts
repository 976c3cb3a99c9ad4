// Verifying one paid credential of each scheme on one core, in the same run:
// an L402 token (Authorization: L402 <token>:<preimage>) and a Payment
// credential (Authorization: Payment <base64url JSON>, docs/mpp.md) for the
// same route and price, each followed by the paywall's condition check. Both
// as the paywall does it: the header to a verified, condition-checked payment.
// Fresh credentials each (a new invoice, payment hash and challenge).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, checkCaveats, mintToken, verifyAuthorization, verifyPaymentAuthorization } from 'l402-paywall';
import { encodeInvoice } from 'l402-paywall/lightning';
import { BindingKeyring, formatCredential, lightningChargeChallenge } from '../packages/l402-paywall/src/mpp.js';
import { opsPerSecond } from './token.js';

export interface MppBench {
  l402PerSecond: number;
  paymentPerSecond: number;
  /** The length of one Payment credential's Authorization value, and of one L402 one. */
  paymentLength: number;
  l402Length: number;
}

export function benchMpp(): MppBench {
  const secret = 'bench-secret-'.padEnd(64, 'x');
  const keyring = new Keyring([secret]);
  const binding = BindingKeyring.fromKeyring(keyring);
  const route = '/api/demo/btc-price';
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const nodeKey = bytesToHex(randomBytes(32));
  const N = 256;
  const l402: string[] = [];
  const payment: string[] = [];
  for (let i = 0; i < N; i++) {
    const preimageBytes = randomBytes(32);
    const preimage = bytesToHex(preimageBytes);
    const hash = bytesToHex(sha256(preimageBytes));
    l402.push(`L402 ${mintToken(keyring, { paymentHash: hash, expiresAt, caveats: { route, price_msat: 1000 } })}:${preimage}`);
    const invoice = encodeInvoice(
      {
        network: 'regtest',
        amountMsat: 1000,
        timestamp: expiresAt - 3600,
        paymentHash: hash,
        paymentSecret: bytesToHex(randomBytes(32)),
        description: 'L402 demo: live BTC price',
        expirySeconds: 3600,
      },
      nodeKey,
    );
    const challenge = lightningChargeChallenge(binding, {
      realm: 'l402.example',
      invoice,
      paymentHash: hash,
      amountSats: 1,
      network: 'regtest',
      description: 'L402 demo: live BTC price',
      expires: new Date(expiresAt * 1000),
      binding: { route },
    });
    payment.push(formatCredential(challenge, preimage));
  }
  const expect = { route, priceMsat: 1000, exact: {} };
  const mask = N - 1;
  const paymentPerSecond = opsPerSecond(
    (i) => {
      const r = verifyPaymentAuthorization(keyring, payment[i & mask]!);
      return r.ok && r.charge.realm === 'l402.example' && checkCaveats(r.caveats, expect).ok;
    },
    40_000,
    20_000,
  );
  const l402PerSecond = opsPerSecond(
    (i) => {
      const r = verifyAuthorization(keyring, l402[i & mask]!);
      return r.ok && checkCaveats(r.token.caveats, expect).ok;
    },
    200_000,
    20_000,
  );
  return { l402PerSecond, paymentPerSecond, paymentLength: payment[0]!.length, l402Length: l402[0]!.length };
}

export function printMppBench(result: MppBench): void {
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  console.log('\nVerifying one paid credential per scheme, one core, same run (header to a verified, condition-checked payment):');
  console.log(
    `  L402 token          ${fmt(result.l402PerSecond).padStart(10)} /s   ${(1e6 / result.l402PerSecond).toFixed(1)} us each (${result.l402Length} characters)`,
  );
  console.log(
    `  Payment credential  ${fmt(result.paymentPerSecond).padStart(10)} /s   ${(1e6 / result.paymentPerSecond).toFixed(1)} us each (${result.paymentLength} characters)`,
  );
  console.log(
    `  ratio               ${(result.l402PerSecond / result.paymentPerSecond).toFixed(1)}x   (the Payment credential is three times as long, base64 in base64, and its binding MACs a kilobyte)`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printMppBench(benchMpp());
