// Audit events (l402-paywall/events): every event the paywall emits is a
// CloudEvent 1.0 the cloudevents SDK accepts in structured and binary HTTP
// modes; signatures are Standard Webhooks ones the standardwebhooks library
// verifies; verifyEvent refuses tampered, unsigned, wrongly keyed and stale
// deliveries; httpEventSink posts in the background, retries, bounds its queue.
import express from 'express';
import { CloudEvent, HTTP } from 'cloudevents';
import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { withL402, type L402Options } from 'l402-paywall';
import { l402Middleware } from 'l402-paywall/express';
import { withL402 as withL402Managed } from 'l402-paywall/managed';
import { createDevNode } from 'l402-paywall/backends';
import {
  AGENT_ID_HEADER,
  EVENT_TYPES,
  EventVerificationError,
  SESSION_ID_HEADER,
  generateEventSecret,
  httpEventSink,
  signEvent,
  verifyEvent,
  type L402Event,
} from 'l402-paywall/events';
import { payChallenge, recordingProvider, type ChallengeBody, type RecordingProvider } from '../support/l402.js';
import { plainHeaders, startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { expectValidCloudEvent } from '../support/cloudevents.js';
import { listenNode, type Listening } from '../support/listen.js';

const SECRET = 'events-test-secret-0123456789abcdef0123456789abcdef';
const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const INCOMING_TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

function paywall(options: Partial<L402Options> = {}) {
  const provider = recordingProvider();
  const events: L402Event[] = [];
  const onError = vi.fn();
  const handler = withL402(() => Response.json({ usd: 1 }), {
    priceSats: 7,
    provider,
    secret: SECRET,
    route: '/api/price',
    onEvent: (event) => void events.push(event),
    onError,
    events: { agentId: 'price-api' },
    ...options,
  });
  return { provider, events, handler, onError };
}

const request = (headers: Record<string, string> = {}) => new Request('https://api.example/api/price?symbol=BTC', { headers });

describe('server events from withL402', () => {
  it('a paid flow: challenge.issued, then request.served caused by it, carrying the payment hash and amount', async () => {
    const { provider, events, handler } = paywall();
    const challenge = await handler(request({ traceparent: INCOMING_TRACEPARENT, [AGENT_ID_HEADER]: 'agent-7', [SESSION_ID_HEADER]: 'sess-42' }));
    const body = (await challenge.clone().json()) as ChallengeBody;
    const authorization = await payChallenge(challenge, provider);
    const served = await handler(request({ authorization, traceparent: INCOMING_TRACEPARENT, [AGENT_ID_HEADER]: 'agent-7' }));
    expect(served.status).toBe(200);
    await vi.waitFor(() => expect(events).toHaveLength(2));

    const [issued, done] = events as [L402Event, L402Event];
    expect(issued).toMatchObject({
      specversion: '1.0',
      id: `challenge-${body.paymentHash}`,
      source: 'urn:l402-paywall:server:price-api', // events.source unset: never the request's origin
      type: EVENT_TYPES.challengeIssued,
      subject: '/api/price',
      datacontenttype: 'application/json',
      data: {
        agent: { id: 'price-api', declared: { id: 'agent-7', proven: false } },
        session: { id: 'sess-42', kind: 'declared' },
        causation: { traceStarted: false },
        payment: { paymentHash: body.paymentHash, amountMsat: 7000, invoice: body.invoice },
        context: { method: 'GET', status: 402 },
      },
    });
    expect(issued.type).toBe('dev.l402paywall.server.challenge.issued');
    expect(Date.parse(issued.time)).not.toBeNaN();
    expect(issued.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));
    expect(issued.traceparent).not.toBe(INCOMING_TRACEPARENT); // a span of its own in the caller's trace
    expect(issued.data.timing.challengeMs).toBeGreaterThanOrEqual(0);

    expect(done).toMatchObject({
      type: EVENT_TYPES.serverRequestServed,
      subject: '/api/price',
      data: {
        agent: { id: 'price-api', declared: { id: 'agent-7', proven: false } },
        session: { id: body.paymentHash, kind: 'payment' },
        causation: { traceStarted: false, causationId: issued.id },
        payment: { paymentHash: body.paymentHash, amountMsat: 7000 },
        context: { method: 'GET', status: 200 },
      },
    });
    expect(done.data.payment!.verification).toMatch(/sha256\(preimage\) = paymentHash/);
    expect(done.data.timing.serveMs).toBeGreaterThanOrEqual(0);
    expect(done.data.timing.payMs).toBeGreaterThanOrEqual(0);
    expect(done.id).not.toBe(issued.id);

    // Never the preimage nor the macaroon, in any form.
    const preimage = authorization.slice(authorization.lastIndexOf(':') + 1);
    const wire = JSON.stringify(events);
    expect(wire).not.toContain(preimage);
    expect(wire).not.toContain(body.macaroon);
    expect(wire).not.toContain(authorization);
    for (const event of events) expectValidCloudEvent(event);
  });

  it('events are built after the response, in a later task, with the timings and time of the answer', async () => {
    // Clocks under the test's control: 5 ms pass inside the request, then a minute before the event loop turns.
    let monotonic = 1_000;
    let wall = Date.parse('2026-11-25T12:00:00.000Z');
    vi.spyOn(performance, 'now').mockImplementation(() => monotonic);
    vi.spyOn(Date, 'now').mockImplementation(() => wall);
    try {
      const provider = recordingProvider();
      const slow = {
        createInvoice: (request: Parameters<typeof provider.createInvoice>[0]) => ((monotonic += 5), (wall += 5), provider.createInvoice(request)),
      };
      const { events, handler } = paywall({ provider: slow });
      const challenge = await handler(request());
      expect(challenge.status).toBe(402);
      expect(events).toHaveLength(0); // nothing was built on the request path (its microtasks included)
      monotonic += 60_000;
      wall += 60_000;
      await vi.waitFor(() => expect(events).toHaveLength(1));
      expect(events[0]!.data.timing.challengeMs).toBe(5);
      expect(events[0]!.time).toBe('2026-11-25T12:00:00.005Z');
    } finally {
      vi.restoreAllMocks();
    }
  });

  it('waitUntil receives one promise per batch of requests, settled once their events are handed to onEvent', async () => {
    const kept: Promise<unknown>[] = [];
    const { events, handler } = paywall({ events: { agentId: 'price-api', waitUntil: (promise) => void kept.push(promise) } });
    await Promise.all([handler(request()), handler(request()), handler(request())]);
    expect(kept).toHaveLength(1);
    expect(events).toHaveLength(0);
    await kept[0];
    expect(events).toHaveLength(3);
    await handler(request());
    expect(kept).toHaveLength(2);
    await kept[1];
    expect(events).toHaveLength(4);
  });

  it('a server that never lets the event loop turn loses no event: past 1024 waiting requests a batch is built at once', async () => {
    const { events, handler } = paywall();
    for (let i = 0; i < 1100; i++) await handler(request());
    expect(events.length).toBeGreaterThanOrEqual(1024);
    await vi.waitFor(() => expect(events).toHaveLength(1100));
    expect(new Set(events.map((e) => e.id)).size).toBe(1100);
  });

  it('a refused credential: token.rejected with its reason code, then the fresh challenge caused by it', async () => {
    const { provider, events, handler } = paywall();
    const first = await handler(request());
    const authorization = await payChallenge(first.clone(), provider);
    const hash = ((await first.json()) as ChallengeBody).paymentHash;
    expect((await handler(request({ authorization }))).status).toBe(200);
    const replay = await handler(request({ authorization }));
    expect(((await replay.json()) as ChallengeBody).code).toBe('TOKEN_ALREADY_USED');
    const forged = await handler(request({ authorization: 'L402 not-a-token:' + '0'.repeat(64) }));
    expect(((await forged.json()) as ChallengeBody).code).toBe('MALFORMED_TOKEN');
    await vi.waitFor(() => expect(events).toHaveLength(6));

    const types = events.map((e) => e.type.replace('dev.l402paywall.server.', ''));
    expect(types).toEqual(['challenge.issued', 'request.served', 'token.rejected', 'challenge.issued', 'token.rejected', 'challenge.issued']);
    const [, , used, reissued, malformed] = events as L402Event[];
    expect(used!.data).toMatchObject({ reason: 'TOKEN_ALREADY_USED', claimedPaymentHash: hash, causation: { traceStarted: true } });
    expect(used!.data.session).toBeUndefined(); // the hash a refused token names is a claim, never the session
    expect(reissued!.data.causation.causationId).toBe(used!.id);
    expect(reissued!.traceparent).toBe(used!.traceparent); // one request, one span
    expect(malformed!.data.reason).toBe('MALFORMED_TOKEN');
    expect(malformed!.data.claimedPaymentHash).toBeUndefined();
    expect(JSON.stringify(events)).not.toContain(authorization.slice(5, 40));
    for (const event of events) expectValidCloudEvent(event);
  });

  it("a refused credential's events carry only claims of what it named: no session from its hash, a trace of their own, the configured source", async () => {
    const { provider, events, handler } = paywall({ events: { agentId: 'price-api', source: 'https://api.example' } });
    const first = await handler(request());
    const authorization = await payChallenge(first.clone(), provider);
    const victim = ((await first.json()) as ChallengeBody).paymentHash;
    // Someone else's token with its signature broken, sent to another host, in the victim's trace.
    const [scheme, credential] = authorization.split(' ') as [string, string];
    const [token, preimage] = credential.split(':') as [string, string];
    // The macaroon's signature is its last 32 bytes.
    const bytes = Buffer.from(token, 'base64');
    bytes.fill(0xff, bytes.length - 32);
    const forged = bytes.toString('base64');
    const refused = await handler(
      new Request('https://attacker.example/api/price', { headers: { authorization: `${scheme} ${forged}:${preimage}`, traceparent: INCOMING_TRACEPARENT } }),
    );
    expect(((await refused.json()) as ChallengeBody).code).toBe('BAD_SIGNATURE');
    await vi.waitFor(() => expect(events).toHaveLength(3));

    const [, rejected, reissued] = events as [L402Event, L402Event, L402Event];
    expect(rejected.type).toBe(EVENT_TYPES.tokenRejected);
    expect(rejected.source).toBe('https://api.example');
    expect(rejected.data).toMatchObject({ reason: 'BAD_SIGNATURE', claimedPaymentHash: victim, claimedTraceparent: INCOMING_TRACEPARENT });
    expect(rejected.data.session).toBeUndefined();
    expect(rejected.data.causation.traceStarted).toBe(true);
    expect(rejected.traceparent).not.toContain(TRACE_ID);
    // The fresh challenge it caused shares its new trace, and its own (new) payment hash is its session.
    expect(reissued.source).toBe('https://api.example');
    expect(reissued.traceparent).toBe(rejected.traceparent);
    expect(reissued.data).toMatchObject({ causation: { causationId: rejected.id }, session: { kind: 'payment' } });
    expect(reissued.data.session!.id).not.toBe(victim);
    for (const event of events) expectValidCloudEvent(event);
  });

  it('a client-declared id that is not a short printable token is left out, not echoed', async () => {
    const { events, handler } = paywall();
    await handler(request({ [AGENT_ID_HEADER]: 'x'.repeat(200), [SESSION_ID_HEADER]: 'a b' }));
    await vi.waitFor(() => expect(events).toHaveLength(1));
    expect(events[0]!.data.agent).toEqual({ id: 'price-api' });
    expect(events[0]!.data.session!.kind).toBe('payment');
  });

  it('a 503 (provider down) sold and checked nothing: no event', async () => {
    const { provider, events, handler, onError } = paywall();
    provider.failing = true;
    expect((await handler(request())).status).toBe(503);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(events).toEqual([]);
    expect(onError).toHaveBeenCalledWith(expect.any(Error), 'creating an invoice failed');
  });

  it('the cloudevents SDK check can fail: it refuses an event without a type', () => {
    expect(() => new CloudEvent({ id: '1', source: 'urn:x', specversion: '1.0', type: '' } as never, true)).toThrow();
  });
});

