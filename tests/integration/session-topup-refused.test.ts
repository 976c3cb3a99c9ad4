// A top-up that lands after its session's refund was paid (docs/sessions.md
// "Money is never kept by accident"), through the local server's demo stream:
// the real client opens a session and closes it (its refund paid), then a
// fresh deposit of the route, paid, is presented as a top-up of that session.
// It is refused with SESSION_CLOSED saying the payment was not taken, the
// ledger credits nothing, and the same payment then opens a new session; the
// refusal goes out as a signed session event, into the payment log, and into
// GET /api/stats's sessions block.
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createBudget, createSessions, devWallet, fetchWithL402 } from 'l402-paywall/client';
import { EVENT_TYPES, generateEventSecret, type L402Event } from 'l402-paywall/events';
import { formatSessionCredential, parsePaymentChallenges, readLightningSession, type LightningSessionOffer } from 'l402-paywall/mpp';
import { plainHeaders, startEventReceiver, type EventReceiver } from '../../packages/l402-paywall/tests/support/event-receiver.js';
import { useDevServer } from '../support/server.js';
import { statsReader } from '../support/stats.js';

const SECRET = generateEventSecret();
const ADMIN = `02${'b'.repeat(64)}`;
const ROUTE = '/api/demo/stream';
// Two sessions, four payments, the webhook and the payment log, on a busy machine.
const TIMEOUT = { timeout: 90_000 };

