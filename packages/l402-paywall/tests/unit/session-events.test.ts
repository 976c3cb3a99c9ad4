// What a prepaid session tells (onSession, src/schemes/session/observer.ts) and the
// audit events built from it (sessionEvents(), src/events/server.ts):
// a route sold by the session through withL402, paid by the real client with
// a dev node wallet, tells opened, spent in batches (never per unit), topped
// up, closed and refunded, in that order; the cron's closeIdleSessions and
// refundDue tell the idle close and every refund attempt (failed with its
// retry time, paid, or given up with its reason) through RefundOptions; each
// observation makes one signed-ready CloudEvent whose id it determines, and
// none carries a preimage.
import { describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { createBudget, createSessions, fetchWithL402, type Fetch, type Wallet } from 'l402-paywall/client';
import { EVENT_TYPES, sessionEventId, sessionEvents, type L402Event } from 'l402-paywall/events';
import {
  EVENT_STREAM_HEADERS,
  PaymentFailed,
  SPENT_BATCH_UNITS,
  closeIdleSessions,
  lightningSessions,
  meteredEventStream,
  memorySessionLedger,
  refundDue,
  type LightningProvider,
  type SessionObservation,
} from 'l402-paywall/lightning';
import { getPayment, withL402, type L402Options, type SessionSeller } from 'l402-paywall';
import { devNodeWallet } from '../support/dev-wallet.js';

const SAT = 1000;

function network() {
  const store = memoryDevNodeStore();
  const node = createDevNode({ store });
  const walletNode = createDevNode({ store });
  const wallet = devNodeWallet(walletNode);
  return { node, walletNode, wallet };
}

const SECRET = 'session-events-secret-0123456789abcdef0123';

/** A route sold by the session alone through withL402 (`extra`: more of its options, e.g. onEvent). */
function sessionRoute(handler: (request: Request) => Response, provider: LightningProvider, session: SessionSeller, extra: Partial<L402Options> = {}) {
  return withL402(handler, { priceSats: 1, provider, secret: SECRET, schemes: { l402: false, payment: false }, session, onError: () => {}, ...extra });
}

/** The real client, holding sessions of at most `maxDepositSats`, paying `route` with `wallet`. */
function sessionClient(route: (request: Request) => Promise<Response>, wallet: Wallet, maxDepositSats: number) {
  const fetch: Fetch = async (input, init) => route(new Request(input, init));
  const sessions = createSessions({ maxDepositSats });
  const get = (url: string) => fetchWithL402(url, undefined, { wallet, maxPriceSats: 1, budget: createBudget({ totalSats: 300 }), sessions, fetch });
  return { sessions, get };
}

const SESSION_EVENT_TYPES: readonly string[] = [
  EVENT_TYPES.sessionOpened,
  EVENT_TYPES.sessionToppedUp,
  EVENT_TYPES.sessionTopUpRefused,
  EVENT_TYPES.sessionSpent,
  EVENT_TYPES.sessionClosed,
  EVENT_TYPES.sessionRefunded,
];

/** Observations as told, and the events built from them. */
function recorder() {
  const told: SessionObservation[] = [];
  const events: L402Event[] = [];
  const builder = sessionEvents((event) => events.push(event), {
    agentId: 'test-seller',
    source: 'https://seller.example',
    onError: (error) => {
      throw error;
    },
  });
  const onSession = (observation: SessionObservation) => {
    told.push(observation);
    builder(observation);
  };
  return { told, events, onSession };
}

describe('a session route through withL402 and the real client', () => {
  it(`tells opened, spent (batched every ${SPENT_BATCH_UNITS} units and at the pause), topped-up, spent, closed, refunded; one event each`, async () => {
    const { node, wallet } = network();
    const { told, events, onSession } = recorder();
    const ledger = memorySessionLedger();
    // 120 one-sat chunks on a 100-sat deposit: the first on the request's own unit, the next paid ahead in reservations of
    // 4, 8, then 16 chunks; a batch told at the first settle that reaches 50 units (61: the request's unit and chunks 2 to 61),
    // the second at the pause (39), a top-up, the last 20 at the end.
    const session = lightningSessions({ unitPriceSats: 1, depositUnits: 100, ledger, onSession });
    const route = sessionRoute(
      (request) =>
        new Response(
          meteredEventStream(
            getPayment(request)!.session!,
            Array.from({ length: 120 }, (_, i) => `chunk ${i + 1}`),
            { pollMs: 10 },
          ),
          { headers: EVENT_STREAM_HEADERS },
        ),
      node,
      session,
    );
    const { sessions, get } = sessionClient(route, wallet, 100);
    const response = await get('https://seller.example/generate');
    const text = await response.text();
    expect(text).toContain('event: payment-need-topup');
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const [held] = sessions.list();
    expect(await sessions.closeAll()).toMatchObject([{ status: 200, refundSats: 80, refundStatus: 'succeeded' }]);

    expect(told.map((o) => o.type)).toEqual(['opened', 'spent', 'spent', 'topped-up', 'spent', 'closed', 'refunded']);
    const spent = told.filter((o) => o.type === 'spent');
    expect(spent.map((o) => [o.units, o.amountMsat, o.spentMsat, o.paidMsat])).toEqual([
      [61, 61 * SAT, 61 * SAT, 100 * SAT],
      [39, 39 * SAT, 100 * SAT, 100 * SAT],
      [20, 20 * SAT, 120 * SAT, 200 * SAT],
    ]);
    expect(told.at(-2)).toMatchObject({
      type: 'closed',
      because: 'client',
      paidMsat: 200 * SAT,
      spentMsat: 120 * SAT,
      refundMsat: 80 * SAT,
      route: '/generate',
    });
    expect(told.at(-1)).toMatchObject({ type: 'refunded', state: 'paid', amountMsat: 80 * SAT, attempt: 1, route: '/generate' });

    expect(events.map((e) => e.type)).toEqual([
      EVENT_TYPES.sessionOpened,
      EVENT_TYPES.sessionSpent,
      EVENT_TYPES.sessionSpent,
      EVENT_TYPES.sessionToppedUp,
      EVENT_TYPES.sessionSpent,
      EVENT_TYPES.sessionClosed,
      EVENT_TYPES.sessionRefunded,
    ]);
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length);
    for (const event of events) {
      expect(event).toMatchObject({
        specversion: '1.0',
        source: 'https://seller.example',
        subject: '/generate',
        data: { session: { id: held!.sessionId, kind: 'prepaid' } },
      });
      expect(JSON.stringify(event)).not.toContain(held!.preimage);
      expect(JSON.stringify(event)).not.toMatch(/"[a-z]*preimage"\s*:/i);
    }
  });
});