describe('a throwing or never-resolving onEvent changes nothing', () => {
  async function flow(handler: (r: Request) => Promise<Response>, provider: RecordingProvider) {
    const first = await handler(request());
    const authorization = await payChallenge(first.clone(), provider);
    const paid = await handler(request({ authorization }));
    const again = await handler(request({ authorization }));
    return [first.status, paid.status, await paid.json(), paid.headers.get('cache-control'), again.status, ((await again.json()) as ChallengeBody).code];
  }
  const expected = [402, 200, { usd: 1 }, 'no-store', 402, 'TOKEN_ALREADY_USED'];

  it('throwing: the same answers and payments, the error reported to onError', async () => {
    const { handler, provider, onError } = paywall({
      onEvent: () => {
        throw new Error('receiver exploded');
      },
    });
    expect(await flow(handler, provider)).toEqual(expected);
    await vi.waitFor(() => expect(onError.mock.calls.filter(([, context]) => context === 'onEvent failed')).toHaveLength(4));
    expect(onError.mock.calls[0]![0].message).toBe('receiver exploded');
  });

  it('rejecting asynchronously: the same', async () => {
    const { handler, provider, onError } = paywall({ onEvent: () => Promise.reject(new Error('later')) });
    expect(await flow(handler, provider)).toEqual(expected);
    await vi.waitFor(() => expect(onError.mock.calls.filter(([, context]) => context === 'onEvent failed')).toHaveLength(4));
  });

  it('never resolving: answers are not held, and past maxPending events are dropped and reported, not piled up', async () => {
    const calls: L402Event[] = [];
    const { handler, provider, onError } = paywall({
      onEvent: (event) => {
        calls.push(event);
        return new Promise(() => {});
      },
      events: { maxPending: 2 },
    });
    // Each answer arriving at all shows nothing waited for onEvent.
    expect(await flow(handler, provider)).toEqual(expected);
    expect(await flow(handler, provider)).toEqual(expected);
    await vi.waitFor(() => expect(onError.mock.calls.some(([, context]) => context === 'onEvent is not keeping up')).toBe(true));
    expect(calls).toHaveLength(2);
  });

  it('an onError that throws as well is contained', async () => {
    const { handler, provider } = paywall({
      onEvent: () => {
        throw new Error('one');
      },
      onError: () => {
        throw new Error('two');
      },
    });
    expect(await flow(handler, provider)).toEqual(expected);
    await new Promise((resolve) => setTimeout(resolve, 20));
  });
});

