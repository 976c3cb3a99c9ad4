// A streamed answer metered per chunk on a prepaid session
// (meteredEventStream, l402-paywall/lightning): 25 chunks on a 20-sat deposit
// at 1 sat a chunk pause after 20 with `payment-need-topup`; a top-up paid and
// presented to another paywall instance sharing the ledger in Redis resumes
// the held stream; it finishes with `payment-receipt` and `[DONE]`; the close
// refunds exactly what was not spent to the client's return invoice. With no
// top-up the stream ends with `session-timeout`, and a chunk is never sent
// unpaid. Real paywalls, real dev Lightning nodes, the real redis-server.
import { describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { getPayment, withL402, type SessionUse } from 'l402-paywall';
import { EVENT_STREAM_HEADERS, lightningSessions, memorySessionLedger, meteredEventStream, type SessionLedger } from 'l402-paywall/lightning';
import { formatSessionCredential, parsePaymentChallenges, readLightningSession, type LightningSessionOffer } from '../../src/mpp.js';
import { sessionRedisUp, useSessionStores, type SessionStores } from '../support/session-stores.js';
import { sseEvents as events } from '../support/sse.js';

const SECRET = 'session-stream-test-secret-0123456789abcdef012345';
const URL_STREAM = 'https://llm.example/stream';
const SAT = 1000;
const redisUp = sessionRedisUp;
const { memory, onRedis } = useSessionStores('session-stream');
type Shared = SessionStores;

/** A paywalled route answering `stream(session)` of the request's session (one-sat units, `depositUnits` a deposit), on these stores. */
function streamingRoute(
  stores: SessionStores,
  provider: ReturnType<typeof createDevNode>,
  depositUnits: number,
  stream: (session: SessionUse) => ReadableStream<Uint8Array>,
  ledger = stores.ledger(),
) {
  return withL402((request: Request) => new Response(stream(getPayment(request)!.session!), { headers: EVENT_STREAM_HEADERS }), {
    priceSats: 50,
    provider,
    secret: SECRET,
    replayStore: stores.replayStore(),
    onError: () => {},
    session: lightningSessions({ unitPriceSats: 1, depositUnits, idleTimeoutSeconds: 600, ledger }),
  });
}

/** The session challenge of a 402, read. */
function sessionChallengeOf(response: Response) {
  const challenge = parsePaymentChallenges(response.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session')!;
  const read = readLightningSession(challenge);
  if (!read.ok) throw new Error(read.detail);
  return { challenge, session: read.session };
}

/** Two paywall instances of one streaming route, sharing the stores and the server's node; the client's wallet node beside them. */
function llm(shared: Shared, chunks = 25, topUpTimeoutMs = 10_000) {
  const net = memoryDevNodeStore();
  const server = createDevNode({ store: net });
  const wallet = createDevNode({ store: net });
  const words = Array.from({ length: chunks }, (_, i) => `token ${i + 1}`);
  const instance = () => streamingRoute(shared, server, 20, (session) => meteredEventStream(session, words, { topUpTimeoutMs, pollMs: 20 }));
  const [first, second] = [instance(), instance()];
  const call = (handler: (r: Request) => Promise<Response>, authorization?: string) =>
    handler(new Request(URL_STREAM, { headers: authorization ? { authorization } : {} }));
  const offer = async (handler: (r: Request) => Promise<Response>): Promise<LightningSessionOffer> => {
    const response = await call(handler);
    expect(response.status).toBe(402);
    return sessionChallengeOf(response).session;
  };
  return { server, wallet, first, second, call, offer, ledger: shared.ledger() };
}

describe.each([
  ['the in-process ledger', memory, false],
  ['the Lua ledger on the real redis-server, two paywall instances', onRedis, true],
] as const)('a metered stream on %s', (_name, shared, needsRedis) => {
  const run = needsRedis && !redisUp ? it.skip : it;

  run('25 chunks on a 20-sat deposit: 20, then payment-need-topup; a top-up at the other instance resumes it; the close refunds the rest', async () => {
    const shop = llm(shared());
    const opened = await shop.offer(shop.first);
    const { preimage } = await shop.wallet.pay(opened.depositInvoice);
    const returned = await shop.wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 86_400 });
    const stream = await shop.call(shop.first, formatSessionCredential(opened.challenge, { action: 'open', preimage, returnInvoice: returned.invoice }));
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    const next = events(stream.body!);
    const received: string[] = [];
    let event = await next();
    while (event?.event === 'message') {
      received.push(event.data);
      event = await next();
    }
    expect(received).toEqual(Array.from({ length: 20 }, (_, i) => `token ${i + 1}`));
    expect(event).toEqual({ event: 'payment-need-topup', data: JSON.stringify({ sessionId: opened.paymentHash, balanceSpent: 20, balanceRequired: 1 }) });

    // The top-up: a fresh deposit of the other instance, paid, presented there.
    const more = await shop.offer(shop.second);
    const paid = await shop.wallet.pay(more.depositInvoice);
    const topUp = await shop.call(
      shop.second,
      formatSessionCredential(more.challenge, { action: 'topUp', sessionId: opened.paymentHash, topUpPreimage: paid.preimage }),
    );
    expect(topUp.status).toBe(200);
    expect(await topUp.json()).toEqual({ status: 'ok' });

    event = await next();
    while (event?.event === 'message') {
      received.push(event.data);
      event = await next();
    }
    expect(received).toEqual(Array.from({ length: 25 }, (_, i) => `token ${i + 1}`));
    expect(event?.event).toBe('payment-receipt');
    expect(JSON.parse(event!.data)).toMatchObject({ method: 'lightning', reference: opened.paymentHash, status: 'success', spent: 25, units: 25 });
    expect(await next()).toEqual({ event: 'message', data: '[DONE]' });
    expect(await next()).toBeUndefined();

    // close echoes the challenge the session was opened with (docs/sessions.md), not the top-up's.
    const closed = await shop.call(shop.second, formatSessionCredential(opened.challenge, { action: 'close', sessionId: opened.paymentHash, preimage }));
    expect(closed.status).toBe(200);
    expect(await closed.json()).toMatchObject({ status: 'closed', refundSats: 15, refundStatus: 'succeeded' });
    expect(await shop.wallet.lookupInvoice(returned.paymentHash)).toMatchObject({ settled: true, amountMsat: 15 * SAT });
    expect(await shop.ledger.get(opened.paymentHash)).toMatchObject({
      paidMsat: 40 * SAT,
      spentMsat: 25 * SAT,
      refund: { state: 'paid', amountMsat: 15 * SAT },
    });
  });

  run('no top-up: session-timeout after the wait, the stream ends, no chunk is sent unpaid', async () => {
    const shop = llm(shared(), 25, 200);
    const opened = await shop.offer(shop.first);
    const { preimage } = await shop.wallet.pay(opened.depositInvoice);
    const returned = await shop.wallet.createAmountlessInvoice({});
    const stream = await shop.call(shop.first, formatSessionCredential(opened.challenge, { action: 'open', preimage, returnInvoice: returned.invoice }));
    const next = events(stream.body!);
    const seen: string[] = [];
    for (let event = await next(); event; event = await next()) seen.push(event.event === 'message' ? 'chunk' : event.event);
    expect(seen).toEqual([...Array(20).fill('chunk'), 'payment-need-topup', 'session-timeout']);
    expect(await shop.ledger.get(opened.paymentHash)).toMatchObject({ paidMsat: 20 * SAT, spentMsat: 20 * SAT, status: 'open' });
  });
});