describe('a session found idle on its next request', () => {
  it('tells the idle close and its refund, paid at once, after what it spent', async () => {
    const { node, wallet } = network();
    const { told, events, onSession } = recorder();
    const session = lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 1, ledger: memorySessionLedger(), onSession });
    const { sessions, get } = sessionClient(
      sessionRoute(() => Response.json({ ok: true }), node, session),
      wallet,
      20,
    );
    expect((await get('https://seller.example/price')).status).toBe(200);
    const first = sessions.list()[0]!.sessionId;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The held session is refused as closed; the client opens another.
    expect((await get('https://seller.example/price')).status).toBe(200);
    await sessions.closeAll();
    const ofFirst = told.filter((o) => o.sessionId === first);
    expect(ofFirst.map((o) => o.type)).toEqual(['opened', 'spent', 'closed', 'refunded']);
    expect(ofFirst[2]).toMatchObject({ because: 'idle', paidMsat: 20 * SAT, spentMsat: SAT, refundMsat: 19 * SAT, route: '/price' });
    expect(ofFirst[3]).toMatchObject({ state: 'paid', amountMsat: 19 * SAT, attempt: 1, route: '/price' });
    expect(events.filter((e) => e.data.session?.id === first).map((e) => e.type)).toEqual([
      EVENT_TYPES.sessionOpened,
      EVENT_TYPES.sessionSpent,
      EVENT_TYPES.sessionClosed,
      EVENT_TYPES.sessionRefunded,
    ]);
  });
});

