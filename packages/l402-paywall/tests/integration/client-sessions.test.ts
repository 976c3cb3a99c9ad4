// fetchWithL402 on prepaid sessions (docs/sessions.md, the Payment scheme's
// intent="session"): against a real withL402 selling sessions with
// lightningSessions on the dev node (the server's node and the client's
// wallet on one fake network), a 1-sat route called 50 times within a
// 100-sat budget goes through one session (one 20-sat deposit, top-ups when
// refused for balance), closed with its refund credited back, so the budget
// shows exactly what was spent. A wallet that cannot make a return invoice
// pays per request and says why; a deposit above the caller's limit, or past
// the budget, is refused unpaid. The budget's credit, on its own.
import { afterEach, describe, expect, it } from 'vitest';
import { createDevNode, memoryDevNodeStore, type DevNode } from 'l402-paywall/backends';
import { getPayment, memoryReplayStore, withL402 } from 'l402-paywall';
import { EVENT_STREAM_HEADERS, lightningSessions, meteredEventStream } from 'l402-paywall/lightning';
import {
  createBudget,
  createSessions,
  fetchWithL402,
  getPaymentReceipt,
  L402ClientError,
  providerWallet,
  type ClientSessions,
  type Wallet,
} from 'l402-paywall/client';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';
import { devNodeWallet } from '../support/dev-wallet.js';

const SECRET = 'client-sessions-test-secret-0123456789abcdef0123';
const BASE = 'https://shop.example';
const SAT = 1000;

interface TestWallet extends Wallet {
  paid: string[];
  returnInvoices: string[];
}

function shop({ unitPriceSats = 1, priceSats = 1, depositUnits = 20 } = {}) {
  const net = memoryDevNodeStore();
  const server = createDevNode({ store: net });
  const node = createDevNode({ store: net });
  const ledger = memorySessionLedger();
  let served = 0;
  const handler = withL402(
    async () => {
      served++;
      return Response.json({ n: served });
    },
    {
      priceSats,
      provider: server,
      secret: SECRET,
      replayStore: memoryReplayStore(),
      session: lightningSessions({ unitPriceSats, depositUnits, ledger, idleTimeoutSeconds: 600 }),
    },
  );
  const fetch = (input: string | URL | Request, init?: RequestInit) => handler(input instanceof Request ? input : new Request(input, init));
  const wallet = (receives = true) => recordingWallet(node, receives);
  return { fetch, wallet, ledger, node, served: () => served };
}

/** A wallet on `node` that records the invoices it paid and (`receives`: it can make one) the return invoices it made. */
function recordingWallet(node: DevNode, receives = true): TestWallet {
  const w: TestWallet = {
    network: 'regtest',
    paid: [],
    returnInvoices: [],
    async payInvoice({ invoice }) {
      w.paid.push(invoice);
      return node.pay(invoice);
    },
    // What the wallet's node received: the only thing a refund is counted back on.
    lookupInvoice: providerWallet(node).lookupInvoice!,
  };
  if (receives) {
    w.createInvoice = async ({ memo }) => {
      const made = await node.createAmountlessInvoice({ memo: memo ?? 'refund', expirySeconds: 86_400 });
      w.returnInvoices.push(made.paymentHash);
      return made;
    };
  }
  return w;
}

let open: ClientSessions | undefined;
afterEach(async () => {
  await open?.closeAll();
  open = undefined;
});

