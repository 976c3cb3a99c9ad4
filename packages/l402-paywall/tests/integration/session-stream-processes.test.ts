// A metered stream across two OS processes sharing one Redis
// (docs/sessions.md "The metering seam, and streams"): two instances of one
// streaming route (../support/metered-stream-instance.ts) share the Lua
// session ledger, the replay store and the dev Lightning node's store in the
// real redis-server, and one secret. The paying client (fetchWithL402 with
// createSessions) reaches them through a load balancer that sends a request
// to the first instance not holding a stream open: the stream of 25 one-sat
// chunks on a 20-sat deposit is served by A, pauses after 20 with
// payment-need-topup, and the client's top-up lands on B, a different process;
// A's held stream resumes by itself and ends with its receipt and [DONE]. The
// close refunds exactly what was not spent (40 paid, 25 spent: 15 sats) to the
// client's return invoice, once: a second close at the other process pays
// nothing more.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { createBudget, createSessions, fetchWithL402, getPaymentReceipt, providerWallet, type Fetch, type Wallet } from 'l402-paywall/client';
import { scriptedSessionLedger } from 'l402-paywall/lightning';
import { formatSessionCredential } from '../../src/mpp.js';
import { sseEvents } from '../support/sse.js';
import { redisDevNodeStore } from '../support/redis-dev-node-store.js';
import { REDIS_URL, redisReachable } from '../support/redis.js';

const SAT = 1000;
const PUBLIC = 'https://llm.example';
const redisUp = await redisReachable();
const prefix = `test:session-stream-processes:${randomUUID()}:`;
const settings = {
  REDIS_URL,
  METERED_PREFIX: prefix,
  L402_SECRET: 'session-stream-processes-secret-0123456789abcdef',
  DEV_NODE_KEY: randomBytes(32).toString('hex'),
  METERED_CHUNKS: '25',
};

interface Instance {
  url: string;
  child: ChildProcess;
}

/** Starts metered-stream-instance.ts as a child process; its stdin is a pipe from us, so it ends with us. */
async function startInstance(): Promise<Instance> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('../support/metered-stream-instance.ts', import.meta.url))], {
    env: { PATH: process.env.PATH ?? '', ...settings },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const found = /^listening (http:\/\/\S+)$/m.exec(output)?.[1];
      if (found) resolve(found);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`metered-stream-instance exited (${code}) before it was ready:\n${output}`)));
  });
  return { url, child };
}

async function stop({ child }: Instance): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

/** A load balancer in front of the instances: each request goes to the first one not holding a stream open. */
function balancer(instances: Instance[]) {
  const streaming = instances.map(() => false);
  const served: string[] = [];
  const fetch: Fetch = async (input, init) => {
    const request = new Request(input, init);
    const index = Math.max(0, streaming.indexOf(false));
    const target = new URL(request.url);
    target.host = new URL(instances[index]!.url).host;
    target.protocol = 'http:';
    const response = await globalThis.fetch(new Request(target, request));
    const action = actionOf(request.headers.get('authorization'));
    served.push(`${'AB'[index]}:${action}:${response.status}`);
    if (!response.body || !response.headers.get('content-type')?.startsWith('text/event-stream')) return response;
    streaming[index] = true;
    const free = () => {
      streaming[index] = false;
    };
    const body = response.body.pipeThrough(new TransformStream({ flush: free }));
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetch, served };
}

/** The session action a Payment credential carries ('none' without one). */
function actionOf(authorization: string | null): string {
  if (!authorization?.startsWith('Payment ')) return 'none';
  const credential = JSON.parse(Buffer.from(authorization.slice(8), 'base64url').toString()) as { payload: Record<string, unknown> };
  if ('returnInvoice' in credential.payload) return 'open';
  if ('topUpPreimage' in credential.payload) return 'topUp';
  return 'bearer or close';
}