describe("one pipeline: withL402's onEvent carries the session's events", () => {
  /** Opens a session on a fresh route, spends a unit, closes it: the session's id, and the events onEvent got. */
  async function openSpendClose(options: { onSession?: (observation: SessionObservation) => void }) {
    const { node, wallet } = network();
    const events: L402Event[] = [];
    const session = lightningSessions({ unitPriceSats: 1, depositUnits: 20, ledger: memorySessionLedger(), ...options });
    const route = sessionRoute(() => Response.json({ ok: true }), node, session, {
      onEvent: (event) => void events.push(event),
      events: { agentId: 'test-seller', source: 'https://seller.example' },
    });
    const { sessions, get } = sessionClient(route, wallet, 20);
    expect((await get('https://seller.example/price')).status).toBe(200);
    const id = sessions.list()[0]!.sessionId;
    expect(await sessions.closeAll()).toMatchObject([{ status: 200, refundStatus: 'succeeded' }]);
    const ofSession = () => events.filter((event) => SESSION_EVENT_TYPES.includes(event.type));
    await expect.poll(() => ofSession().length).toBe(4);
    return { id, events: ofSession() };
  }

  it("with onEvent alone (no onSession), each of a session's events once, signed-ready and naming the route", async () => {
    const { id, events } = await openSpendClose({});
    expect(events.map((event) => event.type)).toEqual([
      EVENT_TYPES.sessionOpened,
      EVENT_TYPES.sessionSpent,
      EVENT_TYPES.sessionClosed,
      EVENT_TYPES.sessionRefunded,
    ]);
    expect(new Set(events.map((event) => event.id)).size).toBe(4);
    for (const event of events)
      expect(event).toMatchObject({
        source: 'https://seller.example',
        subject: '/price',
        data: { agent: { id: 'test-seller' }, session: { id, kind: 'prepaid' } },
      });
    // Nothing more comes later (a second copy of the pipeline would post each again).
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(events).toHaveLength(4);
  });

  it('with onSession too, the observer is told each observation once and onEvent gets each event once', async () => {
    const told: SessionObservation[] = [];
    const { events } = await openSpendClose({ onSession: (observation) => void told.push(observation) });
    expect(told.map((observation) => observation.type)).toEqual(['opened', 'spent', 'closed', 'refunded']);
    expect(events.map((event) => event.id)).toEqual(told.map((observation) => sessionEventId(observation)));
  });
});