describe('fetchWithL402 with sessions', () => {
  it('50 one-sat calls within a 100-sat budget: one session, 20-sat deposits, closed, the budget charged deposits minus refund', async () => {
    const { fetch, wallet: makeWallet, ledger, node, served } = shop();
    const wallet = makeWallet();
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    open = sessions;
    const actions: string[] = [];
    for (let i = 1; i <= 50; i++) {
      const response = await fetchWithL402(`${BASE}/generate`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch });
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ n: i });
      const receipt = getPaymentReceipt(response);
      if (receipt) actions.push(`${i}:${receipt.session?.action}:${receipt.amountMsat / SAT}`);
    }
    // Opened on the first call; each 20-unit deposit serves 20 calls, then a top-up.
    expect(actions).toEqual(['1:open:20', '21:topUp:20', '41:topUp:20']);
    expect(wallet.paid).toHaveLength(3);
    expect(wallet.returnInvoices).toHaveLength(1);
    expect(served()).toBe(50);
    expect(budget.spent().totalMsat).toBe(60 * SAT);
    const [held] = sessions.list();
    expect(held).toMatchObject({ origin: BASE, depositedMsat: 60 * SAT, unitPriceSats: 1 });

    const closed = await sessions.closeAll();
    expect(closed).toEqual([
      {
        origin: BASE,
        realm: held!.realm,
        sessionId: held!.sessionId,
        status: 200,
        refundSats: 10,
        refundStatus: 'succeeded',
        refundSeen: true,
        receivedMsat: 10 * SAT,
        creditedMsat: 10 * SAT,
      },
    ]);
    expect(sessions.list()).toEqual([]);
    expect(budget.spent().totalMsat).toBe(50 * SAT);
    expect(budget.remainingMsat()).toBe(50 * SAT);
    expect(await ledger.get(held!.sessionId)).toMatchObject({ status: 'closed', paidMsat: 60 * SAT, spentMsat: 50 * SAT });
    expect(await node.lookupInvoice(wallet.returnInvoices[0]!)).toMatchObject({ settled: true, amountMsat: 10 * SAT });
    // Closing again answers the first close; nothing is credited twice.
    expect(await held!.close()).toEqual(closed[0]);
    expect(budget.spent().totalMsat).toBe(50 * SAT);
  });

  it('a session the server closed is forgotten, and the next call opens a new one', async () => {
    const { fetch, wallet: makeWallet, ledger } = shop();
    const wallet = makeWallet();
    const sessions = createSessions();
    open = sessions;
    const options = { wallet, maxPriceSats: 1, budget: createBudget({ totalSats: 100 }), sessions, fetch };
    await fetchWithL402(`${BASE}/a`, undefined, options);
    const [first] = sessions.list();
    await ledger.close(first!.sessionId, 'client', Date.now());
    const response = await fetchWithL402(`${BASE}/a`, undefined, options);
    expect(response.status).toBe(200);
    expect(getPaymentReceipt(response)?.session?.action).toBe('open');
    expect(sessions.list()).toHaveLength(1);
    expect(sessions.list()[0]!.sessionId).not.toBe(first!.sessionId);
  });

  it('a session is for its route: two routes on one origin get one each, and calls alternating between them pay no more deposits', async () => {
    const { fetch, wallet: makeWallet, ledger } = shop();
    const wallet = makeWallet();
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    open = sessions;
    const options = { wallet, maxPriceSats: 1, budget, sessions, fetch };
    const actions: (string | undefined)[] = [];
    for (const path of ['/a', '/b', '/a', '/b', '/a']) {
      const response = await fetchWithL402(`${BASE}${path}`, undefined, options);
      expect(response.status).toBe(200);
      actions.push(getPaymentReceipt(response)?.session?.action);
    }
    expect(actions).toEqual(['open', 'open', undefined, undefined, undefined]);
    expect(wallet.paid).toHaveLength(2);
    const closed = await sessions.closeAll();
    expect(closed.map((c) => [c.refundSats, c.refundStatus])).toEqual([
      [17, 'succeeded'],
      [18, 'succeeded'],
    ]);
    expect(budget.spent().totalMsat).toBe(5 * SAT);
    for (const c of closed) expect(await ledger.get(c.sessionId)).toMatchObject({ status: 'closed' });
  });

  it('paths of one route (its route option a pattern) share one session: the second path finds it by the offer it is refused with', async () => {
    const net = memoryDevNodeStore();
    const server = createDevNode({ store: net });
    const node = createDevNode({ store: net });
    const handler = withL402(() => Response.json({ ok: true }), {
      priceSats: 1,
      provider: server,
      secret: SECRET,
      replayStore: memoryReplayStore(),
      route: '/items/:id',
      session: lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger(), idleTimeoutSeconds: 600 }),
    });
    const fetch = (input: string | URL | Request, init?: RequestInit) => handler(input instanceof Request ? input : new Request(input, init));
    const paid: string[] = [];
    const wallet: Wallet = {
      ...devNodeWallet(node),
      payInvoice: ({ invoice }) => {
        paid.push(invoice);
        return node.pay(invoice);
      },
    };
    const sessions = createSessions();
    open = sessions;
    const budget = createBudget({ totalSats: 100 });
    for (const id of [1, 2, 3, 1, 2]) {
      const response = await fetchWithL402(`${BASE}/items/${id}`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch });
      expect(response.status).toBe(200);
    }
    expect(paid).toHaveLength(1);
    expect(sessions.list()).toHaveLength(1);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 15, refundStatus: 'succeeded' });
  });

  it('a wallet that cannot make a return invoice pays per request, and the receipt says why', async () => {
    const { fetch, wallet: makeWallet, ledger } = shop();
    const wallet = makeWallet(false);
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    open = sessions;
    for (let i = 0; i < 3; i++) {
      const response = await fetchWithL402(`${BASE}/generate`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch, scheme: 'Payment' });
      expect(response.status).toBe(200);
      const receipt = getPaymentReceipt(response)!;
      expect(receipt).toMatchObject({ scheme: 'Payment', amountMsat: 1 * SAT });
      expect(receipt.session).toBeUndefined();
      expect(receipt.sessionNotUsed).toMatch(/createInvoice/);
    }
    expect(wallet.paid).toHaveLength(3);
    expect(sessions.list()).toEqual([]);
    expect(budget.spent().totalMsat).toBe(3 * SAT);
    expect(await ledger.get('0'.repeat(64))).toBeNull();
  });

  it('a deposit above maxDepositSats is refused unpaid, before the wallet makes a return invoice', async () => {
    const { fetch, wallet: makeWallet } = shop();
    const wallet = makeWallet();
    const sessions = createSessions({ maxDepositSats: 10 });
    open = sessions;
    const budget = createBudget({ totalSats: 100 });
    const error = await fetchWithL402(`${BASE}/generate`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(L402ClientError);
    expect(error).toMatchObject({ code: 'PRICE_ABOVE_MAXIMUM', refused: true });
    expect((error as Error).message).toMatch(/session deposit asks 20 sats, above the maximum of 10/);
    expect(wallet.paid).toEqual([]);
    expect(wallet.returnInvoices).toEqual([]);
    expect(sessions.list()).toEqual([]);
  });

  it('by default the deposit may be at most 20 times maxPriceSats; a dearer unit is refused too', async () => {
    const { fetch, wallet: makeWallet } = shop({ depositUnits: 21 });
    const wallet = makeWallet();
    const sessions = createSessions();
    open = sessions;
    const budget = createBudget({ totalSats: 100 });
    const error = await fetchWithL402(`${BASE}/x`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'PRICE_ABOVE_MAXIMUM' });
    const dear = shop({ unitPriceSats: 2, priceSats: 1 });
    const unit = await fetchWithL402(`${BASE}/x`, undefined, { wallet: dear.wallet(), maxPriceSats: 1, budget, sessions, fetch: dear.fetch }).catch(
      (e: unknown) => e,
    );
    expect((unit as Error).message).toMatch(/session's unit costs 2 sats/);
    expect(wallet.paid).toEqual([]);
  });

  it('a deposit past the budget is refused unpaid', async () => {
    const { fetch, wallet: makeWallet } = shop();
    const wallet = makeWallet();
    const budget = createBudget({ totalSats: 10 });
    const sessions = createSessions();
    open = sessions;
    const error = await fetchWithL402(`${BASE}/generate`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(wallet.paid).toEqual([]);
    expect(budget.spent().totalMsat).toBe(0);
  });

  it('without the option, a session offer is not taken', async () => {
    const { fetch, wallet: makeWallet } = shop();
    const wallet = makeWallet();
    const response = await fetchWithL402(`${BASE}/generate`, undefined, { wallet, maxPriceSats: 1, fetch, scheme: 'Payment', tokens: false });
    expect(getPaymentReceipt(response)).toMatchObject({ scheme: 'Payment', amountMsat: 1 * SAT });
    expect(getPaymentReceipt(response)?.session).toBeUndefined();
    expect(wallet.returnInvoices).toEqual([]);
  });
});

