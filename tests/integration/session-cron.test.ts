// The payouts cron closes idle prepaid sessions and pays their refunds,
// through the local server (the api/ files Vercel runs): a session opened on
// the demo by the real client and left idle is closed by the cron, and its
// return invoice is paid exactly what was not spent, once; a refund whose
// first payment fails is paid by a later run once its backoff has passed.
// Once on the in-process ledger, once on the Lua ledger behind the Upstash
// REST stand-in in front of a real redis-server (what Vercel runs).
//
// Time moves for the ledger only: every `now` handed to it, and every retry
// time recorded in it, is shifted by `clock.offsetMs`, so "five minutes idle"
// and "after the 30 s backoff" take no waiting. The return invoice's expiry is
// still checked against the real clock.
import { PaymentFailed, decodeInvoice, type LightningProvider, type SessionLedger } from 'l402-paywall/lightning';
import { createBudget, createSessions, devWallet, fetchWithL402 } from 'l402-paywall/client';
import { randomBytes } from 'node:crypto';
import { Redis as IORedis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ServiceContext } from '../../lib/service/context.js';
import { sweepSessions } from '../../lib/service/money/session-refunds.js';
import { redisServerMissing, startThrowawayRedis, type ThrowawayServer } from '../support/throwaway.js';
import { startUpstashRestServer, type UpstashRestServer } from '../../packages/l402-paywall/tests/support/upstash-rest-server.js';
import { useDevServer, type Settings } from '../support/server.js';

const CRON_SECRET = 'session-cron-secret-0123456789abcdef';
const TOKEN = 'session-cron-rest-token';
const SAT = 1000;
const IDLE_MS = 300_000; // the demo's idle timeout (lightningSessions' default)
const WEEK_SECONDS = 7 * 24 * 3600;

interface SweepAnswer {
  closed: number;
  refundsPaid: number;
  failed: number;
  givenUp: number;
  leftOver: boolean;
}

/** The ledger as seen from `offsetMs()` later: every time in, and every retry time recorded, moved forward. */
function shiftedLedger(ledger: SessionLedger, offsetMs: () => number): SessionLedger {
  const at = (now: number) => now + offsetMs();
  return {
    open: (session, now) => ledger.open(session, at(now)),
    spend: (id, amountMsat, now) => ledger.spend(id, amountMsat, at(now)),
    topUp: (id, creditId, amountMsat, now) => ledger.topUp(id, creditId, amountMsat, at(now)),
    close: (id, because, now) => ledger.close(id, because, at(now)),
    get: (id) => ledger.get(id),
    claimRefund: (id, now, leaseMs) => ledger.claimRefund(id, at(now), leaseMs),
    settleRefund: (id, attempt, outcome, now) =>
      ledger.settleRefund(id, attempt, 'retryAt' in outcome ? { ...outcome, retryAt: at(outcome.retryAt) } : outcome, at(now)),
    refundsDue: (now, limit) => ledger.refundsDue(at(now), limit),
    idleSessions: (now, limit) => ledger.idleSessions(at(now), limit),
  };
}

const missingRedis = redisServerMissing();
const ledgers: { name: string; skip: boolean; upstash: boolean }[] = [
  { name: 'in-process ledger', skip: false, upstash: false },
  { name: 'Lua ledger over Upstash REST and Redis', skip: missingRedis !== undefined, upstash: true },
];
let redis: ThrowawayServer | undefined;
let rest: UpstashRestServer | undefined;
// Hooks of the file run before those of its describes: the store is up when a server's config is read.
beforeAll(async () => {
  if (missingRedis) return;
  redis = await startThrowawayRedis();
  rest = await startUpstashRestServer({ redisUrl: redis.url, token: TOKEN });
}, 30_000);
afterAll(async () => {
  await rest?.close();
  await redis?.destroy();
});