describe('server events from l402Middleware (Express)', () => {
  let served: Listening;
  let base: string;
  const events: L402Event[] = [];
  const provider = recordingProvider();

  beforeAll(async () => {
    const app = express();
    app.get(
      '/paid',
      l402Middleware({ priceSats: 4, provider, secret: SECRET, onEvent: (e) => void events.push(e), events: { source: 'urn:test:express' } }),
      (_req, res) => {
        res.status(201).json({ ok: true });
      },
    );
    served = await listenNode(app);
    base = served.url;
  });
  afterAll(async () => {
    await served.close();
  });

  it('challenge.issued, token.rejected and request.served with the status the handler sent', async () => {
    const challenge = await fetch(`${base}/paid`);
    const authorization = await payChallenge(challenge.clone(), provider);
    const hash = ((await challenge.json()) as ChallengeBody).paymentHash;
    expect((await fetch(`${base}/paid`, { headers: { authorization } })).status).toBe(201);
    expect((await fetch(`${base}/paid`, { headers: { authorization: 'Bearer nope' } })).status).toBe(402);
    await vi.waitFor(() => expect(events).toHaveLength(4));
    expect(events.map((e) => [e.type, e.source, e.subject])).toEqual([
      [EVENT_TYPES.challengeIssued, 'urn:test:express', '/paid'],
      [EVENT_TYPES.serverRequestServed, 'urn:test:express', '/paid'],
      [EVENT_TYPES.tokenRejected, 'urn:test:express', '/paid'],
      [EVENT_TYPES.challengeIssued, 'urn:test:express', '/paid'],
    ]);
    expect(events[1]!.data).toMatchObject({ payment: { paymentHash: hash, amountMsat: 4000 }, context: { status: 201 } });
    expect(events[2]!.data.reason).toBe('MALFORMED_CREDENTIAL');
    for (const event of events) expectValidCloudEvent(event);
  });
});

