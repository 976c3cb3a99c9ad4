// The hosted service's audit events against the real local server: with
// EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET pointing at a local receiver, a
// paid demo request and a Pro activation post signed CloudEvents there (the
// standardwebhooks library verifies them, the cloudevents SDK reads them),
// carrying the payment hash and amount and never the preimage or macaroon.
// Unset, the service has no event sink at all.
import { randomBytes } from 'node:crypto';
import { type CloudEvent, HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { EVENT_TYPES, EVENT_TYPE_PREFIX, generateEventSecret, verifyEvent, type L402Event } from 'l402-paywall/events';
import { plainHeaders, startEventReceiver, type EventReceiver } from '../../packages/l402-paywall/tests/support/event-receiver.js';
import { startServerProcess } from '../support/server-process.js';
import { createLogin } from '../../lib/service/accounts/auth.js';
import { devLoginKey } from '../../lib/service/accounts/dev-login-key.js';
import { useDevServer, type ChallengeBody, type TestServer } from '../support/server.js';
import { requestNamingHost } from '../support/host-header.js';
import { createBudget, createSessions, devWallet, fetchWithL402 } from 'l402-paywall/client';
import type { SessionObservation } from 'l402-paywall/lightning';

const SECRET = generateEventSecret();

const SESSION_EVENT_PREFIX = `${EVENT_TYPE_PREFIX}.server.session.`;

async function payDemoInvoice(base: string, invoice: string): Promise<string> {
  const response = await fetch(`${base}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice }) });
  expect(response.status).toBe(200);
  return ((await response.json()) as { preimage: string }).preimage;
}

// A session opens the database first: PGlite's start-up takes seconds on a busy machine.
const SESSION_TIMEOUT = { timeout: 60_000 };

/** GET /api/health as an admin session sees it: the dev wallet's key, an admin locally. */
async function healthDetails(server: TestServer): Promise<unknown> {
  const { token } = await createLogin(server.ctx, devLoginKey(server.ctx)!.pubkey);
  return (await fetch(`${server.url}/api/health`, { headers: { authorization: `Bearer ${token}` } })).json();
}

describe('EVENTS_WEBHOOK_URL set to a local receiver', () => {
  let receiver: EventReceiver;
  beforeAll(async () => {
    receiver = await startEventReceiver();
  });
  afterAll(() => receiver.close());
  const server = useDevServer(() => ({ EVENTS_WEBHOOK_URL: receiver.url, EVENTS_WEBHOOK_SECRET: SECRET }));

  /** Every delivery so far, verified with standardwebhooks and read back with the cloudevents SDK. */
  async function delivered(): Promise<L402Event[]> {
    await server.ctx.events!.flush();
    return receiver.deliveries.map((delivery) => {
      expect(delivery.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
      const headers = plainHeaders(delivery.headers);
      const event = new Webhook(SECRET).verify(delivery.body, headers) as L402Event;
      expect(verifyEvent(delivery.body, headers, SECRET)).toEqual(event);
      const ce = HTTP.toEvent({ headers, body: delivery.body }) as CloudEvent<unknown>;
      expect(ce.validate()).toBe(true);
      return event;
    });
  }

  it('a paid demo request yields signed challenge.issued and request.served with the payment hash and amount, never the preimage or macaroon', async () => {
    const base = server.url;
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const challenge = await fetch(`${base}/api/demo/btc-price`, { headers: { traceparent, 'l402-agent-id': 'test-agent' } });
    expect(challenge.status).toBe(402);
    const body = (await challenge.json()) as ChallengeBody;
    const preimage = await payDemoInvoice(base, body.invoice);
    const paid = await fetch(`${base}/api/demo/btc-price`, { headers: { authorization: `L402 ${body.macaroon}:${preimage}`, traceparent } });
    expect(paid.status).toBe(200);

    await vi.waitFor(() => expect(receiver.deliveries.length).toBeGreaterThanOrEqual(2));
    const events = (await delivered()).filter((e) => e.data.payment?.paymentHash === body.paymentHash);
    expect(events.map((e) => e.type)).toEqual([EVENT_TYPES.challengeIssued, EVENT_TYPES.serverRequestServed]);
    const [issued, served] = events as [L402Event, L402Event];
    expect(issued).toMatchObject({
      source: base,
      subject: '/api/demo/btc-price',
      data: {
        agent: { id: 'l402-paywall-service', declared: { id: 'test-agent', proven: false } },
        payment: { paymentHash: body.paymentHash, amountMsat: 1000, invoice: body.invoice },
        causation: { traceStarted: false },
      },
    });
    expect(issued.traceparent.slice(0, 36)).toBe(traceparent.slice(0, 36));
    expect(served).toMatchObject({
      subject: '/api/demo/btc-price',
      data: { payment: { paymentHash: body.paymentHash, amountMsat: 1000 }, causation: { causationId: issued.id }, context: { method: 'GET', status: 200 } },
    });

    for (const delivery of receiver.deliveries) {
      const wire = JSON.stringify(delivery);
      expect(wire).not.toContain(preimage);
      expect(wire).not.toContain(body.macaroon);
    }
  });

  it('Pro: the offer is challenge.issued, the activation request.served, a second activation token.rejected ALREADY_ACTIVATED', async () => {
    const base = server.url;
    receiver.deliveries.length = 0;
    const offer = (await (await fetch(`${base}/api/dev-token?address=events@example.com`)).json()) as {
      invoice: string;
      macaroon: string;
      paymentHash: string;
    };
    const preimage = await payDemoInvoice(base, offer.invoice);
    const activate = () =>
      fetch(`${base}/api/dev-token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ macaroon: offer.macaroon, preimage }),
      });
    expect((await activate()).status).toBe(200);
    expect((await activate()).status).toBe(409);

    await vi.waitFor(() => expect(receiver.deliveries.length).toBeGreaterThanOrEqual(3));
    const events = await delivered();
    expect(events.map((e) => [e.type, e.subject])).toEqual([
      [EVENT_TYPES.challengeIssued, '/api/dev-token'],
      [EVENT_TYPES.serverRequestServed, '/api/dev-token'],
      [EVENT_TYPES.tokenRejected, '/api/dev-token'],
    ]);
    expect(events[0]!.data).toMatchObject({ payment: { paymentHash: offer.paymentHash, amountMsat: 9_000_000 }, context: { status: 200 } });
    expect(events[1]!.data).toMatchObject({ payment: { paymentHash: offer.paymentHash, amountMsat: 9_000_000 }, causation: { causationId: events[0]!.id } });
    expect(events[2]!.data).toMatchObject({ reason: 'ALREADY_ACTIVATED', claimedPaymentHash: offer.paymentHash, context: { status: 409 } });
    const wire = JSON.stringify(receiver.deliveries);
    expect(wire).not.toContain(preimage);
    expect(wire).not.toContain(offer.macaroon);
  });

  it("a refused credential naming someone else's payment, sent with a chosen Host and the victim's traceparent, signs no claim as fact", async () => {
    const base = server.url;
    receiver.deliveries.length = 0;
    const victimTrace = '00-5e1f7a0b2c3d4e5f60718293a4b5c6d7-1122334455667788-01';
    // The victim's demo challenge and Pro offer: their payment hashes are public (invoices, events), their preimages are not.
    const demo = (await (await fetch(`${base}/api/demo/btc-price`, { headers: { traceparent: victimTrace } })).json()) as ChallengeBody;
    const pro = (await (await fetch(`${base}/api/dev-token?address=victim@example.com`, { headers: { traceparent: victimTrace } })).json()) as {
      invoice: string;
      macaroon: string;
      paymentHash: string;
    };
    const guessedPreimage = randomBytes(32).toString('hex');

    // The attacker re-signs nothing: it breaks each token's signature and sends it naming its own host.
    const forge = (token: string) => {
      // The macaroon's signature is its last 32 bytes.
      const bytes = Buffer.from(token, 'base64');
      bytes.fill(0xee, bytes.length - 32);
      return bytes.toString('base64');
    };
    const demoAnswer = await requestNamingHost(`${base}/api/demo/btc-price`, 'attacker.example', {
      headers: { traceparent: victimTrace, authorization: `L402 ${forge(demo.macaroon)}:${guessedPreimage}` },
    });
    expect(demoAnswer.status).toBe(402);
    expect(JSON.parse(demoAnswer.body)).toMatchObject({ code: 'BAD_SIGNATURE' });
    const proAnswer = await requestNamingHost(`${base}/api/dev-token`, 'attacker.example', {
      method: 'POST',
      headers: { traceparent: victimTrace, 'content-type': 'application/json' },
      body: JSON.stringify({ macaroon: forge(pro.macaroon), preimage: guessedPreimage }),
    });
    expect(proAnswer.status).toBe(403);
    expect(JSON.parse(proAnswer.body)).toMatchObject({ code: 'BAD_SIGNATURE' });

    const victims = [demo.paymentHash, pro.paymentHash];
    const rejectedOf = (events: L402Event[]) => events.filter((e) => e.type === EVENT_TYPES.tokenRejected && victims.includes(e.data.claimedPaymentHash ?? ''));
    await vi.waitFor(async () => expect(rejectedOf(await delivered())).toHaveLength(2));
    const events = await delivered();
    const rejected = rejectedOf(events);
    expect(rejected.map((e) => [e.subject, e.data.claimedPaymentHash])).toEqual([
      ['/api/demo/btc-price', demo.paymentHash],
      ['/api/dev-token', pro.paymentHash],
    ]);
    for (const event of rejected) {
      expect(event.data.session).toBeUndefined(); // never {id: <victim's hash>, kind: "payment"}
      expect(event.source).toBe(base); // the service's own origin from its configuration, not the Host sent
      expect(event.data).toMatchObject({ reason: 'BAD_SIGNATURE', claimedTraceparent: victimTrace, causation: { traceStarted: true } });
      expect(event.traceparent).not.toContain(victimTrace.slice(3, 35)); // not in the victim's trace
    }
    // Only the victim's own requests joined the victim's trace.
    const inVictimTrace = events.filter((e) => e.traceparent.includes(victimTrace.slice(3, 35)));
    expect(inVictimTrace.map((e) => e.data.payment?.paymentHash)).toEqual(victims);
    expect(JSON.stringify(receiver.deliveries)).not.toContain('attacker.example');
  });

  it('/api/health names the receiver host (never its path) and the delivery counts to an admin session, and nothing of them to anyone else', async () => {
    const report = (await healthDetails(server)) as { events: Record<string, unknown> };
    expect(report.events).toMatchObject({ configured: true, host: new URL(receiver.url).host, failed: 0, dropped: 0 });
    expect(report.events.delivered).toBeGreaterThanOrEqual(5);
    expect(JSON.stringify(report)).not.toContain('/hooks/l402');
    expect(JSON.stringify(report)).not.toContain(SECRET);
    expect(await (await fetch(`${server.url}/api/health`)).json()).not.toHaveProperty('events');
  });
});

