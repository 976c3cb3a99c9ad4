// Prepaid sessions sold by the paywall (docs/sessions.md, the Payment
// scheme's intent="session", draft-lightning-session-00): one 402 offers the
// charge and the session together; a deposit paid opens a session once and
// can never also pass as a charge; bearer requests spend one unit each, and
// however they race, a 20-unit balance serves exactly 20 (the in-process
// ledger and the Lua ledger on the real redis-server); a top-up credits
// once; a closed session refuses everything; close refunds deposit minus
// spent, to the millisatoshi, to the client's amountless return invoice,
// once, and a refund that fails says so and stays due. Real paywall, real dev
// Lightning nodes (the server's and the client's wallet on one fake network).
import express from 'express';
import { l402Middleware } from 'l402-paywall/express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { getPayment, withL402, type L402Options, type SessionUse } from 'l402-paywall';
import { PaymentFailed, lightningSessions, memorySessionLedger } from 'l402-paywall/lightning';
import {
  formatCredential,
  formatSessionCredential,
  parsePaymentChallenges,
  readLightningCharge,
  readLightningSession,
  type LightningSessionOffer,
  type SessionPayload,
} from '../../src/mpp.js';
import { decodeBase64, parseJsonBytes } from '../../src/schemes/payment/wire.js';
import { sessionRedisUp, useSessionStores, type SessionStores } from '../support/session-stores.js';
import { feeTakingBackend } from '../support/fee-taking-backend.js';
import { listenNode, type Listening } from '../support/listen.js';

const SECRET = 'session-paywall-test-secret-0123456789abcdef0123';
const BASE = 'https://shop.example';
const SAT = 1000;
const redisUp = sessionRedisUp;
const { memory: memoryStores, onRedis: redisStores } = useSessionStores('session-paywall');

function shop(stores: () => SessionStores = memoryStores, options: Partial<L402Options> = {}, unitPriceSats = 2) {
  const net = memoryDevNodeStore();
  const server = createDevNode({ store: net });
  const wallet = createDevNode({ store: net });
  const shared = stores();
  const ledger = shared.ledger();
  const replayStore = shared.replayStore();
  const errors: string[] = [];
  let served = 0;
  const sessions: SessionUse[] = [];
  const handler = withL402(
    async (request: Request) => {
      served++;
      const session = getPayment(request)?.session;
      if (session) sessions.push(session);
      return Response.json({ ok: true });
    },
    {
      priceSats: 21,
      provider: server,
      secret: SECRET,
      replayStore,
      onError: (error, context) => errors.push(`${context}: ${error instanceof Error ? error.message : error}`),
      session: lightningSessions({ unitPriceSats, ledger, idleTimeoutSeconds: 600 }),
      ...options,
    },
  );
  const get = (authorization?: string) => handler(new Request(`${BASE}/generate`, { headers: authorization ? { authorization } : {} }));

  /** A fresh 402 and its session offer. */
  const offer = async (): Promise<{ response: Response; offer: LightningSessionOffer }> => {
    const response = await get();
    expect(response.status).toBe(402);
    const challenge = parsePaymentChallenges(response.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session');
    const read = readLightningSession(challenge!);
    if (!read.ok) throw new Error(read.detail);
    return { response, offer: read.session };
  };

  /** Pays a fresh deposit and opens a session with it (one unit spent by that request). */
  const open = async () => {
    const { offer: o } = await offer();
    const { preimage } = await wallet.pay(o.depositInvoice);
    const returned = await wallet.createAmountlessInvoice({ memo: 'refund', expirySeconds: 86_400 });
    const credential = formatSessionCredential(o.challenge, { action: 'open', preimage, returnInvoice: returned.invoice });
    const response = await get(credential);
    return { response, credential, offer: o, preimage, sessionId: o.paymentHash, returnHash: returned.paymentHash };
  };

  const act = (o: LightningSessionOffer, payload: SessionPayload) => get(formatSessionCredential(o.challenge, payload));
  return { server, wallet, ledger, handler, get, offer, open, act, errors, served: () => served, sessions };
}

const receiptOf = (response: Response) => parseJsonBytes(decodeBase64(response.headers.get('payment-receipt')!)!) as Record<string, unknown>;

describe('withL402 with sessions: construction', () => {
  it('refuses a backend that cannot pay invoices without an amount, naming it', () => {
    const provider = { name: 'lnbits', createInvoice: async () => ({ invoice: 'lnbcrt1x', paymentHash: 'a'.repeat(64) }) };
    const session = lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() });
    expect(() => withL402(() => new Response('x'), { priceSats: 1, provider, secret: SECRET, session })).toThrow(
      /option `session`: the lnbits backend cannot pay invoices without an amount/,
    );
  });

  it('refuses bad unit prices, deposits, idle timeouts and ledgers', () => {
    const make = (session: Record<string, unknown>) => () => lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger(), ...session } as never);
    expect(make({ unitPriceSats: 0 })).toThrow(/unitPriceSats/);
    expect(make({ depositUnits: 1.5 })).toThrow(/depositUnits/);
    expect(make({ idleTimeoutSeconds: -1 })).toThrow(/idleTimeoutSeconds/);
    expect(make({ ledger: {} })).toThrow(/ledger/);
    // A plain object is not a session seller.
    expect(() => withL402(() => new Response('x'), { priceSats: 1, provider: createDevNode(), secret: SECRET, session: {} as never })).toThrow(
      /lightningSessions/,
    );
  });
});

