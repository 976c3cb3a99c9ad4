// Verifying one paid credential of each scheme on one core, in the same run:
// an L402 token (Authorization: L402 <token>:<preimage>) and a Payment
// credential (Authorization: Payment <base64url JSON>, docs/mpp.md) for the
// same route and price, each followed by the paywall's condition check. Both
// as the paywall does it: the header to a verified, condition-checked payment.
// Fresh credentials each (a new invoice, payment hash and challenge).
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, checkCaveats, mintToken, verifyAuthorization, verifyPaymentAuthorization, withL402 } from 'l402-paywall';
import { createDevNode, memoryDevNodeStore, type InvoiceSigner } from 'l402-paywall/backends';
import type { Library } from './baseline.js';
import { paymentChallenge, paymentCredential } from './payment-wire.js';
import { opsPerSecond } from './token.js';

export interface MppBench {
  l402PerSecond: number;
  paymentPerSecond: number;
  /** The length of one Payment credential's Authorization value, and of one L402 one. */
  paymentLength: number;
  l402Length: number;
}

/** What building Payment charges takes from a copy of the library (today's by default; side-by-side.ts passes the baseline's). */
export type ChargeKit = Pick<Library['root'], 'withL402'> & Pick<Library['backends'], 'createDevNode' | 'memoryDevNodeStore'>;

/**
 * `count` Payment charge credentials for `route`, each answering a fresh 402 of
 * a paywall keyed with `secret` (its charge challenge, the invoice paid on a dev node).
 */
export async function paymentCharges(
  secret: string,
  route: string,
  count: number,
  kit: ChargeKit = { withL402, createDevNode, memoryDevNodeStore },
  signInvoice?: InvoiceSigner,
): Promise<string[]> {
  const net = kit.memoryDevNodeStore();
  const wallet = kit.createDevNode({ store: net });
  const paywalled = kit.withL402(() => new Response('paid'), {
    priceSats: 1,
    provider: kit.createDevNode({ store: net, ...(signInvoice && { signInvoice }) }),
    secret,
    route,
    realm: 'l402.example',
    memo: () => 'L402 demo: live BTC price',
  });
  const credentials: string[] = [];
  for (let i = 0; i < count; i++) {
    const offered = await paywalled(new Request(`http://127.0.0.1${route}`));
    const { echo, request } = paymentChallenge(offered.headers.get('www-authenticate'), 'charge');
    const { preimage } = await wallet.pay(String((request.methodDetails as { invoice: string }).invoice));
    credentials.push(paymentCredential(echo, { preimage }));
  }
  return credentials;
}

export async function benchMpp(): Promise<MppBench> {
  const secret = 'bench-secret-'.padEnd(64, 'x');
  const keyring = new Keyring([secret]);
  const route = '/api/demo/btc-price';
  const expiresAt = Math.floor(Date.now() / 1000) + 3600;
  const N = 256;
  const l402: string[] = [];
  for (let i = 0; i < N; i++) {
    const preimageBytes = randomBytes(32);
    const hash = bytesToHex(sha256(preimageBytes));
    l402.push(`L402 ${mintToken(keyring, { paymentHash: hash, expiresAt, caveats: { route, price_msat: 1000 } })}:${bytesToHex(preimageBytes)}`);
  }
  const payment = await paymentCharges(secret, route, N);
  const expect = { route, priceMsat: 1000, exact: {} };
  const mask = N - 1;
  // Each side twice, alternating, the second pair kept: the first passes of these larger functions run before the JIT has settled on them.
  const measure = () => ({ payment: paymentRate(), l402: l402Rate() });
  const paymentRate = () =>
    opsPerSecond(
      (i) => {
        const r = verifyPaymentAuthorization(keyring, payment[i & mask]!);
        return r.ok && r.charge.realm === 'l402.example' && checkCaveats(r.caveats, expect).ok;
      },
      40_000,
      20_000,
    );
  const l402Rate = () =>
    opsPerSecond(
      (i) => {
        const r = verifyAuthorization(keyring, l402[i & mask]!);
        return r.ok && checkCaveats(r.token.caveats, expect).ok;
      },
      200_000,
      20_000,
    );
  measure();
  const { payment: paymentPerSecond, l402: l402PerSecond } = measure();
  return { l402PerSecond, paymentPerSecond, paymentLength: payment[0]!.length, l402Length: l402[0]!.length };
}

export function printMppBench(result: MppBench): void {
  const ratio = result.l402PerSecond / result.paymentPerSecond;
  const fmt = (n: number) => Math.round(n).toLocaleString('en-US');
  console.log('\nVerifying one paid credential per scheme, one core, same run (header to a verified, condition-checked payment):');
  console.log(
    `  L402 token          ${fmt(result.l402PerSecond).padStart(10)} /s   ${(1e6 / result.l402PerSecond).toFixed(1)} us each (${result.l402Length} characters)`,
  );
  console.log(
    `  Payment credential  ${fmt(result.paymentPerSecond).padStart(10)} /s   ${(1e6 / result.paymentPerSecond).toFixed(1)} us each (${result.paymentLength} characters)`,
  );
  console.log(
    `  ratio               ${ratio.toFixed(2)}x   (target <= 2x the macaroon: ${ratio <= 2 ? 'met' : 'NOT met'}; the Payment credential is four times as long, base64 in base64, and its binding MACs 800 bytes)`,
  );
}

if (import.meta.url === `file://${process.argv[1]}`) printMppBench(await benchMpp());