describe.each([
  ['the in-process stores', memory, false],
  ['the Lua ledger and the replay store on the real redis-server, two paywall instances', onRedis, true],
] as const)('one held stream per session, %s', (_name, shared, needsRedis) => {
  const run = needsRedis && !redisUp ? it.skip : it;

  run(
    'another stream that runs dry while one is held ends at once with session-timeout, on either instance; with units left the hold is the long one, empty the short one',
    async () => {
      const stores = shared();
      const net = memoryDevNodeStore();
      const server = createDevNode({ store: net });
      const wallet = createDevNode({ store: net });
      // Chunks of 4 units on a 10-unit deposit: a stream runs dry with units left, and a bearer request can still start another.
      const instance = () =>
        streamingRoute(stores, server, 10, (session) =>
          meteredEventStream(session, ['a', 'b', 'c', 'd'], { unitsPerChunk: 4, topUpTimeoutMs: 3_000, emptyTopUpTimeoutMs: 200, pollMs: 20 }),
        );
      const [first, second] = [instance(), instance()];
      const call = (handler: (r: Request) => Promise<Response>, authorization: string) => handler(new Request(URL_STREAM, { headers: { authorization } }));
      const read = sessionChallengeOf(await first(new Request(URL_STREAM)));
      const { challenge } = read;
      const { preimage } = await wallet.pay(read.session.depositInvoice);
      const returned = await wallet.createAmountlessInvoice({});
      const sessionId = read.session.paymentHash;
      const bearer = formatSessionCredential(challenge, { action: 'bearer', sessionId, preimage });
      /** A stream's events up to its end, each with when it came. */
      const all = async (response: Response) => {
        const next = events(response.body!);
        const seen: { event: string; at: number }[] = [];
        for (let event = await next(); event; event = await next()) seen.push({ event: event.event === 'message' ? 'chunk' : event.event, at: Date.now() });
        return seen;
      };

      // A, on the first instance: 'a' and 'b' (1 + 3 + 4 units), then 2 units left, short of 'c': held for the long wait.
      const a = events((await call(first, formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice: returned.invoice }))).body!);
      expect([(await a())?.event, (await a())?.event, (await a())?.event]).toEqual(['message', 'message', 'payment-need-topup']);
      const heldAt = Date.now();
      // B, on the second instance, while A is held: its own unit, then short of its first chunk: it ends at once, nothing sent.
      const b = await all(await call(second, bearer));
      expect(b.map((e) => e.event)).toEqual(['session-timeout']);
      expect(b[0]!.at - heldAt).toBeLessThan(2_000);
      // A holds on for its whole wait (units were left), then ends, giving the hold back.
      expect(await a()).toMatchObject({ event: 'session-timeout' });
      expect(Date.now() - heldAt).toBeGreaterThanOrEqual(2_900);
      expect(await a()).toBeUndefined();
      // C, on the second instance: the last unit, and now the balance is empty: it holds (the mark was given back), for the short wait.
      const c = await all(await call(second, bearer));
      expect(c.map((e) => e.event)).toEqual(['payment-need-topup', 'session-timeout']);
      expect(c[1]!.at - c[0]!.at).toBeLessThan(2_000);
      expect(await stores.ledger().get(sessionId)).toMatchObject({ paidMsat: 10 * SAT, spentMsat: 10 * SAT, status: 'open' });
    },
  );
});