describe('EVENTS_WEBHOOK_URL set: a prepaid session of the demo', () => {
  let receiver: EventReceiver;
  beforeAll(async () => {
    receiver = await startEventReceiver();
  });
  afterAll(() => receiver.close());
  const server = useDevServer(() => ({ EVENTS_WEBHOOK_URL: receiver.url, EVENTS_WEBHOOK_SECRET: SECRET, DEMO_STREAM_INTERVAL_MS: '0' }));

  it('opened, spent, topped-up, spent, closed, refunded: exactly these, in this order, signed, spending batched, no preimage or secret', async () => {
    // The session events the demo's paywall hands its onEvent (the service's sink), in the order it hands them
    // (deliveries may overtake each other); the observer for events outside a paywall (the cron's) is never told.
    const told: string[] = [];
    const outsidePaywall: SessionObservation[] = [];
    const events = server.ctx.events!;
    server.use({
      ...server.ctx,
      events: {
        ...events,
        paywall: {
          ...events.paywall,
          onEvent: (event) => {
            if (event.type.startsWith(SESSION_EVENT_PREFIX)) told.push(event.type.slice(SESSION_EVENT_PREFIX.length));
            return events.paywall.onEvent(event);
          },
        },
        sessions: (observation) => {
          outsidePaywall.push(observation);
          events.sessions(observation);
        },
      },
    });
    const sessions = createSessions({ maxDepositSats: 20 });
    let sessionId = '';
    let preimage = '';
    try {
      const response = await fetchWithL402(`${server.url}/api/demo/stream?chunks=25`, undefined, {
        wallet: devWallet({ serviceUrl: server.url }),
        maxPriceSats: 1,
        budget: createBudget({ totalSats: 100 }),
        sessions,
      });
      expect(await response.text()).toContain('event: payment-need-topup');
      ({ sessionId, preimage } = sessions.list()[0]!);
      expect(await sessions.closeAll()).toMatchObject([{ status: 200, refundSats: 15, refundStatus: 'succeeded' }]);
    } finally {
      await sessions.closeAll();
      server.restore();
    }
    await vi.waitFor(() => expect(told).toHaveLength(6));
    // 25 units in two batches: the 20 before the pause for a top-up, the 5 after it at the stream's end.
    expect(told).toEqual(['opened', 'spent', 'topped-up', 'spent', 'closed', 'refunded']);
    expect(outsidePaywall).toEqual([]);

    await events.flush();
    const delivered = receiver.deliveries.map((delivery) => {
      const headers = plainHeaders(delivery.headers);
      const event = new Webhook(SECRET).verify(delivery.body, headers) as L402Event;
      expect(verifyEvent(delivery.body, headers, SECRET)).toEqual(event);
      expect((HTTP.toEvent({ headers, body: delivery.body }) as CloudEvent<unknown>).validate()).toBe(true);
      return event;
    });
    // Each once: the paywall's onEvent is their one way out.
    const session = delivered.filter((e) => e.type.startsWith(SESSION_EVENT_PREFIX));
    expect(session.map((e) => e.type).sort()).toEqual(
      [
        EVENT_TYPES.sessionOpened,
        EVENT_TYPES.sessionSpent,
        EVENT_TYPES.sessionToppedUp,
        EVENT_TYPES.sessionSpent,
        EVENT_TYPES.sessionClosed,
        EVENT_TYPES.sessionRefunded,
      ].sort(),
    );
    const one = (type: string, index = 0) => session.filter((e) => e.type === type)[index]!;
    const spent = session.filter((e) => e.type === EVENT_TYPES.sessionSpent).sort((a, b) => a.data.prepaid!.spentMsat! - b.data.prepaid!.spentMsat!);
    const opened = one(EVENT_TYPES.sessionOpened);
    const closed = one(EVENT_TYPES.sessionClosed);
    for (const event of session) {
      expect(event).toMatchObject({
        source: server.url,
        subject: '/api/demo/stream',
        data: { agent: { id: 'l402-paywall-service' }, session: { id: sessionId, kind: 'prepaid' } },
      });
      // One trace per session, named by its id.
      expect(event.traceparent.slice(3, 35)).toBe(sessionId.slice(0, 32));
    }
    expect(opened.data).toMatchObject({ payment: { paymentHash: sessionId, amountMsat: 20_000 }, prepaid: { unitPriceMsat: 1000 } });
    expect(spent.map((e) => e.data.prepaid)).toEqual([
      { units: 20, amountMsat: 20_000, spentMsat: 20_000, paidMsat: 20_000 },
      { units: 5, amountMsat: 5000, spentMsat: 25_000, paidMsat: 40_000 },
    ]);
    const toppedUp = one(EVENT_TYPES.sessionToppedUp);
    expect(toppedUp.data).toMatchObject({ payment: { amountMsat: 20_000 }, prepaid: { closedBeforehand: false }, causation: { causationId: opened.id } });
    expect(toppedUp.data.payment!.paymentHash).not.toBe(sessionId);
    expect(closed.data).toMatchObject({
      prepaid: { because: 'client', paidMsat: 40_000, spentMsat: 25_000, refundMsat: 15_000 },
      causation: { causationId: opened.id },
    });
    expect(one(EVENT_TYPES.sessionRefunded).data).toMatchObject({
      prepaid: { refund: { state: 'paid', amountMsat: 15_000, attempt: 1 } },
      causation: { causationId: closed.id },
    });
    // Times in the order the session lived them.
    const inOrder = [opened, spent[0]!, toppedUp, spent[1]!, closed, one(EVENT_TYPES.sessionRefunded)].map((e) => Date.parse(e.time));
    expect([...inOrder].sort((a, b) => a - b)).toEqual(inOrder);
    for (const delivery of receiver.deliveries) {
      expect(delivery.body).not.toContain(preimage);
      expect(delivery.body).not.toContain(SECRET);
      // No preimage member anywhere (the word is in PAYMENT_VERIFICATION's text, which says how to check one).
      expect(delivery.body).not.toMatch(/"[a-z]*preimage"\s*:/i);
    }
  });
});