describe.each(ledgers)('the cron sweeps idle sessions ($name)', ({ skip, upstash }) => {
  const server = useDevServer(
    (): Settings => ({
      CRON_SECRET,
      DEMO_STREAM_INTERVAL_MS: '0',
      ...(upstash && rest ? { UPSTASH_REDIS_REST_URL: rest.url, UPSTASH_REDIS_REST_TOKEN: TOKEN } : {}),
    }),
  );
  const clock = { offsetMs: 0 };
  let failNextRefund = false;
  let refundCalls = 0;
  let wired: ServiceContext;

  beforeAll(async () => {
    if (skip) return;
    const real: ServiceContext = server.ctx;
    const backend = real.devNode!;
    // The service's own dev node, whose refund payment can be made to fail once, as a route that is not found.
    const flaky: LightningProvider = {
      name: backend.name,
      // Still the dev node, which routes nothing: its refunds are paid whole.
      noRoutingFee: backend.noRoutingFee,
      createInvoice: (request) => backend.createInvoice(request),
      lookupInvoice: (hash) => backend.lookupInvoice(hash),
      lookupPayment: (hash) => backend.lookupPayment(hash),
      balance: () => backend.balance(),
      readWebhook: (delivery) => backend.readWebhook(delivery),
      payInvoice: (request) => backend.payInvoice(request),
      async payAmountlessInvoice(request) {
        refundCalls += 1;
        if (failNextRefund) {
          failNextRefund = false;
          throw new PaymentFailed('no route to the return invoice (test)');
        }
        return backend.payAmountlessInvoice(request);
      },
    };
    wired = { ...real, provider: flaky, sessions: shiftedLedger(real.sessions, () => clock.offsetMs) };
    server.use(wired);
    // The first run opens the database (PGlite, for the payouts' part): slow on a busy machine, so not inside a test.
    await cron();
  }, 60_000);
  beforeEach(() => {
    failNextRefund = false;
  });

  async function cron(): Promise<SweepAnswer> {
    const response = await fetch(`${server.url}/api/cron/payouts`, { headers: { authorization: `Bearer ${CRON_SECRET}` } });
    expect(response.status).toBe(200);
    return ((await response.json()) as { sessions: SweepAnswer }).sessions;
  }

  /** Each session's return invoice, noted while the ledger holds the session (the in-process one forgets it an hour after its refund). */
  const returnHashes = new Map<string, string>();
  /** What the dev wallet's return invoice of session `id` has received, by the dev wallet's own route. */
  async function received(id: string): Promise<{ paid: boolean; amountMsat: number }> {
    if (!returnHashes.has(id)) returnHashes.set(id, decodeInvoice((await server.ctx.sessions.get(id))!.returnInvoice).paymentHash);
    const paymentHash = returnHashes.get(id)!;
    const answer = await fetch(`${server.url}/api/dev/receive/${paymentHash}`);
    expect(answer.status).toBe(200);
    return (await answer.json()) as { paid: boolean; amountMsat: number };
  }

  /** A 20-sat session opened on the demo by the real client, `calls` 1-sat calls made on it, then left alone. */
  async function idleSession(calls: number): Promise<string> {
    const sessions = createSessions({ maxDepositSats: 20 });
    const budget = createBudget({ totalSats: 20 });
    for (let call = 0; call < calls; call++) {
      const response = await fetchWithL402(`${server.url}/api/demo/btc-price`, undefined, {
        wallet: devWallet({ serviceUrl: server.url }),
        maxPriceSats: 1,
        budget,
        sessions,
      });
      expect(response.status).toBe(200);
    }
    const [held] = sessions.list();
    expect(held).toBeDefined();
    return held!.sessionId;
  }

  it.skipIf(skip)('closes a session idle past its timeout and pays its return invoice exactly what was not spent, once', async () => {
    const id = await idleSession(3);
    if (upstash) {
      // The session is where the deployment keeps it: in Redis, through the REST stand-in.
      const direct = new IORedis(redis!.url);
      try {
        expect(await direct.hget(`l402:session:${id}`, 'st')).toBe('open');
      } finally {
        direct.disconnect();
      }
    }
    const record = await server.ctx.sessions.get(id);
    expect(record).toMatchObject({ status: 'open', paidMsat: 20 * SAT, spentMsat: 3 * SAT, idleTimeoutMs: IDLE_MS });
    // The client asked for a return invoice that outlives a day's wait for the cron.
    const returnInvoice = decodeInvoice(record!.returnInvoice);
    expect(returnInvoice.expiresAt - returnInvoice.timestamp).toBe(WEEK_SECONDS);

    // Not idle yet: nothing is closed.
    clock.offsetMs += IDLE_MS - 5_000;
    expect(await cron()).toMatchObject({ closed: 0, refundsPaid: 0, failed: 0, givenUp: 0 });
    expect(await server.ctx.sessions.get(id)).toMatchObject({ status: 'open' });
    expect(await received(id)).toMatchObject({ paid: false });

    clock.offsetMs += 10_000;
    const calls = refundCalls;
    expect(await cron()).toEqual({ closed: 1, refundsPaid: 1, failed: 0, givenUp: 0, leftOver: false });
    expect(refundCalls).toBe(calls + 1);
    expect(await received(id)).toMatchObject({ paid: true, amountMsat: 17 * SAT });
    expect(await server.ctx.sessions.get(id)).toMatchObject({
      status: 'closed',
      closedBecause: 'idle',
      refund: { state: 'paid', amountMsat: 17 * SAT, attempts: 1 },
    });

    // A second run, later still, pays nothing more.
    clock.offsetMs += 3600_000;
    expect(await cron()).toEqual({ closed: 0, refundsPaid: 0, failed: 0, givenUp: 0, leftOver: false });
    expect(refundCalls).toBe(calls + 1);
    expect(await received(id)).toMatchObject({ paid: true, amountMsat: 17 * SAT });
  });

  it.skipIf(skip)('a refund whose first payment fails is retried by a later run after its backoff, and paid once', async () => {
    const id = await idleSession(5);
    clock.offsetMs += IDLE_MS + 1_000;
    failNextRefund = true;
    const calls = refundCalls;
    expect(await cron()).toEqual({ closed: 1, refundsPaid: 0, failed: 1, givenUp: 0, leftOver: false });
    expect(refundCalls).toBe(calls + 1);
    expect(await received(id)).toMatchObject({ paid: false });
    const failed = await server.ctx.sessions.get(id);
    expect(failed).toMatchObject({ status: 'closed', refund: { state: 'failed', amountMsat: 15 * SAT, attempts: 1 } });
    expect(failed!.refund!.lastError).toMatch(/no route to the return invoice/);

    // Within the 30 s backoff: not tried again.
    clock.offsetMs += 20_000;
    expect(await cron()).toEqual({ closed: 0, refundsPaid: 0, failed: 0, givenUp: 0, leftOver: false });
    expect(refundCalls).toBe(calls + 1);

    // After it: paid, once.
    clock.offsetMs += 15_000;
    expect(await cron()).toEqual({ closed: 0, refundsPaid: 1, failed: 0, givenUp: 0, leftOver: false });
    expect(refundCalls).toBe(calls + 2);
    expect(await received(id)).toMatchObject({ paid: true, amountMsat: 15 * SAT });
    expect(await server.ctx.sessions.get(id)).toMatchObject({ refund: { state: 'paid', amountMsat: 15 * SAT, attempts: 2 } });

    clock.offsetMs += 3600_000;
    expect(await cron()).toEqual({ closed: 0, refundsPaid: 0, failed: 0, givenUp: 0, leftOver: false });
    expect(refundCalls).toBe(calls + 2);
    expect(await received(id)).toMatchObject({ paid: true, amountMsat: 15 * SAT });
  });

  it.skipIf(skip)('sweeps more idle sessions than one batch in a run, and starts nothing once its time is spent', async () => {
    // Opened on the ledger directly (each with a return invoice of the dev wallet): what matters here is how many.
    const ids: string[] = [];
    for (let index = 0; index < 12; index++) {
      const made = await devWallet({ serviceUrl: server.url }).createInvoice!({ expirySeconds: WEEK_SECONDS });
      const id = randomBytes(32).toString('hex');
      const opened = await server.ctx.sessions.open({ id, depositMsat: 4 * SAT, returnInvoice: made.invoice, idleTimeoutMs: IDLE_MS }, Date.now());
      expect(opened.ok).toBe(true);
      ids.push(id);
    }
    clock.offsetMs += IDLE_MS + 1_000;

    // A sweep whose deadline has passed touches nothing, and says work may be left.
    expect(await sweepSessions(server.ctx, { deadline: Date.now() - 1 })).toEqual({ closed: 0, refundsPaid: 0, failed: 0, givenUp: 0, leftOver: true });
    for (const id of ids) expect(await server.ctx.sessions.get(id)).toMatchObject({ status: 'open' });

    expect(await cron()).toEqual({ closed: 12, refundsPaid: 12, failed: 0, givenUp: 0, leftOver: false });
    for (const id of ids) expect(await received(id)).toMatchObject({ paid: true, amountMsat: 4 * SAT });
    expect(await cron()).toEqual({ closed: 0, refundsPaid: 0, failed: 0, givenUp: 0, leftOver: false });
  });

  it.skipIf(skip)('a session store that fails stops the sweep, said in the answer; the payouts still run', async () => {
    const down: SessionLedger = {
      ...wired.sessions,
      idleSessions: async () => {
        throw new Error('connection refused (test)');
      },
    };
    server.use({ ...wired, sessions: down });
    try {
      const response = await fetch(`${server.url}/api/cron/payouts`, { headers: { authorization: `Bearer ${CRON_SECRET}` } });
      expect(response.status).toBe(200);
      const body = (await response.json()) as { sessions: SweepAnswer & { error?: string }; payouts: { attempted: number } };
      expect(body.sessions).toMatchObject({ closed: 0, leftOver: true, error: expect.stringContaining('connection refused (test)') });
      expect(body.payouts).toMatchObject({ attempted: expect.any(Number) });
    } finally {
      server.use(wired);
    }
  });
});