describe.each([
  ['the in-process ledger', memory, false],
  ['the Lua ledger on the real redis-server', onRedis, true],
] as const)('chunks paid ahead in reservations, %s', (_name, shared, needsRedis) => {
  const run = needsRedis && !redisUp ? it.skip : it;

  /** A streaming route of `chunks` one-sat chunks on a 200-sat deposit, counting the ledger steps its requests take. */
  async function streamed(chunks: number, options: { reserveChunks?: number } = {}) {
    const stores = shared();
    const inner = stores.ledger();
    let steps = 0;
    const ledger = new Proxy(inner, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (name !== 'get') steps++;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    const net = memoryDevNodeStore();
    const server = createDevNode({ store: net });
    const wallet = createDevNode({ store: net });
    const words = Array.from({ length: chunks }, (_, i) => `token ${i + 1}`);
    const route = streamingRoute(stores, server, 200, (session) => meteredEventStream(session, words, options), ledger as SessionLedger);
    const read = sessionChallengeOf(await route(new Request(URL_STREAM)));
    const { challenge } = read;
    const { preimage } = await wallet.pay(read.session.depositInvoice);
    const returned = await wallet.createAmountlessInvoice({});
    steps = 0;
    const response = await route(
      new Request(URL_STREAM, {
        headers: { authorization: formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice: returned.invoice }) },
      }),
    );
    const close = async () => {
      const credential = formatSessionCredential(challenge, { action: 'close', sessionId: read.session.paymentHash, preimage });
      return (await route(new Request(URL_STREAM, { headers: { authorization: credential } }))).json() as Promise<{ refundSats: number }>;
    };
    return { response, close, steps: () => steps, spentMsat: async () => (await inner.get(read.session.paymentHash))?.spentMsat };
  }

  run(
    '100 chunks take a handful of ledger steps, not one a chunk; each sent chunk is paid once, and a client that hangs up pays only what it got',
    async () => {
      const whole = await streamed(100);
      const text = await whole.response.text();
      expect(text.match(/^data: token \d+$/gm)).toHaveLength(100);
      expect(JSON.parse(/event: payment-receipt\ndata: (.*)\n/.exec(text)![1]!)).toMatchObject({ spent: 100, units: 100 });
      await expect.poll(whole.spentMsat).toBe(100 * SAT);
      // The open, then a reservation and a settle each for 4 + 8 + 16 x 5 + 8 chunks.
      expect(whole.steps()).toBeLessThanOrEqual(20);

      const byChunk = await streamed(100, { reserveChunks: 1 });
      await byChunk.response.text();
      await expect.poll(byChunk.spentMsat).toBe(100 * SAT);
      expect(byChunk.steps()).toBeGreaterThanOrEqual(100);

      // Hung up after 10 chunks, with a reservation of 8 more open (4 + 8 reserved): the 2 not sent go back.
      const cut = await streamed(100);
      const reader = cut.response.body!.getReader();
      let got = '';
      while (!got.includes('data: token 10\n')) got += new TextDecoder().decode((await reader.read()).value);
      expect(got).not.toContain('token 11');
      await reader.cancel();
      await expect.poll(cut.spentMsat).toBeLessThanOrEqual(11 * SAT);
      expect(await cut.spentMsat()).toBeGreaterThanOrEqual(10 * SAT);
    },
  );

  run(
    'a client that closes its session under its own running stream: the stream ends, no chunk goes out unpaid, and it pays at most one reservation (16 chunks) beyond what it got',
    async () => {
      const hostile = await streamed(150);
      const reader = hostile.response.body!.getReader();
      let got = '';
      // 40 chunks in, a reservation of 16 is open (4 + 8 + 16 + 16 reserved by then).
      while (!got.includes('data: token 40\n')) got += new TextDecoder().decode((await reader.read()).value);
      const closed = await hostile.close();
      for (let part = await reader.read(); !part.done; part = await reader.read()) got += new TextDecoder().decode(part.value);
      const sent = got.match(/^data: token \d+$/gm)!.length;
      expect(sent).toBeGreaterThanOrEqual(40);
      expect(sent).toBeLessThan(150);
      expect(got).toMatch(/event: session-closed\ndata: \{"sessionId":"[0-9a-f]{64}","reason":"closed"\}\n\n$/);
      const spent = (await hostile.spentMsat())! / SAT;
      // Every chunk sent was paid for, and what was held for chunks never sent is at most one reservation.
      expect(spent).toBeGreaterThanOrEqual(sent);
      expect(spent).toBeLessThanOrEqual(sent + 16);
      // The deposit is 200: what was not spent went back, and nothing was counted twice.
      expect(closed.refundSats + spent).toBeLessThanOrEqual(200);
      expect(closed.refundSats).toBeGreaterThanOrEqual(200 - sent - 16);
    },
  );
});