describe('EVENTS_WEBHOOK_URL unset', () => {
  const server = useDevServer();

  it('the service has no event sink, health says so, and the paid demo works as before', SESSION_TIMEOUT, async () => {
    const base = server.url;
    const challenge = (await (await fetch(`${base}/api/demo/btc-price`)).json()) as ChallengeBody;
    const preimage = await payDemoInvoice(base, challenge.invoice);
    expect((await fetch(`${base}/api/demo/btc-price`, { headers: { authorization: `L402 ${challenge.macaroon}:${preimage}` } })).status).toBe(200);
    expect(server.ctx.events).toBeUndefined();
    expect(((await healthDetails(server)) as { events: unknown }).events).toEqual({ configured: false });
  });
});

describe('an EVENTS_WEBHOOK_SECRET the signer cannot use', () => {
  it('stops the server at start-up naming the setting and how to make one, rather than answering 500 on every route', { timeout: 120_000 }, async () => {
    // Base64 without its = padding: the signer refuses it, so the configuration must too.
    const unpadded = SECRET.replace(/=+$/, '');
    expect(unpadded).not.toBe(SECRET);
    const started = startServerProcess({ EVENTS_WEBHOOK_URL: 'http://127.0.0.1:9/hooks', EVENTS_WEBHOOK_SECRET: unpadded });
    await expect(started.then((server) => server.stop())).rejects.toThrow(
      /exited \(1\) before it was ready:\nInvalid environment: EVENTS_WEBHOOK_SECRET: .*not base64; echo "whsec_\$\(openssl rand -base64 32\)" makes one/,
    );
  });
});
