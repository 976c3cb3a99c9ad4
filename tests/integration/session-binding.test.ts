// Only the client that opened a prepaid session can spend or close it
// (docs/sessions.md, "Where we differ from the draft"), through the local
// server (the same api/ files Vercel runs). A session's id is public (the
// deposit's payment hash: in logs, events, tool results), and every routing
// node of the deposit learns its preimage with it; the demo's preimage route
// never hands a deposit's preimage out. What spends and closes a session is the
// preimage with the challenge the session was opened with, which went to the
// opener alone and whose id nobody else can make (an HMAC under the server's
// secret). A client written to draft-lightning-session-00 with mppx's codecs
// that echoes its opening challenge keeps working; echoing a fresh challenge
// is refused with a problem type and a code that say so.
import { Challenge, Credential } from 'mppx';
import { describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({
  L402_SECRET: 'session-binding-secret-0123456789abcdef0123456789',
  DATABASE_URL: undefined,
  DEMO_STREAM_INTERVAL_MS: '0',
  INVOICE_RATE_LIMIT_PER_MINUTE: '1000',
}));
const SAT = 1000;
const ROUTE = '/api/demo/btc-price';

type MppxChallenge = ReturnType<typeof Challenge.deserialize>;
interface Refusal {
  code?: string;
  type?: string;
  error?: string;
}

/** A fresh 402 of the route, and its session challenge as mppx reads it. */
async function sessionChallenge(route = ROUTE): Promise<MppxChallenge> {
  const response = await fetch(`${server.url}${route}`);
  expect(response.status).toBe(402);
  await response.body?.cancel();
  const found = Challenge.fromHeadersList(response.headers).find((challenge) => challenge.intent === 'session');
  expect(found).toMatchObject({ method: 'lightning', intent: 'session' });
  return found!;
}

const requestOf = (challenge: MppxChallenge) => challenge.request as { paymentHash: string; depositInvoice: string; depositAmount: string };

