// A stream that runs dry holds the connection for a top-up: through the local
// server, on the demo's metered stream (GET /api/demo/stream), 25 concurrent
// streams on a session with 19 units left serve 19 streams of one chunk each;
// when they run dry, one of them holds (payment-need-topup) and the 18 others
// end at once with session-timeout, instead of 19 connections held for a
// minute each. The held one tries the ledger again less and less often (a
// handful of spends in 6 s, not one every 250 ms), and a close ends it.
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionLedger } from 'l402-paywall/lightning';
import type { ServiceContext } from '../../lib/service/context.js';
import { formatSessionCredential, parsePaymentChallenges, readLightningSession } from 'l402-paywall/mpp';
import { sseEvents, type ServerSentEvent } from '../../packages/l402-paywall/tests/support/sse.js';
import { useDemoServer } from '../support/demo-sessions.js';

const demo = useDemoServer('demo-stream-hold-secret-0123456789abcdef0123456789');
const STREAM = '/api/demo/stream?chunks=200';

/** The server's context with its session ledger's spends and its replay store's claims counted. */
function counted(ctx: ServiceContext) {
  const calls = { spend: 0, claim: 0, release: 0 };
  const ledger = ctx.sessions;
  const sessions: SessionLedger = {
    ...ledger,
    spend: (...args) => {
      calls.spend += 1;
      return ledger.spend(...args);
    },
  };
  const replay = {
    ...ctx.replay,
    claim: (...args: Parameters<ServiceContext['replay']['claim']>) => {
      calls.claim += 1;
      return ctx.replay.claim(...args);
    },
    release: (...args: Parameters<ServiceContext['replay']['release']>) => {
      calls.release += 1;
      return ctx.replay.release(...args);
    },
  };
  return { ctx: { ...ctx, sessions, replay }, calls };
}

const post = async (path: string, body: unknown) => {
  const response = await fetch(`${demo.server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(response.status, path).toBe(200);
  return (await response.json()) as Record<string, string>;
};

/** Reads a stream's events up to a top-up demand or its end: the chunks it sent and the last event (undefined at the body's end). */
async function untilDryOrEnd(next: () => Promise<ServerSentEvent | undefined>) {
  let chunks = 0;
  for (;;) {
    const event = await next();
    if (event?.event !== 'message') return { chunks, last: event?.event, at: Date.now() };
    if (event.data !== '[DONE]') chunks += 1;
  }
}

afterEach(() => demo.server.restore());

describe('the demo stream: one held stream per session', () => {
  it('25 concurrent streams on 19 units: 19 served, one holds for a top-up, 18 end at once with session-timeout; the hold polls with backoff and a close ends it', async () => {
    // Chunks 2 s apart: every bearer request lands before any stream asks for its second chunk.
    demo.deploy({ DEMO_STREAM_INTERVAL_MS: '2000' });
    const { ctx, calls } = counted(demo.server.ctx);
    demo.server.use(ctx);
    const url = `${demo.server.url}${STREAM}`;

    const offered = await fetch(url);
    expect(offered.status).toBe(402);
    const challenge = parsePaymentChallenges(offered.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session')!;
    const read = readLightningSession(challenge);
    if (!read.ok) throw new Error(read.detail);
    const sessionId = read.session.paymentHash;
    const { preimage } = await post('/api/dev/pay', { invoice: read.session.depositInvoice });
    const { invoice: returnInvoice } = await post('/api/dev/receive', { memo: 'refund' });
    // Opened on a one-chunk stream: 19 of the 20 units left.
    const opened = await fetch(`${demo.server.url}/api/demo/stream?chunks=1`, {
      headers: { authorization: formatSessionCredential(challenge, { action: 'open', preimage: preimage!, returnInvoice: returnInvoice! }) },
    });
    expect(opened.status).toBe(200);
    expect((await untilDryOrEnd(sseEvents(opened.body!))).chunks).toBe(1);

    const bearer = formatSessionCredential(challenge, { action: 'bearer', sessionId, preimage: preimage! });
    const claimsBefore = calls.claim; // the deposit's, at open
    const started = Date.now();
    const answers = await Promise.all(Array.from({ length: 25 }, () => fetch(url, { headers: { authorization: bearer } })));
    expect(answers.map((a) => a.status).sort()).toEqual([...Array(19).fill(200), ...Array(6).fill(402)]);
    for (const refused of answers.filter((a) => a.status === 402)) expect(await refused.json()).toMatchObject({ code: 'INSUFFICIENT_BALANCE' });

    const streams = answers.filter((a) => a.status === 200).map((a) => sseEvents(a.body!));
    const firstStops = await Promise.all(streams.map((next) => untilDryOrEnd(next)));
    expect(firstStops.map((s) => s.chunks)).toEqual(Array(19).fill(1));
    // One holds; the 18 others ended with session-timeout as soon as they ran dry (their second chunk is due 2 s in).
    expect(firstStops.filter((s) => s.last === 'payment-need-topup')).toHaveLength(1);
    const ended = firstStops.filter((s) => s.last === 'session-timeout');
    expect(ended).toHaveLength(18);
    for (const stop of ended) expect(stop.at - started).toBeLessThan(10_000);
    const heldIndex = firstStops.findIndex((s) => s.last === 'payment-need-topup');
    for (const [i, next] of streams.entries()) if (i !== heldIndex) expect(await next()).toBeUndefined();
    // Each stream that ran dry asked for the session's one hold once: one got it.
    expect(calls.claim - claimsBefore).toBe(19);

    // While held: 6 s cost a handful of spends (250 ms, doubling to 2 s), where polling every 250 ms cost 24 per held stream.
    const before = { ...calls };
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    const spentInHold = calls.spend - before.spend;
    expect(spentInHold).toBeGreaterThanOrEqual(3);
    expect(spentInHold).toBeLessThanOrEqual(7);
    expect(calls.claim).toBe(before.claim);

    // The client closes: the held stream ends with session-closed at its next try, and gives its mark back.
    const closed = await fetch(url, { headers: { authorization: formatSessionCredential(challenge, { action: 'close', sessionId, preimage: preimage! }) } });
    expect(closed.status).toBe(200);
    expect(await closed.json()).toMatchObject({ status: 'closed', refundSats: 0, refundStatus: 'skipped' });
    const held = streams[heldIndex]!;
    expect(await held()).toMatchObject({ event: 'session-closed' });
    expect(await held()).toBeUndefined();
    expect(calls.release).toBe(1);
  }, 60_000);
});