describe('createBudget: credit', () => {
  it('gives back what was paid to a host, never below zero', () => {
    const budget = createBudget({ totalSats: 100, perHostSats: 50 });
    budget.reserve('a', 40 * SAT).commit();
    budget.reserve('b', 10 * SAT).commit();
    expect(budget.credit!('a', 15 * SAT)).toBe(15 * SAT);
    expect(budget.spent()).toMatchObject({ totalMsat: 35 * SAT, byHost: { a: { msat: 25 * SAT }, b: { msat: 10 * SAT } } });
    expect(budget.remainingMsat('a')).toBe(25 * SAT);
    expect(budget.credit!('b', 30 * SAT)).toBe(10 * SAT);
    expect(budget.credit!('c', 5 * SAT)).toBe(0);
    expect(budget.spent().totalMsat).toBe(25 * SAT);
    expect(() => budget.credit!('a', -1)).toThrow(RangeError);
  });

  it('in a rolling window, a credit shrinks the newest charges, so they leave the window as what they still count', () => {
    let now = 0;
    const budget = createBudget({ totalSats: 100, windowSeconds: 60, now: () => now });
    budget.reserve('a', 20 * SAT).commit();
    now = 10_000;
    budget.reserve('a', 20 * SAT).commit();
    budget.credit!('a', 25 * SAT); // the newer 20 to 0, the older 20 to 15
    expect(budget.spent().totalMsat).toBe(15 * SAT);
    now = 61_000; // the older one leaves
    expect(budget.spent().totalMsat).toBe(0);
    now = 71_000;
    expect(budget.spent().totalMsat).toBe(0);
    expect(budget.remainingMsat()).toBe(100 * SAT);
  });
});