/** Pays an invoice with the service's dev wallet: its preimage. */
async function pay(invoice: string): Promise<string> {
  const paid = await fetch(`${server.url}/api/dev/pay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ invoice }) });
  expect(paid.status).toBe(200);
  return ((await paid.json()) as { preimage: string }).preimage;
}

/** An invoice without an amount from the dev wallet, for the refund. */
async function returnInvoice(): Promise<{ invoice: string; paymentHash: string }> {
  const made = await fetch(`${server.url}/api/dev/receive`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  expect(made.status).toBe(200);
  return (await made.json()) as { invoice: string; paymentHash: string };
}

/** A request with a session credential written by mppx's codecs. */
const act = (challenge: MppxChallenge, payload: Record<string, string>, route = ROUTE) =>
  fetch(`${server.url}${route}`, { headers: { authorization: Credential.serialize(Credential.from({ challenge, payload })) } });

/** A client as draft-lightning-session-00 writes it, with mppx's codecs: opens a session on a fresh 402 and keeps what it needs. */
async function openSession(route = ROUTE) {
  const opening = await sessionChallenge(route);
  const { paymentHash, depositInvoice } = requestOf(opening);
  const preimage = await pay(depositInvoice);
  const refundTo = await returnInvoice();
  const opened = await act(opening, { action: 'open', preimage, returnInvoice: refundTo.invoice }, route);
  expect(opened.status).toBe(200);
  await opened.body?.cancel();
  return { opening, sessionId: paymentHash, preimage, refundTo };
}

const ledgerOf = (sessionId: string) => server.ctx.sessions.get(sessionId);

describe('a prepaid session is spent and closed by its opener only', () => {
  it('mppx, echoing the challenge it opened with: open, bearer and close work, the refund paid to its return invoice', async () => {
    const { opening, sessionId, preimage, refundTo } = await openSession();
    for (let i = 0; i < 3; i++) {
      const served = await act(opening, { action: 'bearer', sessionId, preimage });
      expect(served.status).toBe(200);
      expect(await served.json()).toHaveProperty('usd');
    }
    const closed = await act(opening, { action: 'close', sessionId, preimage });
    expect(closed.status).toBe(200);
    expect(await closed.json()).toMatchObject({ status: 'closed', refundSats: 16, refundStatus: 'succeeded' });
    expect(await ledgerOf(sessionId)).toMatchObject({ status: 'closed', paidMsat: 20 * SAT, spentMsat: 4 * SAT, refund: { state: 'paid' } });
    expect(await (await fetch(`${server.url}/api/dev/receive/${refundTo.paymentHash}`)).json()).toMatchObject({ paid: true, amountMsat: 16 * SAT });
  });

  it('mppx, echoing a fresh challenge on bearer and close (the draft\'s "most recent"): refused, invalid-challenge SESSION_CHALLENGE_MISMATCH, nothing spent', async () => {
    const { opening, sessionId, preimage } = await openSession();
    const fresh = await sessionChallenge();
    for (const action of ['bearer', 'close'] as const) {
      const refused = await act(fresh, { action, sessionId, preimage });
      expect(refused.status, action).toBe(402);
      expect((await refused.json()) as Refusal, action).toMatchObject({
        code: 'SESSION_CHALLENGE_MISMATCH',
        type: 'https://paymentauth.org/problems/invalid-challenge',
        error: expect.stringMatching(/the challenge the session was opened with/),
      });
    }
    expect(await ledgerOf(sessionId)).toMatchObject({ status: 'open', spentMsat: 1 * SAT });
    // Its own opening challenge still spends.
    expect((await act(opening, { action: 'bearer', sessionId, preimage })).status).toBe(200);
    expect((await act(opening, { action: 'close', sessionId, preimage })).status).toBe(200);
  });

  it("a stranger with the session's id and its preimage (a routing node of the deposit) can neither spend nor close it, not even after topping it up", async () => {
    const victim = await openSession();
    const { sessionId, preimage } = victim;
    // The stranger's own challenges: a fresh 402's, and the one its own top-up of the victim's session was paid with.
    const own = await sessionChallenge();
    const bearer = { action: 'bearer', sessionId, preimage };
    const close = { action: 'close', sessionId, preimage };
    for (const payload of [bearer, close]) expect(((await (await act(own, payload)).json()) as Refusal).code).toBe('SESSION_CHALLENGE_MISMATCH');
    // A challenge that names the session's deposit, as the stranger could write one from what is public: its id is not ours.
    const forged = { ...own, request: { ...own.request, paymentHash: sessionId, depositInvoice: requestOf(own).depositInvoice } } as MppxChallenge;
    for (const payload of [bearer, close]) expect(((await (await act(forged, payload)).json()) as Refusal).code).toBe('UNKNOWN_CHALLENGE');
    // Topping the session up buys the stranger nothing: the top-up's challenge names another deposit.
    const topUpPreimage = await pay(requestOf(own).depositInvoice);
    const toppedUp = await act(own, { action: 'topUp', sessionId, topUpPreimage });
    expect(toppedUp.status).toBe(200);
    for (const payload of [bearer, close]) expect(((await (await act(own, payload)).json()) as Refusal).code).toBe('SESSION_CHALLENGE_MISMATCH');
    // On another route (the stream), with the same secrets: refused too, nothing spent.
    const stream = await sessionChallenge('/api/demo/stream?chunks=1');
    expect((await act(stream, bearer, '/api/demo/stream?chunks=1')).status).toBe(402);
    expect(await ledgerOf(sessionId)).toMatchObject({ status: 'open', paidMsat: 40 * SAT, spentMsat: 1 * SAT });
    // The victim goes on, and closes with everything it did not spend.
    expect((await act(victim.opening, bearer)).status).toBe(200);
    const closed = await act(victim.opening, close);
    expect(await closed.json()).toMatchObject({ status: 'closed', refundSats: 38, refundStatus: 'succeeded' });
  });

  it("GET /api/demo/preimage never hands out a session deposit's or top-up's preimage; the charge's it does", async () => {
    const { opening, sessionId, preimage } = await openSession('/api/demo/stream?chunks=1');
    const deposit = await fetch(`${server.url}/api/demo/preimage?hash=${sessionId}`);
    expect(deposit.status).toBe(403);
    const refusal = await deposit.text();
    expect(JSON.parse(refusal)).toMatchObject({ code: 'SESSION_DEPOSIT' });
    expect(refusal).not.toContain(preimage);
    // A top-up's invoice (a fresh 402's deposit), paid: refused as well.
    const topUp = await sessionChallenge('/api/demo/stream?chunks=1');
    await pay(requestOf(topUp).depositInvoice);
    expect((await fetch(`${server.url}/api/demo/preimage?hash=${requestOf(topUp).paymentHash}`)).status).toBe(403);
    // The btc-price route's deposit too, beside its charge: the charge's preimage is still handed back (wallets that hide it).
    const both = await fetch(`${server.url}${ROUTE}`);
    const body = (await both.json()) as { invoice: string; paymentHash: string; session: { depositInvoice: string; paymentHash: string } };
    const chargePreimage = await pay(body.invoice);
    await pay(body.session.depositInvoice);
    expect(await (await fetch(`${server.url}/api/demo/preimage?hash=${body.paymentHash}`)).json()).toMatchObject({ preimage: chargePreimage });
    expect((await fetch(`${server.url}/api/demo/preimage?hash=${body.session.paymentHash}`)).status).toBe(403);
    await (await act(opening, { action: 'close', sessionId, preimage }, '/api/demo/stream?chunks=1')).body?.cancel();
  });
});