describe('server events in managed mode', () => {
  it("onEvent passes through: the invoice comes from the service, the events are the paywall owner's", async () => {
    const node = createDevNode();
    // The hosted service's POST /api/invoice, answered in process with a real regtest invoice.
    const service = async (_input: string | URL | Request, init?: RequestInit) => {
      const { amountSats } = JSON.parse(String(init!.body)) as { amountSats: number };
      const created = await node.createInvoice({ amountMsat: amountSats * 1000 });
      return Response.json({ paymentRequest: created.invoice, paymentHash: created.paymentHash });
    };
    const events: L402Event[] = [];
    const handler = withL402Managed(() => Response.json({ ok: true }), {
      priceSats: 3,
      secret: SECRET,
      managed: { lightningAddress: 'owner@example.com', serviceUrl: 'https://l402.example', fetch: service as typeof fetch },
      onEvent: (e) => void events.push(e),
      events: { agentId: 'managed-api' },
    });
    const challenge = await handler(request());
    const body = (await challenge.json()) as ChallengeBody;
    const { preimage } = await node.pay(body.invoice);
    expect((await handler(request({ authorization: `L402 ${body.macaroon}:${preimage}` }))).status).toBe(200);
    await vi.waitFor(() => expect(events).toHaveLength(2));
    expect(events.map((e) => [e.type, e.data.agent.id, e.data.payment?.paymentHash, e.data.payment?.amountMsat])).toEqual([
      [EVENT_TYPES.challengeIssued, 'managed-api', body.paymentHash, 3000],
      [EVENT_TYPES.serverRequestServed, 'managed-api', body.paymentHash, 3000],
    ]);
    expect(JSON.stringify(events)).not.toContain(preimage);
    for (const event of events) expectValidCloudEvent(event);
  });
});