describe('fetchWithL402 with sessions: concurrent calls', () => {
  it('ten first calls at once open one session between them; the others wait and use it', async () => {
    const { fetch, wallet: makeWallet, served } = shop();
    const wallet = makeWallet();
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    open = sessions;
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => fetchWithL402(`${BASE}/generate`, undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch })),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(wallet.paid).toHaveLength(1);
    expect(served()).toBe(10);
    expect(sessions.list()).toHaveLength(1);
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ refundSats: 10, refundStatus: 'succeeded', creditedMsat: 10 * SAT });
    expect(budget.spent().totalMsat).toBe(10 * SAT);
  });
});

describe('createSessions({ closeOnExit: true })', () => {
  it('a program that ends without closing: its session is closed when the event loop empties, and the refund credited', async () => {
    const { execFile } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const child = fileURLToPath(new URL('../support/session-exit-child.ts', import.meta.url));
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', child], { timeout: 30_000 }, (error, out) => (error ? reject(error) : resolve(out))),
    );
    const last = JSON.parse(stdout.trim().split('\n').pop()!);
    expect(last).toMatchObject({
      held: 0,
      spentMsat: 3 * SAT,
      record: { status: 'closed', spentMsat: 3 * SAT, refund: { state: 'paid', amountMsat: 17 * SAT } },
    });
  });
});

/** A route streaming `chunks` one-sat chunks through meteredEventStream; `gate` holds the source after its first chunk until opened. */
function llm({ chunks = 25, topUpTimeoutMs = 10_000 } = {}) {
  const net = memoryDevNodeStore();
  const server = createDevNode({ store: net });
  const node = createDevNode({ store: net });
  const ledger = memorySessionLedger();
  let openGate!: () => void;
  const gate = new Promise<void>((resolve) => {
    openGate = resolve;
  });
  const handler = withL402(
    (request: Request) => {
      const session = getPayment(request)!.session!;
      async function* words() {
        for (let i = 1; i <= chunks; i++) {
          yield `token ${i}`;
          if (i === 1) await gate;
        }
      }
      return new Response(meteredEventStream(session, words(), { topUpTimeoutMs, pollMs: 20 }), { headers: EVENT_STREAM_HEADERS });
    },
    {
      priceSats: 50,
      provider: server,
      secret: SECRET,
      replayStore: memoryReplayStore(),
      onError: () => {},
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 600, ledger }),
    },
  );
  const fetch = (input: string | URL | Request, init?: RequestInit) => handler(input instanceof Request ? input : new Request(input, init));
  const wallet = recordingWallet(node);
  return { fetch, wallet, ledger, node, openGate };
}

async function readAll(reader: ReadableStreamDefaultReader<Uint8Array>, sofar = ''): Promise<string> {
  const decoder = new TextDecoder();
  let text = sofar;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return text;
    text += decoder.decode(value, { stream: true });
  }
}

