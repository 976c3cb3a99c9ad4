// What fetchWithL402 itself costs per paid call: read the challenge, decode
// and check the BOLT11 invoice (signature checked), charge the budget, pay
// once, check the preimage, retry. Measured in process against a route that
// answers from precomputed responses, so neither network nor server nor
// wallet time is in it: the paid call's time minus two bare calls of the same
// route (the 402 and the served answer) is the client's own work. Times are
// CPU time of this process (process.cpuUsage), which a busy shared machine
// disturbs less than wall time; wall time is reported beside it.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { decodeInvoice, encodeInvoice } from 'l402-paywall/lightning';
import { createBudget, fetchWithL402, type Wallet } from 'l402-paywall/client';

export interface ClientBench {
  /** CPU per bare call of the route. */
  bareMicros: number;
  /** CPU per paid call through fetchWithL402 (two calls of the route inside). */
  paidMicros: number;
  /** paidMicros - 2 x bareMicros: the client's own work. */
  clientMicros: number;
  /** Decoding an invoice whose signer is known from the host's earlier invoices (what the paid calls do). */
  decodeKnownPayeeMicros: number;
  /** Decoding an invoice from a signer not seen before: its key recovered (a host's first call). */
  decodeRecoveringMicros: number;
  /** The same difference in wall time. */
  clientWallMicros: number;
  calls: number;
}

const cpuMicros = () => {
  const used = process.cpuUsage();
  return used.user + used.system;
};

export async function benchClient(): Promise<ClientBench> {
  const nodeKey = bytesToHex(randomBytes(32));
  const preimages = new Map<string, string>(); // invoice -> preimage
  const makeInvoices = (n: number) => {
    const list: { invoice: string; token: string }[] = [];
    for (let i = 0; i < n; i++) {
      const preimage = randomBytes(32);
      const invoice = encodeInvoice(
        {
          network: 'regtest',
          amountMsat: 1000,
          timestamp: Math.floor(Date.now() / 1000),
          expirySeconds: 3600,
          paymentHash: bytesToHex(sha256(preimage)),
          paymentSecret: bytesToHex(randomBytes(32)),
          description: 'bench',
        },
        nodeKey,
      );
      preimages.set(invoice, bytesToHex(preimage));
      list.push({ invoice, token: bytesToHex(randomBytes(48)) });
    }
    return list;
  };
  // The route: 402 with the next precomputed challenge without a credential, 200 with one.
  let next: { invoice: string; token: string }[] = [];
  const served = JSON.stringify({ usd: 100_000, source: 'simulated' });
  const route = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const request = input instanceof Request ? input : new Request(input, init);
    if (request.headers.has('authorization')) return new Response(served, { headers: { 'content-type': 'application/json' } });
    const { invoice, token } = next.pop()!;
    return new Response('{}', {
      status: 402,
      headers: { 'content-type': 'application/json', 'www-authenticate': `L402 macaroon="${token}", invoice="${invoice}"` },
    });
  };
  const wallet: Wallet = { network: 'regtest', payInvoice: async ({ invoice }) => ({ preimage: preimages.get(invoice)! }) };
  const url = 'http://127.0.0.1/api/paid';
  const bareHeaders = { authorization: 'L402 x:y' };

  const time = async (calls: number, paid: boolean) => {
    if (paid) next = makeInvoices(calls);
    const budget = createBudget({ totalSats: calls });
    const cpu = cpuMicros();
    const wall = performance.now();
    for (let i = 0; i < calls; i++) {
      const response = paid
        ? await fetchWithL402(url, undefined, { wallet, maxPriceSats: 1, budget, tokens: false, fetch: route })
        : await route(url, { headers: bareHeaders });
      if (response.status !== 200) throw new Error('not served');
      await response.arrayBuffer();
    }
    return { cpu: (cpuMicros() - cpu) / calls, wall: ((performance.now() - wall) * 1000) / calls };
  };
  const nodePublicKey = decodeInvoice(makeInvoices(1)[0]!.invoice).payeeNodeKey;
  const decodeTime = (calls: number, expectedPayee: string | undefined) => {
    const invoices = makeInvoices(calls).map((c) => c.invoice);
    const cpu = cpuMicros();
    for (const invoice of invoices) decodeInvoice(invoice, { expectedPayee });
    return (cpuMicros() - cpu) / calls;
  };

  await time(200, false);
  await time(200, true);
  const bare: { cpu: number; wall: number }[] = [];
  const paid: { cpu: number; wall: number }[] = [];
  const decodeKnown: number[] = [];
  const decodeRecovering: number[] = [];
  const CALLS = 300;
  const ROUNDS = 7;
  for (let round = 0; round < ROUNDS; round++) {
    bare.push(await time(CALLS, false));
    paid.push(await time(CALLS, true));
    decodeKnown.push(decodeTime(CALLS, nodePublicKey));
    decodeRecovering.push(decodeTime(CALLS, undefined));
  }
  const median = (v: number[]) => [...v].sort((a, b) => a - b)[ROUNDS >> 1]!;
  const bareMicros = median(bare.map((t) => t.cpu));
  const paidMicros = median(paid.map((t) => t.cpu));
  return {
    bareMicros,
    paidMicros,
    clientMicros: paidMicros - 2 * bareMicros,
    decodeKnownPayeeMicros: median(decodeKnown),
    decodeRecoveringMicros: median(decodeRecovering),
    clientWallMicros: median(paid.map((t) => t.wall)) - 2 * median(bare.map((t) => t.wall)),
    calls: CALLS * ROUNDS,
  };
}
