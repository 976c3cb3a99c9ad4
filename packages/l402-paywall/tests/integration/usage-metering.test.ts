// Metering by reported usage (meterByUsage with openAiUsage, docs/sessions.md
// "Metering by reported usage"): a withL402 handler that forwards to an
// OpenAI-compatible upstream (tests/support/fake-openai.ts) under a
// reservation on the request's session, paid by the real client
// (fetchWithL402 with sessions) on the dev node, on the in-process stores and
// on Redis. The session is charged the usage the upstream reports, the rest
// of the reservation going back; an answer without usage, an upstream that
// dies mid-stream and a client that hangs up are charged at the reservation,
// once, and say so in the receipt and the events; a balance short of the
// reservation is asked for a top-up before anything is forwarded.
import { describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { memoryReplayStore, withL402 } from 'l402-paywall';
import { createBudget, createSessions, fetchWithL402, type ClientSessions } from 'l402-paywall/client';
import { lightningSessions, meterByUsage, openAiUsage, type SessionObservation, type SessionSpent } from 'l402-paywall/sessions';
import { sessionEvents } from 'l402-paywall/events';
import { fakeOpenAi, type FakeOpenAi } from '../support/fake-openai.js';
import { sessionRedisUp, useSessionStores, type SessionStores } from '../support/session-stores.js';
import { devNodeWallet } from '../support/dev-wallet.js';

const SECRET = 'usage-metering-test-secret-0123456789abcdef0123';
const URL_ = 'https://llm.example/v1/chat/completions';
const SAT = 1000;

function shop(stores: SessionStores, upstream: FakeOpenAi, depositUnits = 100) {
  const net = memoryDevNodeStore();
  const server = createDevNode({ store: net });
  const node = createDevNode({ store: net });
  const ledger = stores.ledger();
  const observations: SessionObservation[] = [];
  const events: { type: string; data: unknown }[] = [];
  const audit = sessionEvents((event) => void events.push(event as { type: string; data: unknown }), { source: 'https://llm.example', onError: () => {} });
  let forwarded = 0;
  const handler = withL402(
    (request) =>
      meterByUsage(
        request,
        (outgoing) => {
          forwarded++;
          return upstream.fetch(outgoing);
        },
        { meter: openAiUsage() },
      ),
    {
      priceSats: 1,
      provider: server,
      secret: SECRET,
      replayStore: memoryReplayStore(),
      onError: () => {},
      session: lightningSessions({
        unitPriceSats: 1,
        depositUnits,
        ledger,
        idleTimeoutSeconds: 600,
        onSession: (o) => {
          observations.push(o);
          audit(o);
        },
      }),
    },
  );
  const fetch = (input: string | URL | Request, init?: RequestInit) => handler(input instanceof Request ? input : new Request(input, init));
  const wallet = devNodeWallet(node, 86_400);
  const sessions: ClientSessions = createSessions({ maxDepositSats: depositUnits });
  const budget = createBudget({ totalSats: 1000 });
  const call = (body: Record<string, unknown>) =>
    fetchWithL402(
      URL_,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'fake', messages: [{ role: 'user', content: 'hi' }], ...body }),
      },
      { wallet, maxPriceSats: 1, sessions, budget, fetch },
    );
  const spent = () => observations.filter((o): o is SessionSpent => o.type === 'spent');
  return { ledger, sessions, call, spent, events, forwarded: () => forwarded };
}

const sessionOf = async (sessions: ClientSessions) => sessions.list()[0]!.sessionId;
const receiptOf = (response: Response) => JSON.parse(Buffer.from(response.headers.get('payment-receipt')!, 'base64url').toString()) as Record<string, unknown>;