describe('fetchWithL402 with sessions: a metered stream', () => {
  it('reads it as it arrives, tops up on payment-need-topup while holding it, and gets all 25 chunks on a 20-sat deposit', async () => {
    const { fetch, wallet, openGate, ledger } = llm();
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions();
    open = sessions;
    const response = await fetchWithL402('https://llm.example/stream', undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch });
    expect(response.status).toBe(200);
    expect(getPaymentReceipt(response)?.session?.action).toBe('open');
    const reader = response.body!.getReader();
    // The first chunk is readable while the source still holds the second.
    const { value } = await reader.read();
    const first = new TextDecoder().decode(value);
    expect(first).toContain('data: token 1');
    expect(first).not.toContain('token 2');
    openGate();
    const text = await readAll(reader, first);
    for (let i = 1; i <= 25; i++) expect(text).toContain(`data: token ${i}\n`);
    expect(text).toContain('event: payment-need-topup');
    expect(text).toContain('event: payment-receipt');
    expect(text).toContain('data: [DONE]');
    expect(text).not.toContain('session-timeout');
    expect(wallet.paid).toHaveLength(2);
    const [held] = sessions.list();
    expect(held).toMatchObject({ depositedMsat: 40 * SAT });
    expect(held!.topUpError).toBeUndefined();
    const [closed] = await sessions.closeAll();
    expect(closed).toMatchObject({ status: 200, refundSats: 15, refundStatus: 'succeeded', creditedMsat: 15 * SAT });
    expect(budget.spent().totalMsat).toBe(25 * SAT);
    expect(await ledger.get(held!.sessionId)).toMatchObject({ status: 'closed', paidMsat: 40 * SAT, spentMsat: 25 * SAT });
  });

  it('a top-up past the budget is not paid: the stream ends at once after the chunks paid for, with BUDGET_EXCEEDED, and the session says why', async () => {
    // The server would hold the stream for a minute (the draft's top-up timeout), past this test's own: the client does not wait for it.
    const { fetch, wallet, openGate, ledger } = llm({ topUpTimeoutMs: 60_000 });
    openGate();
    const budget = createBudget({ totalSats: 30 });
    const sessions = createSessions();
    open = sessions;
    const response = await fetchWithL402('https://llm.example/stream', undefined, { wallet, maxPriceSats: 1, budget, sessions, fetch });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const error = await (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return undefined;
        text += decoder.decode(value, { stream: true });
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(L402ClientError);
    expect(error).toMatchObject({ code: 'BUDGET_EXCEEDED', refused: true });
    // Everything before the refused top-up was read first.
    expect(text).toContain('data: token 20\n');
    expect(text).toContain('event: payment-need-topup');
    expect(text).not.toContain('data: token 21');
    expect(text).not.toContain('session-timeout');
    expect(wallet.paid).toHaveLength(1);
    const [held] = sessions.list();
    expect(held!.topUpError).toMatch(/budget/);
    expect(budget.spent().totalMsat).toBe(20 * SAT);
    expect(await ledger.get(held!.sessionId)).toMatchObject({ status: 'open', paidMsat: 20 * SAT, spentMsat: 20 * SAT });
  });
});

