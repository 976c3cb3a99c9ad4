// Challenge issuance: what a 402 costs when every unpaid request gets a fresh
// invoice from the embedded dev node (a real signed BOLT11, kept in the
// in-memory store) and a freshly signed token. In process, through withL402,
// 16 requests in flight; median of five runs after a warm-up. Once with the
// service's invoice signer (libsecp256k1) and once with the library's default
// (@noble/curves, pure JS), which is what signing costs everywhere else.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { withL402 } from 'l402-paywall';
import { createDevNode, type InvoiceSigner } from 'l402-paywall/backends';
import { libsecp256k1Signer } from '../lib/lightning/invoice-signer.js';
import { createMemoryStore } from '../lib/store/index.js';

export interface ChallengeBench {
  /** 402s per second with the service's dev node (libsecp256k1). */
  perSecond: number;
  /** The same with the library's default signer. */
  pureJsPerSecond: number;
  bodyBytes: number;
}

export async function benchChallenges(): Promise<ChallengeBench> {
  const service = await challengesPerSecond(libsecp256k1Signer());
  const pureJs = await challengesPerSecond(undefined);
  return { perSecond: service.perSecond, pureJsPerSecond: pureJs.perSecond, bodyBytes: service.bodyBytes };
}

async function challengesPerSecond(signInvoice: InvoiceSigner | undefined): Promise<{ perSecond: number; bodyBytes: number }> {
  const node = createDevNode({ store: createMemoryStore(), privateKey: bytesToHex(randomBytes(32)), ...(signInvoice ? { signInvoice } : {}) });
  const paywalled = withL402(() => Response.json({ usd: 1 }), {
    priceSats: 1,
    provider: node,
    secret: bytesToHex(randomBytes(32)),
    route: '/api/demo/btc-price',
  });
  let bodyBytes = 0;
  const issue = async () => {
    const response = await paywalled(new Request('http://127.0.0.1/api/demo/btc-price'));
    if (response.status !== 402) throw new Error(`expected a 402 challenge, got ${response.status}`);
    bodyBytes = (await response.arrayBuffer()).byteLength;
  };
  const run = async (n: number) => {
    const start = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next++ < n) await issue();
      }),
    );
    return n / ((performance.now() - start) / 1000);
  };
  await run(2_000);
  const rates: number[] = [];
  for (let i = 0; i < 5; i++) rates.push(await run(4_000));
  return { perSecond: rates.sort((a, b) => a - b)[2]!, bodyBytes };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchChallenges());
