// fetchWithL402's audit events against a paywall that emits its own: the
// client's challenge.received, invoice.refused, payment.sent and
// request.served, valid CloudEvents in the cloudevents SDK's structured and
// binary modes, in the same trace as the server's events, with budget spent
// and left, retries and refusals; never a preimage or a macaroon. A throwing
// or never-resolving onEvent changes no payment and no answer; unset, no
// event and no extra header.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDevNode } from 'l402-paywall/backends';
import { withL402 } from 'l402-paywall';
import { createBudget, fetchWithL402, getL402Receipt, type L402ClientError, type Fetch } from 'l402-paywall/client';
import { EVENT_TYPES, generateEventSecret, httpEventSink, verifyEvent, type L402Event } from 'l402-paywall/events';
import { Webhook } from 'standardwebhooks';
import { paywallOptions, recordingWallet } from '../support/paid-apps.js';
import { plainHeaders, startEventReceiver, type EventReceiver } from '../support/event-receiver.js';
import { expectValidCloudEvent } from '../support/cloudevents.js';

const node = createDevNode();

/** A paywalled app served in process (fetchWithL402's `fetch` option), emitting server events; every request it got is kept. */
function app(priceSats = 2) {
  const serverEvents: L402Event[] = [];
  const requests: Request[] = [];
  const handler = withL402(
    () => Response.json({ ok: true }),
    paywallOptions(node, { priceSats, onEvent: (e) => void serverEvents.push(e), events: { agentId: 'price-api' } }),
  );
  const fetch: Fetch = async (input, init) => {
    const request = new Request(input, init);
    requests.push(request.clone());
    return handler(request);
  };
  return { serverEvents, requests, fetch };
}

const short = (event: L402Event) => event.type.replace('dev.l402paywall.', '');