/** A live HTTP server: the dev wallet's pay and receive routes, a metered stream of 25 one-sat chunks, and a 1-sat JSON route, all selling sessions. */
async function liveShop() {
  const { createServer } = await import('node:http');
  const { getRequestListener } = await import('@hono/node-server');
  const { createDevPayHandler, createDevReceiveHandler } = await import('l402-paywall/backends');
  const net = memoryDevNodeStore();
  const serverNode = createDevNode({ store: net });
  const walletNode = createDevNode({ store: net });
  const ledger = memorySessionLedger();
  const paywall = (handler: (request: Request) => Response, priceSats: number) =>
    withL402(handler, {
      priceSats,
      provider: serverNode,
      secret: SECRET,
      replayStore: memoryReplayStore(),
      onError: () => {},
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 600, ledger }),
    });
  const routes: Record<string, (request: Request) => Promise<Response>> = {
    '/api/dev/pay': createDevPayHandler(walletNode),
    '/api/dev/receive': createDevReceiveHandler(walletNode),
    '/stream': paywall(
      (request) =>
        new Response(
          meteredEventStream(
            getPayment(request)!.session!,
            Array.from({ length: 25 }, (_, i) => `token ${i + 1}`),
            { topUpTimeoutMs: 10_000, pollMs: 20 },
          ),
          { headers: EVENT_STREAM_HEADERS },
        ),
      50,
    ),
    '/ask': paywall(() => Response.json({ answer: 42 }), 1),
  };
  // The receive route answers GET <route>/<payment hash> too (what the wallet received), as a Next.js [[...hash]] route does.
  const route = (pathname: string) => routes[pathname.startsWith('/api/dev/receive/') ? '/api/dev/receive' : pathname];
  const server = createServer(getRequestListener((request) => route(new URL(request.url).pathname)?.(request) ?? new Response('not found', { status: 404 })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    ledger,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

const BIN = new URL('../../src/bin.ts', import.meta.url);

describe('the command line: --session', () => {
  it('streams 25 metered chunks through one session opened with the dev wallet, tops up, closes, and says the refund', async () => {
    const { execFile } = await import('node:child_process');
    const { fileURLToPath } = await import('node:url');
    const shop = await liveShop();
    const { url } = shop;
    const bin = fileURLToPath(BIN);
    const run = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(process.execPath, ['--import', 'tsx', bin, ...args], { timeout: 30_000 }, (error, stdout, stderr) =>
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    try {
      const ok = await run(`${url}/stream`, '--dev', url, '--session', '--max-sats', '1', '--budget-sats', '100');
      expect(ok.code).toBe(0);
      for (let i = 1; i <= 25; i++) expect(ok.stdout).toContain(`data: token ${i}\n`);
      expect(ok.stdout).toContain('data: [DONE]');
      expect(ok.stderr).toMatch(/paid 20 sats .* scheme Payment/);
      // Each deposit as it is paid, the refund claimed and the one received, and what the wallet paid minus what it received.
      expect(ok.stderr).toMatch(/session ([0-9a-f]{64}): deposit paid, 20 sats \(routing fee 0 sats\)\n[\s\S]*session \1: top-up paid, 20 sats/);
      expect(ok.stderr).toMatch(/session [0-9a-f]{64} closed, refund 15 sats \(succeeded\); the wallet received 15 sats\n/);
      expect(ok.stderr).toContain('l402-paywall: spent in all 25 sats (paid 40 sats, received back 15 sats)\n');
      // A deposit dearer than --max-deposit-sats: refused, nothing paid (exit 3).
      const dear = await run(`${url}/stream`, '--dev', url, '--session', '--max-sats', '1', '--budget-sats', '100', '--max-deposit-sats', '10');
      expect(dear.code).toBe(3);
      expect(dear.stderr).toMatch(/session deposit asks 20 sats, above the maximum of 10 \[PRICE_ABOVE_MAXIMUM\]/);
    } finally {
      await shop.close();
    }
  }, 60_000);
});

describe('the MCP server: --sessions', () => {
  it('three call_paid_api calls share one session; it is closed, and refunded, when the server stops', async () => {
    const { fileURLToPath } = await import('node:url');
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const shop = await liveShop();
    const client = new Client({ name: 'test', version: '1' });
    try {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: ['--import', 'tsx', fileURLToPath(BIN), 'mcp', '--dev', shop.url, '--sessions', '--max-sats', '1', '--budget-sats', '100'],
        stderr: 'pipe',
      });
      let stderr = '';
      transport.stderr?.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      await client.connect(transport);
      const results = [];
      for (let i = 0; i < 3; i++) {
        const result = await client.callTool({ name: 'call_paid_api', arguments: { url: `${shop.url}/ask` } });
        results.push(JSON.parse((result.content as { text: string }[])[0]!.text));
      }
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(results[0]).toMatchObject({ sats_paid: 20, scheme: 'Payment', session: { action: 'open' } });
      expect(results[1]).toMatchObject({ sats_paid: 0 });
      expect(results[2]).toMatchObject({ sats_paid: 0 });
      const sessionId = results[0].session.session_id as string;
      await client.close();
      // The server closes its sessions as it stops.
      for (let i = 0; i < 100 && !/spent in all/.test(stderr); i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(stderr).toContain(`session ${sessionId} at ${shop.url} closed: refund 17 sats (succeeded); the wallet received 17 sats\n`);
      expect(stderr).toContain('spent in all 3 sats (paid 20 sats, received back 17 sats)\n');
      expect(await shop.ledger.get(sessionId)).toMatchObject({ status: 'closed', spentMsat: 3 * SAT, refund: { state: 'paid', amountMsat: 17 * SAT } });
    } finally {
      await client.close().catch(() => {});
      await shop.close();
    }
  }, 60_000);
});