describe('a top-up paid after the refund went out, on the local server', () => {
  let receiver: EventReceiver;
  beforeAll(async () => {
    receiver = await startEventReceiver();
  });
  afterAll(() => receiver.close());
  const server = useDevServer(() => ({
    EVENTS_WEBHOOK_URL: receiver.url,
    EVENTS_WEBHOOK_SECRET: SECRET,
    DEMO_STREAM_INTERVAL_MS: '0',
    ADMIN_PUBKEYS: ADMIN,
    INVOICE_RATE_LIMIT_PER_MINUTE: '100000',
  }));

  /** A fresh 402 of the stream: its session challenge (a deposit, to open or to top up with). */
  const freshOffer = async (): Promise<LightningSessionOffer> => {
    const response = await fetch(`${server.url}${ROUTE}?chunks=1`);
    expect(response.status).toBe(402);
    const challenge = parsePaymentChallenges(response.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session');
    const read = readLightningSession(challenge!);
    if (!read.ok) throw new Error(read.detail);
    return read.session;
  };
  const present = (offer: LightningSessionOffer, payload: Parameters<typeof formatSessionCredential>[1]) =>
    fetch(`${server.url}${ROUTE}?chunks=1`, { headers: { authorization: formatSessionCredential(offer.challenge, payload) } });

  it('is refused and not taken, says so, opens a new session with the same payment, and is told in events and the stats', TIMEOUT, async () => {
    const wallet = devWallet({ serviceUrl: server.url });
    const db = await server.ctx.database();
    // A session opened and closed by the real client: its 19-sat refund paid.
    const sessions = createSessions({ maxDepositSats: 20 });
    const first = await fetchWithL402(`${server.url}${ROUTE}?chunks=1`, undefined, {
      wallet,
      maxPriceSats: 1,
      sessions,
      budget: createBudget({ totalSats: 100 }),
    });
    expect(await first.text()).toContain('data: [DONE]');
    const { sessionId } = sessions.list()[0]!;
    expect(await sessions.closeAll()).toMatchObject([{ status: 200, refundSats: 19, refundStatus: 'succeeded' }]);
    const closed = await server.ctx.sessions.get(sessionId);
    expect(closed).toMatchObject({ status: 'closed', paidMsat: 20_000, spentMsat: 1000, refund: { state: 'paid', amountMsat: 19_000 } });

    // Two top-ups of the closed session, each a fresh deposit of the route, paid.
    const topUps: { offer: LightningSessionOffer; preimage: string }[] = [];
    for (let i = 0; i < 2; i++) {
      const offer = await freshOffer();
      const { preimage } = await wallet.payInvoice({ invoice: offer.depositInvoice });
      topUps.push({ offer, preimage });
    }
    for (const { offer, preimage } of topUps) {
      const refused = await present(offer, { action: 'topUp', sessionId, topUpPreimage: preimage });
      expect(refused.status).toBe(402);
      const body = (await refused.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        code: 'SESSION_CLOSED',
        type: expect.stringMatching(/lightning\/session-closed$/),
        sessionId,
        topUp: { paymentHash: offer.paymentHash, amountSats: 20, taken: false, openBefore: new Date(offer.expiresAt! * 1000).toISOString() },
      });
      expect(body.detail).toMatch(
        /^The session is closed and its refund has already started: this top-up was not taken\. Its payment is still yours: open a new session with it/,
      );
      expect(body.error).toBe(body.detail);
      // Presented again: refused the same way (not DEPOSIT_ALREADY_USED: nothing holds it).
      const again = (await (await present(offer, { action: 'topUp', sessionId, topUpPreimage: preimage })).json()) as Record<string, unknown>;
      expect(again).toMatchObject({ code: 'SESSION_CLOSED', topUp: { taken: false } });
    }
    // Nothing credited, nothing owed on the old session: the ledger is as the close left it.
    expect(await server.ctx.sessions.get(sessionId)).toEqual(closed);

    // The first top-up's payment opens a new session: its own challenge carries its invoice.
    const [reused, unused] = topUps as [(typeof topUps)[number], (typeof topUps)[number]];
    const returnInvoice = await wallet.createInvoice!({ memo: 'refund', expirySeconds: 86_400 });
    const opened = await present(reused.offer, { action: 'open', preimage: reused.preimage, returnInvoice: returnInvoice.invoice });
    expect(opened.status).toBe(200);
    expect(await opened.text()).toContain('data: [DONE]');
    expect(await server.ctx.sessions.get(reused.offer.paymentHash)).toMatchObject({ status: 'open', paidMsat: 20_000, spentMsat: 1000 });
    // Used now: presented as a top-up again it is a deposit already used.
    const spentTopUp = (await (await present(reused.offer, { action: 'topUp', sessionId, topUpPreimage: reused.preimage })).json()) as { code: string };
    expect(spentTopUp.code).toBe('DEPOSIT_ALREADY_USED');

    // The events: one server.session.topup-refused per top-up (its repeat has the same id), signed, no preimage.
    await server.ctx.events!.flush();
    const refusedEvents = () =>
      receiver.deliveries
        .map((delivery) => new Webhook(SECRET).verify(delivery.body, plainHeaders(delivery.headers)) as L402Event)
        .filter((event) => event.type === EVENT_TYPES.sessionTopUpRefused);
    await vi.waitFor(() => expect(new Set(refusedEvents().map((e) => e.id)).size).toBe(2));
    const byHash = new Map(refusedEvents().map((e) => [e.data.payment?.paymentHash, e]));
    for (const { offer } of topUps) {
      expect(byHash.get(offer.paymentHash)).toMatchObject({
        id: `session-${sessionId}-topup-refused-${offer.paymentHash}`,
        subject: ROUTE,
        data: {
          session: { id: sessionId, kind: 'prepaid' },
          payment: { paymentHash: offer.paymentHash, amountMsat: 20_000 },
          prepaid: { refundState: 'paid' },
          causation: { causationId: `session-${sessionId}-opened` },
        },
      });
    }
    for (const delivery of receiver.deliveries) for (const { preimage } of topUps) expect(delivery.body).not.toContain(preimage);

    // The payment log: each refused top-up once, however often told.
    await vi.waitFor(async () =>
      expect(await db.query('SELECT payment_hash, session_id, endpoint, amount_msat, refund_state FROM session_refused_topups ORDER BY payment_hash')).toEqual(
        topUps
          .map(({ offer }) => ({ payment_hash: offer.paymentHash, session_id: sessionId, endpoint: ROUTE, amount_msat: 20_000, refund_state: 'paid' }))
          .sort((a, b) => a.payment_hash.localeCompare(b.payment_hash)),
      ),
    );
    // GET /api/stats: two top-ups refused (40 sats), one of them (the unused one, 20 sats) not used since.
    const stats = await statsReader(server, ADMIN);
    await vi.waitFor(async () => {
      expect(await stats.read()).toMatchObject({ sessions: { count: 2, topUpsRefused: { count: 2, sats: 40, unused: { count: 1, sats: 20 } } } });
    });
    expect(unused.offer.paymentHash).not.toBe(reused.offer.paymentHash);
  });
});