describe('withL402 with sessions: the wire', () => {
  it('one 402 offers L402, the charge and the session, the deposit 20 units by default', async () => {
    const { offer } = shop();
    const { response, offer: o } = await offer();
    const parsed = parsePaymentChallenges(response.headers.get('www-authenticate'));
    expect(parsed.challenges.map((c) => c.intent).sort()).toEqual(['charge', 'session']);
    expect(response.headers.get('www-authenticate')).toMatch(/^LSAT macaroon="[^"]+", invoice="[^"]+", L402 /);
    expect(o).toMatchObject({ unitPriceSats: 2, depositSats: 40, idleTimeoutSeconds: 600, unitType: 'request' });
    const charge = readLightningCharge(parsed.challenges.find((c) => c.intent === 'charge')!);
    expect(charge.ok && charge.charge.paymentHash).not.toBe(o.paymentHash);
    const body = await response.json();
    expect(body.session).toMatchObject({ challengeId: o.challenge.id, depositInvoice: o.depositInvoice, paymentHash: o.paymentHash, depositSats: 40 });
  });

  it('open serves the request and spends one unit; the receipt names the session; replayed it is refused', async () => {
    const { open, get, ledger, served, sessions } = shop();
    const { response, credential, sessionId } = await open();
    expect(response.status).toBe(200);
    expect(receiptOf(response)).toMatchObject({ method: 'lightning', reference: sessionId, status: 'success' });
    expect(served()).toBe(1);
    expect(sessions[0]?.id).toBe(sessionId);
    expect(await ledger.get(sessionId)).toMatchObject({ status: 'open', paidMsat: 40 * SAT, spentMsat: 2 * SAT });
    const again = await get(credential);
    expect(again.status).toBe(402);
    expect(await again.json()).toMatchObject({ code: 'DEPOSIT_ALREADY_USED' });
    expect(served()).toBe(1);
    expect((await ledger.get(sessionId))?.spentMsat).toBe(2 * SAT);
  });

  it("the deposit's payment can never also pass as a charge credential", async () => {
    const { offer, wallet, get, served } = shop();
    const { response, offer: o } = await offer();
    const { preimage } = await wallet.pay(o.depositInvoice);
    // A charge challenge names its own invoice; the session's challenge echoed as a charge is not one this server issued.
    const charge = parsePaymentChallenges(response.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'charge')!;
    expect((await get(formatCredential(charge, preimage))).status).toBe(402);
    expect((await get(formatCredential({ ...o.challenge, intent: 'charge' }, preimage))).status).toBe(402);
    expect(served()).toBe(0);
  });

  it('the charge still sells one request beside the session', async () => {
    const { get, wallet, served } = shop();
    const response = await get();
    const charge = parsePaymentChallenges(response.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'charge')!;
    const read = readLightningCharge(charge);
    if (!read.ok) throw new Error(read.detail);
    const { preimage } = await wallet.pay(read.charge.invoice);
    expect((await get(formatCredential(charge, preimage))).status).toBe(200);
    expect((await get(formatCredential(charge, preimage))).status).toBe(402);
    expect(served()).toBe(1);
  });

  it('a session idle past its timeout is closed on its next request and refunded at once', async () => {
    const { open, act, ledger, wallet } = shop(memoryStores, {}, 2);
    const { offer: o, preimage, sessionId, returnHash } = await open();
    const realNow = Date.now;
    try {
      Date.now = () => realNow() + 601_000; // past the 600 s idle timeout
      const late = await act(o, { action: 'bearer', sessionId, preimage });
      expect(await late.json()).toMatchObject({ code: 'SESSION_CLOSED' });
    } finally {
      Date.now = realNow;
    }
    expect(await ledger.get(sessionId)).toMatchObject({ status: 'closed', closedBecause: 'idle', refund: { state: 'paid', amountMsat: 38 * SAT } });
    expect(await wallet.lookupInvoice(returnHash)).toMatchObject({ settled: true, amountMsat: 38 * SAT });
  });

  it('open with a return invoice that names an amount is refused with the draft’s problem type, and opens nothing', async () => {
    const { offer, wallet, get, ledger } = shop();
    const { offer: o } = await offer();
    const { preimage } = await wallet.pay(o.depositInvoice);
    const priced = await wallet.createInvoice({ amountMsat: 5 * SAT });
    const refused = await get(formatSessionCredential(o.challenge, { action: 'open', preimage, returnInvoice: priced.invoice }));
    expect(refused.status).toBe(402);
    expect(await refused.json()).toMatchObject({ code: 'INVALID_RETURN_INVOICE', type: 'https://paymentauth.org/problems/lightning/invalid-return-invoice' });
    expect(await ledger.get(o.paymentHash)).toBeNull();
  });

  it('bearer spends one unit per request; a short balance is a 402 with a fresh deposit to top up with', async () => {
    const { open, act, ledger } = shop(memoryStores, {}, 10); // 10 sats a unit, 200 deposited
    const { offer: o, preimage, sessionId } = await open();
    for (let i = 0; i < 19; i++) expect((await act(o, { action: 'bearer', sessionId, preimage })).status).toBe(200);
    const short = await act(o, { action: 'bearer', sessionId, preimage });
    expect(short.status).toBe(402);
    expect(short.headers.get('www-authenticate')).toMatch(/intent="session"/);
    expect(await short.json()).toMatchObject({
      code: 'INSUFFICIENT_BALANCE',
      type: 'https://paymentauth.org/problems/lightning/insufficient-balance',
      balanceMsat: 0,
      sessionId,
    });
    expect(await ledger.get(sessionId)).toMatchObject({ paidMsat: 200 * SAT, spentMsat: 200 * SAT });
    // A wrong preimage for the session is refused.
    const stranger = await act(o, { action: 'bearer', sessionId, preimage: '00'.repeat(32) });
    expect(await stranger.json()).toMatchObject({ code: 'PREIMAGE_MISMATCH' });
  });

  it('topUp credits a paid top-up once: 200 {"status":"ok"} without the handler; presented again it is refused', async () => {
    const { open, offer, wallet, act, ledger, served } = shop();
    const { offer: o, preimage, sessionId } = await open();
    const { offer: fresh } = await offer();
    const { preimage: topUpPreimage } = await wallet.pay(fresh.depositInvoice);
    const topUp = { action: 'topUp' as const, sessionId, topUpPreimage };
    const answers = await Promise.all(Array.from({ length: 5 }, () => act(fresh, topUp)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402, 402, 402, 402]);
    const ok = answers.find((a) => a.status === 200)!;
    expect(await ok.json()).toEqual({ status: 'ok' });
    expect(receiptOf(ok)).toMatchObject({ reference: sessionId });
    expect(served()).toBe(1);
    expect(await ledger.get(sessionId)).toMatchObject({ paidMsat: 80 * SAT, spentMsat: 2 * SAT });
    expect((await act(o, { action: 'bearer', sessionId, preimage })).status).toBe(200);
    // A top-up for a session that does not exist credits nothing, and the payment can still open a session.
    const { offer: another } = await offer();
    const { preimage: p2 } = await wallet.pay(another.depositInvoice);
    const nowhere = await act(another, { action: 'topUp', sessionId: another.paymentHash.replace(/^./, (c) => (c === 'a' ? 'b' : 'a')), topUpPreimage: p2 });
    expect(await nowhere.json()).toMatchObject({ code: 'SESSION_NOT_FOUND' });
    const returnInvoice = (await wallet.createAmountlessInvoice({})).invoice;
    expect((await act(another, { action: 'open', preimage: p2, returnInvoice })).status).toBe(200);
  });

  it('close refunds deposit minus spent to the return invoice, once; then every action is refused', async () => {
    const { open, offer, wallet, server, act, ledger } = shop();
    const { offer: o, preimage, sessionId, returnHash } = await open();
    for (let i = 0; i < 7; i++) expect((await act(o, { action: 'bearer', sessionId, preimage })).status).toBe(200);
    const closed = await act(o, { action: 'close', sessionId, preimage });
    expect(closed.status).toBe(200);
    const spent = 8 * 2; // open + 7 bearer, 2 sats each
    expect(await closed.json()).toMatchObject({
      status: 'closed',
      refundSats: 40 - spent,
      refundStatus: 'succeeded',
      refund: { state: 'paid', amountMsat: (40 - spent) * SAT },
    });
    expect(receiptOf(closed)).toMatchObject({ reference: sessionId, status: 'success', refundSats: 40 - spent, refundStatus: 'succeeded' });
    const received = await wallet.lookupInvoice(returnHash);
    expect(received).toMatchObject({ settled: true, amountMsat: (40 - spent) * SAT });
    expect((await server.balance()).balanceMsat).toBe(spent * SAT);
    // Closed: every action refused, nothing paid again.
    expect(await (await act(o, { action: 'close', sessionId, preimage })).json()).toMatchObject({ code: 'SESSION_CLOSED' });
    expect(await (await act(o, { action: 'bearer', sessionId, preimage })).json()).toMatchObject({
      code: 'SESSION_CLOSED',
      type: 'https://paymentauth.org/problems/lightning/session-closed',
    });
    const { offer: fresh } = await offer();
    const { preimage: topUpPreimage } = await wallet.pay(fresh.depositInvoice);
    expect(await (await act(fresh, { action: 'topUp', sessionId, topUpPreimage })).json()).toMatchObject({ code: 'SESSION_CLOSED' });
    expect((await ledger.get(sessionId))?.refund).toMatchObject({ state: 'paid', amountMsat: (40 - spent) * SAT, attempts: 1 });
  });

  it('the metering seam spends N units atomically, refused whole when short; the refund is exact to the millisatoshi', async () => {
    const { open, act, ledger, sessions, wallet } = shop();
    const { offer: o, preimage, sessionId, returnHash } = await open();
    const session = sessions[0]!;
    expect(await session.spend(5)).toMatchObject({ ok: true, balanceMsat: 40 * SAT - 12 * SAT });
    expect(await session.spend(15)).toMatchObject({ ok: false, reason: 'insufficient' });
    await ledger.spend(sessionId, 333, Date.now()); // a fraction of a sat, as a finer meter could spend
    const closed = await act(o, { action: 'close', sessionId, preimage });
    expect(await closed.json()).toMatchObject({ refundSats: 28 - 0.333, refund: { amountMsat: 28 * SAT - 333, state: 'paid' } });
    expect(await wallet.lookupInvoice(returnHash)).toMatchObject({ settled: true, amountMsat: 28 * SAT - 333 });
  });

  it("the refund's routing fee is charged to it: on a backend whose route pays the client the whole fee limit, the service pays out exactly what it owes and the close answer says what was sent", async () => {
    const net = memoryDevNodeStore();
    const node = createDevNode({ store: net });
    const wallet = createDevNode({ store: net });
    const ledger = memorySessionLedger();
    // As LND would pay through a route whose last hop is the client's own channel: the client collects the fee too.
    const { provider, fees } = feeTakingBackend(node, wallet);
    const handler = withL402(() => Response.json({ ok: true }), {
      priceSats: 21,
      provider,
      secret: SECRET,
      onError: () => {},
      session: lightningSessions({ unitPriceSats: 2, ledger, maxRefundFeeMsat: () => 2 * SAT }),
    });
    const get = (authorization?: string) => handler(new Request(`${BASE}/generate`, { headers: authorization ? { authorization } : {} }));
    const challenge = parsePaymentChallenges((await get()).headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session')!;
    const read = readLightningSession(challenge);
    if (!read.ok) throw new Error(read.detail);
    const { preimage } = await wallet.pay(read.session.depositInvoice);
    const returned = await wallet.createAmountlessInvoice({});
    const sessionId = read.session.paymentHash;
    expect((await get(formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice: returned.invoice }))).status).toBe(200);
    const before = (await node.balance()).balanceMsat;
    const closed = await get(formatSessionCredential(challenge, { action: 'close', sessionId, preimage }));
    expect(await closed.json()).toMatchObject({
      refundSats: 36,
      refundStatus: 'succeeded',
      refund: { state: 'paid', amountMsat: 38 * SAT, sentMsat: 36 * SAT },
    });
    expect(receiptOf(closed)).toMatchObject({ refundSats: 36, refundStatus: 'succeeded' });
    expect(fees).toEqual([2 * SAT]); // the operator's limit, the fee the route took
    expect(await wallet.lookupInvoice(returned.paymentHash)).toMatchObject({ settled: true, amountMsat: 36 * SAT });
    expect(before - (await node.balance()).balanceMsat).toBe(38 * SAT); // the refund due, fee included: never more
  });

  it('a refund that fails says so in the close answer and stays due; the operator hears of it', async () => {
    const net = memoryDevNodeStore();
    const node = createDevNode({ store: net });
    const wallet = createDevNode({ store: net });
    const ledger = memorySessionLedger();
    const errors: string[] = [];
    const provider = { ...node, name: node.name, payAmountlessInvoice: async () => Promise.reject(new PaymentFailed('no route to the return invoice')) };
    const handler = withL402(() => Response.json({ ok: true }), {
      priceSats: 21,
      provider,
      secret: SECRET,
      onError: (error, context) => errors.push(`${context}: ${error instanceof Error ? error.message : error}`),
      session: lightningSessions({ unitPriceSats: 2, ledger }),
    });
    const get = (authorization?: string) => handler(new Request(`${BASE}/generate`, { headers: authorization ? { authorization } : {} }));
    const challenge = parsePaymentChallenges((await get()).headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session')!;
    const read = readLightningSession(challenge);
    if (!read.ok) throw new Error(read.detail);
    const { preimage } = await wallet.pay(read.session.depositInvoice);
    const returnInvoice = (await wallet.createAmountlessInvoice({})).invoice;
    const sessionId = read.session.paymentHash;
    expect((await get(formatSessionCredential(challenge, { action: 'open', preimage, returnInvoice }))).status).toBe(200);
    const closed = await get(formatSessionCredential(challenge, { action: 'close', sessionId, preimage }));
    expect(closed.status).toBe(200);
    expect(await closed.json()).toMatchObject({
      status: 'closed',
      refundSats: 38,
      refundStatus: 'failed',
      refund: { state: 'failed', amountMsat: 38 * SAT, attempts: 1, lastError: 'no route to the return invoice', nextAttemptAt: expect.any(String) },
    });
    expect(receiptOf(closed)).toMatchObject({ refundSats: 38, refundStatus: 'failed' });
    expect((await ledger.get(sessionId))?.refund).toMatchObject({ state: 'failed', amountMsat: 38 * SAT });
    expect(await ledger.refundsDue(Date.now() + 3600_000, 10)).toEqual([sessionId]);
    expect(errors.some((e) => /refund/.test(e))).toBe(true);
  });
});