describe('signatures: Standard Webhooks', () => {
  const secret = generateEventSecret();
  const time = new Date().toISOString();
  const event = (): L402Event => ({
    specversion: '1.0',
    id: 'evt-1',
    source: 'https://api.example',
    type: EVENT_TYPES.serverRequestServed,
    time,
    subject: '/api/price',
    datacontenttype: 'application/json',
    traceparent: INCOMING_TRACEPARENT,
    data: { agent: {}, causation: { traceparent: INCOMING_TRACEPARENT, traceStarted: false }, timing: {}, context: { method: 'GET', status: 200 } },
  });
  const signed = () => {
    const body = JSON.stringify(event());
    return { body, headers: { ...signEvent(body, 'evt-1', secret) } as Record<string, string> };
  };
  const refusal = (work: () => unknown) => {
    try {
      work();
    } catch (error) {
      expect(error).toBeInstanceOf(EventVerificationError);
      return (error as EventVerificationError).code;
    }
    return expect.fail('expected a refusal');
  };

  it('secrets are whsec_ and base64 of 32 bytes; the standardwebhooks library verifies what signEvent signs, and so does verifyEvent', () => {
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const { body, headers } = signed();
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(event());
    expect(verifyEvent(body, headers, secret)).toEqual(event());
    expect(verifyEvent(new TextEncoder().encode(body), new Headers(headers), secret).id).toBe('evt-1');
  });

  it('verifyEvent accepts what the standardwebhooks library signs', () => {
    const body = JSON.stringify(event());
    const timestamp = new Date();
    const signature = new Webhook(secret).sign('evt-1', timestamp, body);
    const headers = {
      'webhook-id': 'evt-1',
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': `v1,${'A'.repeat(43)}= ${signature}`,
    };
    expect(verifyEvent(body, headers, secret).type).toBe(EVENT_TYPES.serverRequestServed);
  });

  it('tampered: a changed body, id or timestamp is refused (by both)', () => {
    const { body, headers } = signed();
    const tampered = body.replace('"status":200', '"status":201');
    expect(refusal(() => verifyEvent(tampered, headers, secret))).toBe('BAD_SIGNATURE');
    expect(() => new Webhook(secret).verify(tampered, headers)).toThrow();
    expect(refusal(() => verifyEvent(body, { ...headers, 'webhook-id': 'evt-2' }, secret))).toBe('BAD_SIGNATURE');
    expect(refusal(() => verifyEvent(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }, secret))).toBe(
      'BAD_SIGNATURE',
    );
  });

  it('unsigned: no signature headers, or a signature of another scheme, is refused', () => {
    const { body, headers } = signed();
    expect(refusal(() => verifyEvent(body, {}, secret))).toBe('MISSING_HEADERS');
    expect(refusal(() => verifyEvent(body, { 'webhook-id': 'evt-1', 'webhook-timestamp': headers['webhook-timestamp']! }, secret))).toBe('MISSING_HEADERS');
    expect(refusal(() => verifyEvent(body, { ...headers, 'webhook-signature': headers['webhook-signature']!.replace('v1,', 'v1a,') }, secret))).toBe(
      'BAD_SIGNATURE',
    );
  });

  it('wrongly keyed: signed with another secret, refused (by both)', () => {
    const body = JSON.stringify(event());
    const headers = { ...signEvent(body, 'evt-1', generateEventSecret()) };
    expect(refusal(() => verifyEvent(body, headers, secret))).toBe('BAD_SIGNATURE');
    expect(() => new Webhook(secret).verify(body, headers)).toThrow();
  });

  it('stale: signed more than 5 minutes ago, refused (by both); 5 minutes is still fine', () => {
    const body = JSON.stringify(event());
    const now = Math.floor(Date.now() / 1000);
    const old = { ...signEvent(body, 'evt-1', secret, now - 301) };
    expect(refusal(() => verifyEvent(body, old, secret, { nowSeconds: now }))).toBe('STALE');
    expect(() => new Webhook(secret).verify(body, old)).toThrow(/too old/);
    expect(verifyEvent(body, { ...signEvent(body, 'evt-1', secret, now - 300) }, secret, { nowSeconds: now }).id).toBe('evt-1');
    expect(refusal(() => verifyEvent(body, { ...signEvent(body, 'evt-1', secret, now + 301) }, secret, { nowSeconds: now }))).toBe('FUTURE');
  });

  it('a signed body that is not a CloudEvent of that id is refused', () => {
    const body = JSON.stringify({ ...event(), id: 'other' });
    expect(refusal(() => verifyEvent(body, { ...signEvent(body, 'evt-1', secret) }, secret))).toBe('MALFORMED_EVENT');
  });

  it('secrets that are not whsec_ + base64 of 24 to 64 bytes are refused, naming the problem and never the secret', () => {
    expect(() => httpEventSink({ url: 'https://x.example', secret: 'hunter2hunter2hunter2hunter2' })).toThrow(/whsec_/);
    expect(() => httpEventSink({ url: 'https://x.example', secret: 'whsec_' + btoa('short') })).toThrow(/24 to 64 bytes, this one 5/);
    expect(() => httpEventSink({ url: 'https://x.example', secret: 'whsec_***' })).toThrow(/not base64/);
    expect(refusal(() => verifyEvent('{}', {}, 'nope'))).toBe('INVALID_SECRET');
  });
});

