// What the paywall adds to one request, in process: the same fresh Requests
// (each with its own paid credential) through a bare handler and through
// withL402, alternating batches. Steadier than HTTP throughput on a shared machine.
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { Keyring, withL402 } from 'l402-paywall';
import { paidAuthorization } from './credentials.js';

export async function benchOverhead(): Promise<{ bareMicros: number; paidMicros: number; overheadMicros: number }> {
  const secret = bytesToHex(randomBytes(32));
  const keyring = new Keyring([secret]);
  const answer = () => Response.json({ usd: 100_000, source: 'simulated' });
  // No replayStore: withL402's default, the in-process one, as one server runs it.
  const paid = withL402(answer, {
    priceSats: 1,
    provider: { createInvoice: () => Promise.reject(new Error('every request here is paid')) },
    secret,
    route: '/api/paid',
  });
  const batch = (n: number) =>
    Array.from({ length: n }, () => new Request('http://127.0.0.1/api/paid', { headers: { authorization: paidAuthorization(keyring) } }));
  const time = async (handler: (r: Request) => Response | Promise<Response>, requests: Request[]) => {
    const start = performance.now();
    for (const request of requests) if ((await handler(request)).status !== 200) throw new Error('not served');
    return ((performance.now() - start) * 1000) / requests.length;
  };
  await time(answer, batch(5000));
  await time(paid, batch(5000));
  const bare: number[] = [];
  const withPaywall: number[] = [];
  for (let round = 0; round < 9; round++) {
    bare.push(await time(answer, batch(10_000)));
    withPaywall.push(await time(paid, batch(10_000)));
  }
  const median = (v: number[]) => v.sort((a, b) => a - b)[4]!;
  const bareMicros = median(bare);
  const paidMicros = median(withPaywall);
  return { bareMicros, paidMicros, overheadMicros: paidMicros - bareMicros };
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await benchOverhead());