describe.each([
  ['the in-process ledger', memoryStores, false],
  ['the Lua ledger on redis-server (ioredis)', redisStores, true],
] as const)('100 concurrent bearer requests on a 20-unit balance, %s', (_name, stores, needsRedis) => {
  (needsRedis && !redisUp ? it.skip : it)('serve exactly 20', async () => {
    const { open, act, ledger, served } = shop(stores, {}, 1); // a 20-sat deposit
    const { offer: o, preimage, sessionId } = await open(); // the first unit
    const answers = await Promise.all(Array.from({ length: 100 }, () => act(o, { action: 'bearer', sessionId, preimage })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(19);
    expect(answers.filter((a) => a.status === 402)).toHaveLength(81);
    expect(served()).toBe(20);
    expect(await ledger.get(sessionId)).toMatchObject({ paidMsat: 20 * SAT, spentMsat: 20 * SAT });
  });

  (needsRedis && !redisUp ? it.skip : it)('close refunds deposit minus spent once, to the millisatoshi; then every action is refused', async () => {
    const { open, act, ledger, wallet, server } = shop(stores, {}, 3); // a 60-sat deposit
    const { offer: o, preimage, sessionId, returnHash } = await open();
    await act(o, { action: 'bearer', sessionId, preimage });
    const closing = await Promise.all([1, 2, 3].map(() => act(o, { action: 'close', sessionId, preimage })));
    expect(closing.map((r) => r.status).sort()).toEqual([200, 402, 402]);
    expect(await closing.find((r) => r.status === 200)!.json()).toMatchObject({ status: 'closed', refundSats: 54, refundStatus: 'succeeded' });
    expect(await wallet.lookupInvoice(returnHash)).toMatchObject({ settled: true, amountMsat: 54 * SAT });
    expect((await server.balance()).balanceMsat).toBe(6 * SAT);
    for (const payload of [
      { action: 'bearer', sessionId, preimage },
      { action: 'close', sessionId, preimage },
    ] as const)
      expect(await (await act(o, payload)).json()).toMatchObject({ code: 'SESSION_CLOSED' });
    expect((await ledger.get(sessionId))?.refund).toMatchObject({ state: 'paid', amountMsat: 54 * SAT, attempts: 1 });
  });

  (needsRedis && !redisUp ? it.skip : it)('a replayed open, and a top-up used twice, are refused', async () => {
    const { open, get, offer, wallet, act, ledger } = shop(stores, {}, 1);
    const { credential, sessionId } = await open();
    expect((await get(credential)).status).toBe(402);
    const { offer: fresh } = await offer();
    const { preimage: topUpPreimage } = await wallet.pay(fresh.depositInvoice);
    const answers = await Promise.all([1, 2].map(() => act(fresh, { action: 'topUp', sessionId, topUpPreimage })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 402]);
    expect((await ledger.get(sessionId))?.paidMsat).toBe(40 * SAT);
  });

  (needsRedis && !redisUp ? it.skip : it)('a top-up after the refund was paid is refused and not taken; its payment then opens one session', async () => {
    const { open, offer, wallet, act, ledger, errors } = shop(stores, {}, 1);
    const { offer: o, preimage, sessionId } = await open();
    expect((await act(o, { action: 'close', sessionId, preimage })).status).toBe(200);
    const closed = await ledger.get(sessionId);
    expect(closed?.refund).toMatchObject({ state: 'paid', amountMsat: 19 * SAT });
    const { offer: fresh } = await offer();
    const { preimage: topUpPreimage } = await wallet.pay(fresh.depositInvoice);
    // Presented three times: each refused the same way, none credited, the payment's claim given back each time.
    for (let i = 0; i < 3; i++) {
      const answer = await act(fresh, { action: 'topUp', sessionId, topUpPreimage });
      expect(answer.status).toBe(402);
      expect(await answer.json()).toMatchObject({ code: 'SESSION_CLOSED', sessionId, topUp: { paymentHash: fresh.paymentHash, amountSats: 20, taken: false } });
    }
    expect(await ledger.get(sessionId)).toEqual(closed);
    expect(errors.filter((e) => e.startsWith('a session top-up was refused: '))).toHaveLength(3);
    // Opened with twice at once: one session, the other a deposit already used.
    const returnInvoice = (await wallet.createAmountlessInvoice({})).invoice;
    const opening = await Promise.all([1, 2].map(() => act(fresh, { action: 'open', preimage: topUpPreimage, returnInvoice })));
    expect(opening.map((a) => a.status).sort()).toEqual([200, 402]);
    expect(await opening.find((a) => a.status === 402)!.json()).toMatchObject({ code: 'DEPOSIT_ALREADY_USED' });
    expect(await ledger.get(fresh.paymentHash)).toMatchObject({ status: 'open', paidMsat: 20 * SAT, spentMsat: SAT });
  });
});

describe('l402Middleware (Express) with sessions', () => {
  let http: Listening;
  let url = '';
  const net = memoryDevNodeStore();
  const node = createDevNode({ store: net });
  const wallet = createDevNode({ store: net });
  beforeAll(async () => {
    const app = express();
    const session = lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() });
    app.get('/generate', l402Middleware({ priceSats: 21, provider: node, secret: SECRET, realm: 'shop.example', session }), (req, res) => {
      res.json({ session: (req as { l402?: { session?: { id: string } } }).l402?.session?.id });
    });
    http = await listenNode(app);
    url = `${http.url}/generate`;
  });
  afterAll(() => http.close());

  it('opens, tops up and closes a session: the paywall’s own answers and receipts go out as they are', async () => {
    const offer = async () => {
      const response = await fetch(url);
      const challenge = parsePaymentChallenges(response.headers.get('www-authenticate')).challenges.find((c) => c.intent === 'session')!;
      const read = readLightningSession(challenge);
      if (!read.ok) throw new Error(read.detail);
      return read.session;
    };
    const o = await offer();
    const { preimage } = await wallet.pay(o.depositInvoice);
    const returned = await wallet.createAmountlessInvoice({});
    const sessionId = o.paymentHash;
    const opened = await fetch(url, {
      headers: { authorization: formatSessionCredential(o.challenge, { action: 'open', preimage, returnInvoice: returned.invoice }) },
    });
    expect(opened.status).toBe(200);
    expect(await opened.json()).toEqual({ session: sessionId });
    const fresh = await offer();
    const { preimage: topUpPreimage } = await wallet.pay(fresh.depositInvoice);
    const topped = await fetch(url, { headers: { authorization: formatSessionCredential(fresh.challenge, { action: 'topUp', sessionId, topUpPreimage }) } });
    expect(topped.status).toBe(200);
    expect(await topped.json()).toEqual({ status: 'ok' });
    expect(receiptOf(topped)).toMatchObject({ reference: sessionId });
    const closed = await fetch(url, { headers: { authorization: formatSessionCredential(o.challenge, { action: 'close', sessionId, preimage }) } });
    expect(closed.status).toBe(200);
    expect(await closed.json()).toMatchObject({ status: 'closed', refundSats: 39, refundStatus: 'succeeded' });
    expect(receiptOf(closed)).toMatchObject({ reference: sessionId, refundSats: 39, refundStatus: 'succeeded' });
    expect(await wallet.lookupInvoice(returned.paymentHash)).toMatchObject({ settled: true, amountMsat: 39 * SAT });
  });
});