describe('meteredEventStream on its own', () => {
  it('a session closed while held ends the stream with session-closed; a client that hangs up stops the source and pays nothing for the chunk under way', async () => {
    const ledger = memorySessionLedger();
    const id = 'c'.repeat(64);
    await ledger.open({ id, depositMsat: 2 * SAT, returnInvoice: 'lnbcrt1return', idleTimeoutMs: 600_000 }, Date.now());
    await ledger.spend(id, SAT, Date.now()); // the request's own unit
    const session = { id, unitPriceSats: 1, spend: (units: number) => ledger.spend(id, units * SAT, Date.now()) };
    const next = events(meteredEventStream(session, ['a', 'b', 'c', 'd'], { pollMs: 10, topUpTimeoutMs: 5_000 }));
    expect(await next()).toEqual({ event: 'message', data: 'a' });
    expect(await next()).toEqual({ event: 'message', data: 'b' });
    expect((await next())?.event).toBe('payment-need-topup');
    await ledger.close(id, 'client', Date.now());
    expect(await next()).toEqual({ event: 'session-closed', data: JSON.stringify({ sessionId: id, reason: 'closed' }) });
    expect(await next()).toBeUndefined();

    let stopped = false;
    async function* source() {
      try {
        for (let i = 0; ; i++) yield `line ${i}\nsecond line`;
      } finally {
        stopped = true;
      }
    }
    const other = 'd'.repeat(64);
    await ledger.open({ id: other, depositMsat: 100 * SAT, returnInvoice: 'lnbcrt1return', idleTimeoutMs: 600_000 }, Date.now());
    const body = meteredEventStream({ id: other, unitPriceSats: 1, spend: (units) => ledger.spend(other, units * SAT, Date.now()) }, source());
    const reader = body.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toBe('data: line 0\ndata: second line\n\n');
    await reader.cancel();
    expect(stopped).toBe(true);

    // Hung up while the source produces the next chunk: that chunk is not charged.
    let produce = () => {};
    async function* slow() {
      yield 'first';
      await new Promise<void>((resolve) => (produce = resolve));
      yield 'second';
    }
    const third = 'e'.repeat(64);
    await ledger.open({ id: third, depositMsat: 100 * SAT, returnInvoice: 'lnbcrt1return', idleTimeoutMs: 600_000 }, Date.now());
    const slowReader = meteredEventStream({ id: third, unitPriceSats: 1, spend: (units) => ledger.spend(third, units * SAT, Date.now()) }, slow()).getReader();
    await slowReader.read();
    await new Promise((resolve) => setTimeout(resolve, 10)); // the stream is pulling the second chunk now
    const cancelled = slowReader.cancel();
    produce();
    await cancelled;
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await ledger.get(third))?.spentMsat).toBe(0); // 'first' rode on the request's own unit

    // Hung up while held: the wait is cut short and the session's hold given back at once, not at the next try.
    const fourth = 'f'.repeat(64);
    await ledger.open({ id: fourth, depositMsat: SAT, returnInvoice: 'lnbcrt1return', idleTimeoutMs: 600_000 }, Date.now());
    await ledger.spend(fourth, SAT, Date.now());
    const marks: string[] = [];
    const holding: SessionUse = {
      id: fourth,
      unitPriceSats: 1,
      spend: (units) => ledger.spend(fourth, units * SAT, Date.now()),
      claimTopUpWait: async () => {
        marks.push('claimed');
        return async () => {
          marks.push('released');
        };
      },
    };
    const held = meteredEventStream(holding, ['a', 'b'], { pollMs: 60_000, topUpTimeoutMs: 60_000 }).getReader();
    await held.read(); // 'a', on the request's own unit
    expect(new TextDecoder().decode((await held.read()).value)).toContain('event: payment-need-topup');
    const hungUpAt = Date.now();
    await held.cancel();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(marks).toEqual(['claimed', 'released']);
    expect(Date.now() - hungUpAt).toBeLessThan(5_000);

    expect(() => meteredEventStream(undefined as never, [])).toThrow(TypeError);
    expect(() => meteredEventStream(session, [], { unitsPerChunk: 0 })).toThrow(RangeError);
    expect(() => meteredEventStream(session, [], { maxPollMs: Number.NaN })).toThrow(RangeError);
  });
});