const run = redisUp ? describe : describe.skip;
let redis: IORedis | undefined;
const instances: Instance[] = [];
beforeAll(async () => {
  if (!redisUp) return;
  redis = new IORedis(REDIS_URL);
  instances.push(...(await Promise.all([startInstance(), startInstance()])));
}, 30_000);
afterAll(async () => {
  await Promise.all(instances.map(stop));
  if (redis) {
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  }
});

run('a metered stream served by two processes sharing Redis', () => {
  it('25 chunks on a 20-sat deposit from process A; the top-up at process B resumes it; the close refunds 15 sats once', async () => {
    const [a, b] = instances as [Instance, Instance];
    expect(a.child.pid).not.toBe(b.child.pid);
    const net = redisDevNodeStore(redis!, prefix);
    const walletNode = createDevNode({ store: net });
    const returnInvoices: string[] = [];
    const wallet: Wallet = {
      network: 'regtest',
      payInvoice: ({ invoice }) => walletNode.pay(invoice),
      async createInvoice({ memo }) {
        const made = await walletNode.createAmountlessInvoice({ memo: memo ?? 'refund', expirySeconds: 3600 });
        returnInvoices.push(made.paymentHash);
        return made;
      },
      lookupInvoice: providerWallet(walletNode).lookupInvoice!,
    };
    const { fetch, served } = balancer([a, b]);
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    const response = await fetchWithL402(`${PUBLIC}/stream`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch });
    expect(response.status).toBe(200);
    expect(getPaymentReceipt(response)?.session?.action).toBe('open');

    const next = sseEvents(response.body!);
    const chunks: string[] = [];
    const events: string[] = [];
    for (let event = await next(); event; event = await next()) {
      if (event.event === 'message' && event.data.startsWith('token ')) chunks.push(event.data);
      else events.push(event.event === 'message' ? event.data : event.event);
      if (chunks.length === 20 && events.length === 0) expect(served).toEqual(['A:none:402', 'A:open:200']);
    }
    expect(chunks).toEqual(Array.from({ length: 25 }, (_, i) => `token ${i + 1}`));
    expect(events).toEqual(['payment-need-topup', 'payment-receipt', '[DONE]']);
    // The stream stayed on A; the top-up's fresh deposit and its credit went to B, a different process.
    expect(served.slice(0, 4)).toEqual(['A:none:402', 'A:open:200', 'B:none:402', 'B:topUp:200']);

    const [held] = sessions.list();
    expect(held!.depositedMsat).toBe(40 * SAT);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ status: 200, refundSats: 15, refundStatus: 'succeeded', creditedMsat: 15 * SAT });
    expect(served[4]).toBe('A:bearer or close:200');
    expect(budget.spent().totalMsat).toBe(25 * SAT);
    expect(returnInvoices).toHaveLength(1);
    expect(await walletNode.lookupInvoice(returnInvoices[0]!)).toMatchObject({ settled: true, amountMsat: 15 * SAT });

    // Closed again at the other process: refused, and nothing more is paid.
    const again = await globalThis.fetch(`${b.url}/stream`, {
      headers: { authorization: formatSessionCredential(held!.challenge, { action: 'close', sessionId: held!.sessionId, preimage: held!.preimage }) },
    });
    expect(again.status).toBe(402);
    expect(((await again.json()) as { type?: string }).type).toMatch(/lightning\/session-closed$/);
    const operator = createDevNode({ store: net, privateKey: settings.DEV_NODE_KEY });
    expect(await operator.balance()).toEqual({ balanceMsat: 25 * SAT });
    const ledger = scriptedSessionLedger((script, keys, args) => redis!.eval(script, keys.length, ...keys, ...args), `${prefix}session:`);
    expect(await ledger.get(held!.sessionId)).toMatchObject({
      status: 'closed',
      paidMsat: 40 * SAT,
      spentMsat: 25 * SAT,
      refund: { state: 'paid', amountMsat: 15 * SAT },
    });
  });

  it('a child ends when its parent does: its stdin closing is enough', async () => {
    const orphan = await startInstance();
    const exited = new Promise<number | null>((resolve) => orphan.child.once('exit', resolve));
    orphan.child.stdin!.end();
    expect(await exited).toBe(0);
  });
});