describe('client events', () => {
  it('a paid call: challenge.received, payment.sent, request.served, joined to the server events by trace, agent and session', async () => {
    const paywall = app(2);
    const events: L402Event[] = [];
    const wallet = recordingWallet(node);
    const budget = createBudget({ totalSats: 10 });
    const response = await fetchWithL402('http://api.example/paid?key=secret-query', undefined, {
      wallet,
      maxPriceSats: 5,
      budget,
      tokens: false,
      fetch: paywall.fetch,
      onEvent: (e) => void events.push(e),
      events: { agentId: 'agent-7', sessionId: 'sess-1' },
    });
    expect(response.status).toBe(200);
    await vi.waitFor(() => expect(paywall.serverEvents).toHaveLength(2));
    expect(events.map(short)).toEqual(['client.challenge.received', 'client.payment.sent', 'client.request.served']);
    const [received, sent, served] = events as [L402Event, L402Event, L402Event];
    const receipt = getL402Receipt(response)!;

    for (const event of events) {
      expect(event).toMatchObject({
        source: 'urn:l402-paywall:agent:agent-7',
        subject: 'http://api.example/paid',
        data: { agent: { id: 'agent-7' }, session: { id: 'sess-1', kind: 'declared' } },
      });
      expectValidCloudEvent(event);
    }
    expect(received.data).toMatchObject({
      payment: { paymentHash: receipt.paymentHash, amountMsat: 2000, invoice: wallet.invoices[0] },
      context: { status: 402, budget: { spentMsat: 0, leftMsat: 10_000 }, retries: 0, refusals: 0 },
    });
    expect(sent.data).toMatchObject({
      payment: { paymentHash: receipt.paymentHash, amountMsat: 2000 },
      feeMsat: 0,
      causation: { causationId: received.id },
      context: { budget: { spentMsat: 2000, leftMsat: 8000 } },
    });
    expect(sent.data.timing.payMs).toBeGreaterThanOrEqual(0);
    expect(served.data).toMatchObject({
      payment: { paymentHash: receipt.paymentHash },
      causation: { causationId: sent.id },
      context: { status: 200, retries: 1, refusals: 0 },
    });
    expect(served.data.timing.serveMs).toBeGreaterThanOrEqual(0);

    // The server saw the declared agent and session, and the client's trace.
    const traceId = received.traceparent.slice(3, 35);
    expect(paywall.requests.every((r) => r.headers.get('traceparent')?.slice(3, 35) === traceId)).toBe(true);
    expect(paywall.serverEvents.map((e) => [short(e), e.traceparent.slice(3, 35)])).toEqual([
      ['server.challenge.issued', traceId],
      ['server.request.served', traceId],
    ]);
    expect(paywall.serverEvents[1]!.data).toMatchObject({
      agent: { id: 'price-api', declared: { id: 'agent-7', proven: false } },
      session: { id: 'sess-1', kind: 'declared' },
      payment: { paymentHash: receipt.paymentHash, amountMsat: 2000 },
    });

    const wire = JSON.stringify(events);
    const authorization = paywall.requests[1]!.headers.get('authorization')!;
    expect(wire).not.toContain(authorization.slice(authorization.lastIndexOf(':') + 1)); // the preimage
    expect(wire).not.toContain(authorization.slice(5, authorization.lastIndexOf(':'))); // the macaroon
    expect(wire).not.toContain('secret-query');
  });

  it('refused invoices: invoice.refused with the reason code, counted in the session; nothing paid', async () => {
    const dear = app(50);
    const events: L402Event[] = [];
    const wallet = recordingWallet(node);
    const onEvent = (e: L402Event) => void events.push(e);
    const tooDear = await fetchWithL402('http://api.example/dear', undefined, { wallet, maxPriceSats: 5, tokens: false, fetch: dear.fetch, onEvent }).catch(
      (e: unknown) => e,
    );
    expect((tooDear as L402ClientError).code).toBe('PRICE_ABOVE_MAXIMUM');

    const budget = createBudget({ totalSats: 3 });
    const cheap = app(2);
    expect(
      (await fetchWithL402('http://api.example/a', undefined, { wallet, maxPriceSats: 5, budget, tokens: false, fetch: cheap.fetch, onEvent })).status,
    ).toBe(200);
    const overBudget = await fetchWithL402('http://api.example/b', undefined, {
      wallet,
      maxPriceSats: 5,
      budget,
      tokens: false,
      fetch: cheap.fetch,
      onEvent,
    }).catch((e: unknown) => e);
    expect((overBudget as L402ClientError).code).toBe('BUDGET_EXCEEDED');
    expect(wallet.invoices).toHaveLength(1);

    expect(events.map(short)).toEqual([
      'client.challenge.received',
      'client.invoice.refused',
      'client.challenge.received',
      'client.payment.sent',
      'client.request.served',
      'client.challenge.received',
      'client.invoice.refused',
    ]);
    const refusals = events.filter((e) => e.type === EVENT_TYPES.invoiceRefused);
    expect(refusals[0]!.data).toMatchObject({
      reason: 'PRICE_ABOVE_MAXIMUM',
      payment: { amountMsat: 50_000 },
      causation: { causationId: events[0]!.id },
      context: { refusals: 1 },
    });
    expect(refusals[1]!.data).toMatchObject({
      reason: 'BUDGET_EXCEEDED',
      payment: { amountMsat: 2000 },
      context: { refusals: 2, retries: 1, budget: { spentMsat: 2000, leftMsat: 1000 } },
    });
    // One session per handler when no sessionId is set.
    expect(new Set(events.map((e) => e.data.session!.id)).size).toBe(1);
    expect(events[0]!.data.session!.kind).toBe('client');
    expect(events[0]!.source).toBe('urn:l402-paywall:agent:anonymous');
    for (const event of events) expectValidCloudEvent(event);
  });

  it('a throwing or never-resolving onEvent changes no payment and no answer', async () => {
    for (const onEvent of [
      () => {
        throw new Error('receiver exploded');
      },
      () => new Promise<void>(() => {}),
    ]) {
      const paywall = app(1);
      const wallet = recordingWallet(node);
      const onError = vi.fn();
      const budget = createBudget({ totalSats: 5 });
      const response = await fetchWithL402('http://api.example/paid', undefined, {
        wallet,
        maxPriceSats: 5,
        budget,
        tokens: false,
        fetch: paywall.fetch,
        onEvent,
        events: { onError },
      });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ ok: true });
      expect(wallet.invoices).toHaveLength(1);
      expect(budget.spent().totalMsat).toBe(1000);
      expect(getL402Receipt(response)).toMatchObject({ amountMsat: 1000, paidByThisCall: true });
    }
  });

  it('unset: no event, and requests go out without traceparent or agent headers', async () => {
    const paywall = app(1);
    const response = await fetchWithL402('http://api.example/paid', undefined, {
      wallet: recordingWallet(node),
      maxPriceSats: 5,
      tokens: false,
      fetch: paywall.fetch,
      events: { agentId: 'agent-7' },
    });
    expect(response.status).toBe(200);
    for (const request of paywall.requests) {
      expect(request.headers.get('traceparent')).toBeNull();
      expect(request.headers.get('l402-agent-id')).toBeNull();
    }
  });
});

describe('client events through httpEventSink', () => {
  let receiver: EventReceiver;
  beforeAll(async () => {
    receiver = await startEventReceiver();
  });
  afterAll(() => receiver.close());

  it('arrive signed: standardwebhooks and verifyEvent both accept every delivery', async () => {
    const secret = generateEventSecret();
    const sink = httpEventSink({ url: receiver.url, secret });
    const paywall = app(1);
    await fetchWithL402('http://api.example/paid', undefined, {
      wallet: recordingWallet(node),
      maxPriceSats: 5,
      tokens: false,
      fetch: paywall.fetch,
      onEvent: sink,
      events: { agentId: 'agent-9' },
    });
    await sink.flush();
    expect(receiver.deliveries).toHaveLength(3);
    for (const delivery of receiver.deliveries) {
      const headers = plainHeaders(delivery.headers);
      const event = new Webhook(secret).verify(delivery.body, headers) as L402Event;
      expect(verifyEvent(delivery.body, headers, secret)).toEqual(event);
      expect(event.data.agent.id).toBe('agent-9');
    }
  });
});