describe('the cron: closeIdleSessions and refundDue tell through RefundOptions.onSession', () => {
  async function idleSession() {
    const { node, walletNode } = network();
    const ledger = memorySessionLedger();
    const deposit = await node.createInvoice({ amountMsat: 20 * SAT, memo: 'deposit' });
    await walletNode.pay(deposit.invoice);
    const returnInvoice = await walletNode.createAmountlessInvoice({ memo: 'refund', expirySeconds: 3600 });
    const now = Date.now();
    await ledger.open({ id: deposit.paymentHash, depositMsat: 20 * SAT, returnInvoice: returnInvoice.invoice, idleTimeoutMs: 1000 }, now);
    await ledger.spend(deposit.paymentHash, 5 * SAT, now);
    return { node, ledger, id: deposit.paymentHash, now };
  }

  it('an idle close, a failed attempt with its retry time, then paid: each told, each one event caused by the close', async () => {
    const { node, ledger, id, now } = await idleSession();
    const { told, events, onSession } = recorder();
    let failures = 1;
    const flaky: LightningProvider = {
      ...node,
      payAmountlessInvoice: async (request) => {
        if (failures-- > 0) throw new PaymentFailed('no route');
        return node.payAmountlessInvoice!(request);
      },
    };
    let clock = now + 2000;
    const options = { ledger, provider: flaky, now: () => clock, backoffMs: () => 30_000, onSession };
    expect(await closeIdleSessions(options)).toMatchObject([{ id, result: 'failed' }]);
    clock += 30_000;
    expect(await refundDue(options)).toMatchObject([{ id, result: 'paid', amountMsat: 15 * SAT }]);

    expect(told).toEqual([
      { type: 'closed', sessionId: id, because: 'idle', paidMsat: 20 * SAT, spentMsat: 5 * SAT, refundMsat: 15 * SAT, at: now + 2000 },
      { type: 'refunded', sessionId: id, state: 'failed', amountMsat: 15 * SAT, attempt: 1, error: 'no route', retryAt: now + 32_000, at: now + 2000 },
      { type: 'refunded', sessionId: id, state: 'paid', amountMsat: 15 * SAT, attempt: 2, at: now + 32_000 },
    ]);
    const [closed, failed, paid] = events as [L402Event, L402Event, L402Event];
    // The cron knows no route: the subject names the session.
    expect(closed).toMatchObject({ type: EVENT_TYPES.sessionClosed, subject: `session:${id}`, data: { prepaid: { because: 'idle', refundMsat: 15 * SAT } } });
    expect(failed.data.prepaid).toEqual({
      refund: { state: 'failed', amountMsat: 15 * SAT, attempt: 1, error: 'no route', retryAt: new Date(now + 32_000).toISOString() },
    });
    expect(paid.data.prepaid).toEqual({ refund: { state: 'paid', amountMsat: 15 * SAT, attempt: 2 } });
    for (const event of [failed, paid]) expect(event.data.causation.causationId).toBe(closed.id);
    // A retried report of the same outcome is the same event (receivers deduplicate on its id).
    const again = recorder();
    again.onSession(told[2]!);
    expect(again.events[0]!.id).toBe(paid.id);
  });

  it('a refund given up tells its reason', async () => {
    const { node, ledger, now } = await idleSession();
    const { told, events, onSession } = recorder();
    const broken: LightningProvider = {
      ...node,
      payAmountlessInvoice: async () => {
        throw new PaymentFailed('no route');
      },
    };
    await closeIdleSessions({ ledger, provider: broken, now: () => now + 2000, maxAttempts: 1, onSession });
    expect(told.at(-1)).toMatchObject({ type: 'refunded', state: 'given-up', attempt: 1, reason: expect.stringContaining('no route') });
    expect(events.at(-1)!.data.prepaid).toMatchObject({ refund: { state: 'given-up', reason: expect.stringContaining('not paid after 1 attempts') } });
  });

  it('an observer that throws or rejects never stops a refund', async () => {
    const { node, ledger, id, now } = await idleSession();
    const errors: string[] = [];
    const onError = (error: unknown, context: string) => errors.push(`${context}: ${(error as Error).message}`);
    const reports = await closeIdleSessions({
      ledger,
      provider: node,
      now: () => now + 2000,
      onError,
      onSession: (observation) => {
        if (observation.type === 'closed') throw new Error('boom');
        return Promise.reject(new Error('later boom'));
      },
    });
    expect(reports).toMatchObject([{ id, result: 'paid' }]);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(errors).toEqual(['onSession failed: boom', 'onSession failed: later boom']);
  });
});

describe('challenge.issued on a route sold by the session alone', () => {
  it('names the deposit invoice for the deposit, not the unit price', async () => {
    const { node } = network();
    const events: L402Event[] = [];
    const route = withL402(() => new Response('never served unpaid'), {
      priceSats: 1,
      provider: node,
      secret: SECRET,
      schemes: { l402: false, payment: false },
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, ledger: memorySessionLedger() }),
      onEvent: (event) => void events.push(event),
    });
    const answer = await route(new Request('https://seller.example/stream'));
    expect(answer.status).toBe(402);
    const body = (await answer.json()) as { invoice: string; session: { depositInvoice: string } };
    expect(body.invoice).toBe(body.session.depositInvoice);
    await expect.poll(() => events.length).toBeGreaterThan(0);
    const issued = events.find((event) => event.type === EVENT_TYPES.challengeIssued)!;
    expect(issued.data).toMatchObject({ payment: { amountMsat: 20 * SAT, invoice: body.invoice } });
  });
});