describe('httpEventSink', () => {
  let receiver: EventReceiver;
  const secret = generateEventSecret();
  beforeEach(async () => {
    receiver = await startEventReceiver();
  });
  afterEach(() => receiver.close());

  async function oneEvent(): Promise<L402Event> {
    const { events, handler } = paywall();
    await handler(request());
    await vi.waitFor(() => expect(events).toHaveLength(1));
    return events[0]!;
  }

  it('posts each event in structured mode, signed; receivers verify with standardwebhooks and read it with the cloudevents SDK', async () => {
    const provider = recordingProvider();
    const sink = httpEventSink({ url: receiver.url, secret });
    const sinkedHandler = withL402(() => Response.json({ usd: 1 }), { priceSats: 7, provider, secret: SECRET, route: '/api/price', onEvent: sink });
    const challenge = await sinkedHandler(request());
    const authorization = await payChallenge(challenge.clone(), provider);
    expect((await sinkedHandler(request({ authorization }))).status).toBe(200);
    await vi.waitFor(() => expect(sink.stats().delivered).toBe(2));
    await sink.flush();

    expect(receiver.deliveries).toHaveLength(2);
    const types = [];
    for (const delivery of receiver.deliveries) {
      expect(delivery.method).toBe('POST');
      expect(delivery.path).toBe('/hooks/l402');
      expect(delivery.headers['content-type']).toBe('application/cloudevents+json; charset=utf-8');
      const headers = plainHeaders(delivery.headers);
      const verified = new Webhook(secret).verify(delivery.body, headers) as L402Event;
      expect(verifyEvent(delivery.body, headers, secret)).toEqual(verified);
      expect(headers['webhook-id']).toBe(verified.id);
      const ce = HTTP.toEvent({ headers, body: delivery.body }) as CloudEvent<unknown>;
      expect(ce.validate()).toBe(true);
      expect(ce.type).toBe(verified.type);
      types.push(ce.type);
    }
    expect(types).toEqual([EVENT_TYPES.challengeIssued, EVENT_TYPES.serverRequestServed]);
    expect(sink.stats()).toEqual({ queued: 0, inFlight: 0, delivered: 2, failed: 0, dropped: 0 });
  });

  it('retries a failing receiver with backoff, the same webhook-id and a fresh signature each time', async () => {
    receiver.answer((_d, i) => (i < 2 ? 503 : 200));
    const sink = httpEventSink({ url: receiver.url, secret, retryBaseMs: 5 });
    sink(await oneEvent());
    await sink.flush();
    expect(receiver.deliveries).toHaveLength(3);
    expect(new Set(receiver.deliveries.map((d) => d.headers['webhook-id'])).size).toBe(1);
    for (const d of receiver.deliveries) expect(() => verifyEvent(d.body, plainHeaders(d.headers), secret)).not.toThrow();
    expect(sink.stats()).toMatchObject({ delivered: 1, failed: 0 });
  });

  it('gives up after maxAttempts (at least 3 by default: 4), and at once on a 4xx refusal, reporting it', async () => {
    receiver.answer(() => 500);
    const onError = vi.fn();
    const sink = httpEventSink({ url: receiver.url, secret, retryBaseMs: 1, onError });
    sink(await oneEvent());
    await sink.flush();
    expect(receiver.deliveries).toHaveLength(4);
    expect(sink.stats()).toMatchObject({ delivered: 0, failed: 1 });
    expect(onError.mock.calls[0]![0].message).toMatch(/not delivered to 127\.0\.0\.1:\d+/);

    receiver.answer(() => 400);
    sink(await oneEvent());
    await sink.flush();
    expect(receiver.deliveries).toHaveLength(5);
    expect(sink.stats()).toMatchObject({ delivered: 0, failed: 2 });
  });

  it('a receiver that never answers costs one timeout per try, then the event fails', async () => {
    receiver.answer(() => 'hang');
    const sink = httpEventSink({ url: receiver.url, secret, retryBaseMs: 1, timeoutMs: 50, maxAttempts: 3, onError: () => {} });
    sink(await oneEvent());
    await sink.flush();
    expect(receiver.deliveries).toHaveLength(3);
    expect(sink.stats()).toMatchObject({ failed: 1, inFlight: 0, queued: 0 });
  });

  it('bounded memory: a full queue drops its oldest events and counts them', async () => {
    receiver.answer((_d, i) => (i === 0 ? 'hang' : 204));
    const onError = vi.fn();
    const sink = httpEventSink({ url: receiver.url, secret, maxQueue: 2, concurrency: 1, timeoutMs: 300, maxAttempts: 1, onError });
    const event = await oneEvent();
    sink({ ...event, id: 'a' });
    await vi.waitFor(() => expect(receiver.deliveries).toHaveLength(1));
    // 'a' is being posted (its receiver hangs); b and c are pushed out by d and e.
    for (const id of ['b', 'c', 'd', 'e']) sink({ ...event, id });
    expect(sink.stats()).toMatchObject({ queued: 2, inFlight: 1, dropped: 2 });
    expect(onError).toHaveBeenCalledWith(expect.objectContaining({ message: expect.stringMatching(/queue is full \(2\)/) }), 'audit events dropped');
    await sink.flush();
    expect(receiver.deliveries.map((d) => d.headers['webhook-id'])).toEqual(['a', 'd', 'e']);
    expect(sink.stats()).toMatchObject({ delivered: 2, failed: 1, dropped: 2, queued: 0 });
  });

  it('hands waitUntil one promise per event, settled once that event is delivered', async () => {
    receiver.answer((_d, i) => (i === 0 ? 'hang' : 204));
    const kept: Promise<unknown>[] = [];
    const sink = httpEventSink({ url: receiver.url, secret, waitUntil: (p) => void kept.push(p), timeoutMs: 100, retryBaseMs: 1 });
    sink(await oneEvent());
    expect(kept).toHaveLength(1);
    let settled = false;
    void kept[0]!.then(() => (settled = true));
    await vi.waitFor(() => expect(receiver.deliveries).toHaveLength(1));
    expect(settled).toBe(false); // the first try hangs (until its 100 ms timeout): the function must stay alive
    await kept[0];
    expect(receiver.deliveries).toHaveLength(2);
    expect(sink.stats().delivered).toBe(1);
  });

  it('refuses a URL that is not http(s)', () => {
    expect(() => httpEventSink({ url: 'ftp://x.example', secret })).toThrow(/http/);
  });
});