const stores = useSessionStores('usage-metering');
describe.each([
  ['in process', stores.memory, false],
  ['on Redis', stores.onRedis, true],
] as const)('meterByUsage %s', (_name, makeStores, needsRedis) => {
  const run = needsRedis && !sessionRedisUp ? it.skip : it;

  run('a streamed completion (max_tokens 50) reporting 37 tokens: streamed whole, 37 sats spent, 63 refunded on close', async () => {
    const upstream = fakeOpenAi({ totalTokens: 37 });
    const { ledger, sessions, call, spent } = shop(makeStores(), upstream);
    const response = await call({ stream: true, max_tokens: 50 });
    expect(response.status).toBe(200);
    const text = await response.text();
    for (let i = 1; i <= 5; i++) expect(text).toContain(`word${i} `);
    expect(text).toContain('data: [DONE]\n\n');
    // The client did not ask for usage: the upstream was asked, and its usage-only chunk kept from the client.
    expect(upstream.received[0]!.body.stream_options).toEqual({ include_usage: true });
    expect(text).not.toContain('total_tokens');
    // The settled receipt follows [DONE], where OpenAI clients no longer read.
    const receipt = JSON.parse(/event: payment-receipt\ndata: (.*)\n/.exec(text)![1]!);
    expect(receipt).toMatchObject({ units: 37, spent: 37, settled: 'usage' });
    expect(text.indexOf('event: payment-receipt')).toBeGreaterThan(text.indexOf('data: [DONE]'));
    const id = await sessionOf(sessions);
    expect(await ledger.get(id)).toMatchObject({ paidMsat: 100 * SAT, spentMsat: 37 * SAT });
    expect(spent().at(-1)).toMatchObject({
      units: 37,
      amountMsat: 37 * SAT,
      metered: { reservedUnits: 50, usedUnits: 37, chargedUnits: 37, settledAt: 'usage' },
    });
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 63, refundStatus: 'succeeded', receivedMsat: 63 * SAT });
  });

  run('a JSON completion: settled before it is answered, its receipt header says the usage', async () => {
    const upstream = fakeOpenAi({ totalTokens: 20 });
    const { ledger, sessions, call } = shop(makeStores(), upstream);
    const response = await call({ max_completion_tokens: 64 });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ usage: { total_tokens: 20 } });
    expect(receiptOf(response)).toMatchObject({ units: 20, spent: 20, settled: 'usage' });
    // Not streamed: nothing is added to the request.
    expect(upstream.received[0]!.body.stream_options).toBeUndefined();
    expect(await ledger.get(await sessionOf(sessions))).toMatchObject({ spentMsat: 20 * SAT });
    await sessions.closeAll();
  });

  run('a client that asked for usage gets the usage chunk, and pays it', async () => {
    const upstream = fakeOpenAi({ totalTokens: 30 });
    const { ledger, sessions, call } = shop(makeStores(), upstream);
    const text = await (await call({ stream: true, max_tokens: 40, stream_options: { include_usage: true } })).text();
    expect(text).toContain('"total_tokens":30');
    expect(await ledger.get(await sessionOf(sessions))).toMatchObject({ spentMsat: 30 * SAT });
    await sessions.closeAll();
  });

  run('an upstream that never reports usage: charged at the reservation, said so in the receipt and the events', async () => {
    const upstream = fakeOpenAi({ mode: 'no-usage' });
    const { ledger, sessions, call, spent, events } = shop(makeStores(), upstream);
    const text = await (await call({ stream: true, max_tokens: 50 })).text();
    expect(text).toContain('data: [DONE]');
    // The audit event (session.spent) says it too.
    await expect
      .poll(() => JSON.stringify(events.filter((event) => event.type.endsWith('session.spent')).map((event) => event.data)))
      .toContain('"metered":{"reservedUnits":50,"chargedUnits":50,"settledAt":"reservation","reason":"no-usage"}');
    expect(JSON.parse(/event: payment-receipt\ndata: (.*)\n/.exec(text)![1]!)).toMatchObject({
      units: 50,
      settled: 'at reservation',
      settledBecause: 'no-usage',
    });
    expect(spent().at(-1)).toMatchObject({ metered: { reservedUnits: 50, chargedUnits: 50, settledAt: 'reservation', reason: 'no-usage' } });
    const json = await call({ max_tokens: 10 });
    expect(receiptOf(json)).toMatchObject({ units: 10, settled: 'at reservation', settledBecause: 'no-usage' });
    expect(await ledger.get(await sessionOf(sessions))).toMatchObject({ spentMsat: 60 * SAT });
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 40 });
  });

  run('an upstream that dies mid-stream: what came is passed on, the stream errors, charged at the reservation once', async () => {
    const upstream = fakeOpenAi({ mode: 'dies', chunks: 3 });
    const { ledger, sessions, call, spent } = shop(makeStores(), upstream);
    const response = await call({ stream: true, max_tokens: 50 });
    const reader = response.body!.getReader();
    let text = '';
    const failure = await (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return undefined;
        text += new TextDecoder().decode(value);
      }
    })().catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(text).toContain('word3 ');
    const id = await sessionOf(sessions);
    await expect.poll(() => spent().at(-1)?.metered).toMatchObject({ chargedUnits: 50, settledAt: 'reservation', reason: 'upstream-failed' });
    expect(await ledger.get(id)).toMatchObject({ spentMsat: 50 * SAT });
    expect(spent().filter((o) => o.metered)).toHaveLength(1);
    await sessions.closeAll();
  });

  run('a client that hangs up mid-stream: the upstream is stopped, charged at the reservation once', async () => {
    const upstream = fakeOpenAi({ mode: 'holds', chunks: 2 });
    const { ledger, sessions, call, spent } = shop(makeStores(), upstream);
    const response = await call({ stream: true, max_tokens: 30 });
    const reader = response.body!.getReader();
    await reader.read();
    await reader.cancel();
    await upstream.cancelled;
    await expect.poll(() => spent().at(-1)?.metered).toMatchObject({ chargedUnits: 30, settledAt: 'reservation', reason: 'client-gone' });
    expect(await ledger.get(await sessionOf(sessions))).toMatchObject({ spentMsat: 30 * SAT });
    expect(spent().filter((o) => o.metered)).toHaveLength(1);
    await sessions.closeAll();
  });

  run('an upstream error: the reservation is given back whole (the request keeps its own unit), the error passed on', async () => {
    const upstream = fakeOpenAi({ mode: 'error' });
    const { ledger, sessions, call } = shop(makeStores(), upstream);
    const response = await call({ max_tokens: 50 });
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ error: { message: 'model overloaded' } });
    expect(await ledger.get(await sessionOf(sessions))).toMatchObject({ spentMsat: 1 * SAT });
    await sessions.closeAll();
  });

  run('a reservation the balance cannot cover: a 402 to top up before anything is forwarded; topped up, served', async () => {
    const upstream = fakeOpenAi({ totalTokens: 15 });
    const { ledger, sessions, call, forwarded } = shop(makeStores(), upstream, 40);
    expect((await call({ max_tokens: 30 })).status).toBe(200); // 15 spent, 25 left
    expect(forwarded()).toBe(1);
    // 30 more cannot be reserved on 25: the client is asked to top up (the refused request keeps its unit), tops up 40, and is served.
    const response = await call({ max_tokens: 30 });
    expect(response.status).toBe(200);
    expect(forwarded()).toBe(2);
    const record = await ledger.get(await sessionOf(sessions));
    expect(record).toMatchObject({ paidMsat: 80 * SAT, spentMsat: (15 + 1 + 15) * SAT });
    await sessions.closeAll();
  });

  run('an upstream that reports more than it was reserved: charged what the balance covers, never more; nothing left to refund', async () => {
    // 10,000 tokens reported on a 100-sat deposit with 50 reserved: the usage is believed up to the balance, which never goes below zero.
    const upstream = fakeOpenAi({ totalTokens: 10_000 });
    const { ledger, sessions, call, spent } = shop(makeStores(), upstream);
    const response = await call({ max_tokens: 50 });
    expect(response.status).toBe(200);
    expect(receiptOf(response)).toMatchObject({ units: 100, spent: 100, settled: 'usage' });
    const id = await sessionOf(sessions);
    expect(await ledger.get(id)).toMatchObject({ paidMsat: 100 * SAT, spentMsat: 100 * SAT });
    expect(spent().at(-1)).toMatchObject({ metered: { reservedUnits: 50, usedUnits: 10_000, chargedUnits: 100, settledAt: 'usage' } });
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 0 });
  });
});
