// A seller of prepaid sessions that cheats its buyers, on loopback, for the
// paying client (fetchWithL402 with createSessions), the command line's
// --session and l402-mcp --sessions to meet. It is the real paywall
// (withL402 with lightningSessions, on a dev node) with a hostile layer in
// front, and the buyer's dev wallet beside it (/api/dev/pay, /api/dev/receive),
// whose every payment and receipt it records: what the wallet paid and what it
// received are the truth the client's budget, stderr and tool results must
// agree with, to the sat.
//
// Routes (every one sold by the session at 1 sat a unit, 20-unit deposits,
// and by a 1-sat charge):
// - /honest                 JSON, served as the real paywall serves it
// - /lying-close            JSON; every close is answered "refund succeeded"
//                           for all that was paid in, and nothing is paid
// - /refuses-bearer         JSON; the open is served, every bearer after it is
//                           refused with WRONG_ROUTE (a fresh offer beside it),
//                           and every close lies as /lying-close does
// - /endless-topup          a stream of payment-need-topup demands, each after
//                           the last top-up landed, and never a chunk
// - /topup-per-chunk        a stream: a chunk, then payment-need-topup, again
//                           and again once each top-up lands
// - /closes-before-topup    JSON; once 5 units are spent, a bearer is refused
//                           for balance (it is not short), and the top-up then
//                           finds its session closed, its refund of what was
//                           left paid just before: the top-up is stranded
import { getPayment, memoryReplayStore, withL402 } from 'l402-paywall';
import { createDevNode, createDevPayHandler, createDevReceiveHandler, memoryDevNodeStore } from 'l402-paywall/backends';
import { lightningSessions } from 'l402-paywall/lightning';
import { parseSessionCredential, readLightningSession } from '../../src/schemes/session/codec.js';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';
import { refundSession } from '../../src/schemes/session/refunds.js';
import { listen } from './listen.js';

export interface HostileSellerOptions {
  /**
   * A top-up paid into a session already closed: release its replay claim so
   * it can open a session (as a seller that does not keep such a payment
   * does), or keep it: an open with it is refused DEPOSIT_ALREADY_USED
   * (answered here, whatever the paywall underneath would do).
   */
  releaseStrandedTopUps?: boolean;
}

export interface HostileSeller {
  /** http://127.0.0.1:<port>: the seller and the buyer's dev wallet (--dev). */
  readonly url: string;
  /** Every payment the wallet made, in order. */
  readonly walletPaid: { paymentHash: string; amountMsat: number }[];
  /** What the wallet paid in all, msat. */
  walletPaidMsat(): number;
  /** What the wallet received on the invoices it made (return invoices), msat, as its node has it. */
  walletReceivedMsat(): Promise<number>;
  /** The session actions the hostile layer saw, in order (`open`, `bearer`, `topUp`, `close`, `none` for an unpaid request). */
  readonly actions: string[];
  close(): Promise<void>;
}

const SECRET = 'hostile-session-seller-secret-0123456789abcdef0123';
const encoder = new TextEncoder();
const sse = (name: string | undefined, data: string) => encoder.encode(`${name ? `event: ${name}\n` : ''}data: ${data}\n\n`);

export async function startHostileSeller(options: HostileSellerOptions = {}): Promise<HostileSeller> {
  const net = memoryDevNodeStore();
  const sellerNode = createDevNode({ store: net });
  const walletNode = createDevNode({ store: net });
  const ledger = memorySessionLedger();
  // The replay store, with the attempt of each claim kept, so a stranded top-up's claim can be released.
  const replay = memoryReplayStore();
  const claims = new Map<string, { attempt: string; expiresAt: number }>();
  const claim = replay.claim.bind(replay);
  replay.claim = (hash, uses, expiresAt, attempt) => {
    const claimed = claim(hash, uses, expiresAt, attempt);
    if (claimed === true && attempt !== undefined) claims.set(hash, { attempt, expiresAt });
    return claimed;
  };
  /** Top-ups credited per session: a hostile stream waits for the one it asked for before it goes on. */
  const credited = new Map<string, number>();
  const timers = new Set<NodeJS.Timeout>();
  const pause = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        resolve();
      }, ms);
      timers.add(timer);
    });
  /** Resolves once the session's credited top-ups pass `seen`, or after 5 s (false). */
  async function toppedUpPast(sessionId: string, seen: number): Promise<boolean> {
    for (let waited = 0; waited < 5_000; waited += 20) {
      if ((credited.get(sessionId) ?? 0) > seen) return true;
      await pause(20);
    }
    return false;
  }

  /** A stream that asks for a top-up, waits for it, and asks again; with `chunks`, a chunk before each demand. */
  function hostileStream(sessionId: string, chunks: boolean): Response {
    let stopped = false;
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        for (let i = 1; !stopped && i <= 200; i++) {
          if (chunks) controller.enqueue(sse(undefined, `chunk ${i}`));
          const seen = credited.get(sessionId) ?? 0;
          controller.enqueue(sse('payment-need-topup', JSON.stringify({ sessionId, balanceSpent: 0, balanceRequired: 1 })));
          if (!(await toppedUpPast(sessionId, seen))) break;
        }
        if (!stopped) controller.close();
      },
      cancel() {
        stopped = true;
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-store' } });
  }

  const paywall = withL402(
    (request: Request) => {
      const { pathname } = new URL(request.url);
      const sessionId = getPayment(request)?.session?.id ?? '';
      if (pathname === '/endless-topup') return hostileStream(sessionId, false);
      if (pathname === '/topup-per-chunk') return hostileStream(sessionId, true);
      return Response.json({ ok: true, path: pathname });
    },
    {
      priceSats: 1,
      provider: sellerNode,
      secret: SECRET,
      replayStore: replay,
      onError: () => {},
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, idleTimeoutSeconds: 600, ledger }),
    },
  );

  const actions: string[] = [];
  /** Top-ups that landed on a closed session (their payment hashes). */
  const stranded = new Set<string>();
  /** A 402 refusing a session for `code`, with a fresh offer of the same route (an unpaid request's challenges) beside it. */
  async function refusedWithOffer(request: Request, code: string, type: string): Promise<Response> {
    const offer = await paywall(new Request(request.url));
    await offer.body?.cancel();
    return Response.json(
      { type: `https://paymentauth.org/problems/lightning/${type}`, code, detail: `refused: ${code}` },
      { status: 402, headers: { 'www-authenticate': offer.headers.get('www-authenticate') ?? '' } },
    );
  }
  const lyingClose = (paidInMsat: number) => Response.json({ status: 'closed', refundSats: paidInMsat / 1000, refundStatus: 'succeeded' });

  async function seller(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    const parsed = parseSessionCredential(request.headers.get('authorization'));
    const payload = parsed.ok ? parsed.credential.payload : undefined;
    actions.push(payload?.action ?? 'none');
    const lies = pathname === '/lying-close' || pathname === '/refuses-bearer';
    if (payload?.action === 'close' && lies) return lyingClose((await ledger.get(payload.sessionId))?.paidMsat ?? 0);
    if (payload?.action === 'bearer' && pathname === '/refuses-bearer') {
      // Refused for a reason that is not its balance, with a fresh offer of the same route beside it.
      return refusedWithOffer(request, 'WRONG_ROUTE', 'wrong-route');
    }
    if (payload?.action === 'bearer' && pathname === '/closes-before-topup' && ((await ledger.get(payload.sessionId))?.spentMsat ?? 0) >= 5_000)
      return refusedWithOffer(request, 'INSUFFICIENT_BALANCE', 'insufficient-balance');
    const offered = parsed.ok ? readLightningSession(parsed.credential.challenge) : undefined;
    if (payload?.action === 'open' && offered?.ok && stranded.has(offered.session.paymentHash) && !options.releaseStrandedTopUps)
      return refusedWithOffer(request, 'DEPOSIT_ALREADY_USED', 'unknown-challenge');
    if (payload?.action === 'topUp' && pathname === '/closes-before-topup' && parsed.ok) {
      // Closed just before the top-up arrives, its refund paid: the top-up lands on a closed session (stranded).
      await ledger.close(payload.sessionId, 'client', Date.now());
      await refundSession({ ledger, provider: sellerNode }, payload.sessionId);
      const answer = await paywall(request);
      if (answer.status === 402 && offered?.ok) {
        const hash = offered.session.paymentHash;
        stranded.add(hash);
        const held = claims.get(hash);
        if (options.releaseStrandedTopUps && held) await replay.release(hash, held.attempt, held.expiresAt);
      }
      return answer;
    }
    const answer = await paywall(request);
    if (payload?.action === 'topUp' && answer.ok) credited.set(payload.sessionId, (credited.get(payload.sessionId) ?? 0) + 1);
    return answer;
  }

  const walletPaid: HostileSeller['walletPaid'] = [];
  const returnInvoices: string[] = [];
  const pay = createDevPayHandler(walletNode);
  const receive = createDevReceiveHandler(walletNode);
  const routes = async (request: Request): Promise<Response> => {
    const { pathname } = new URL(request.url);
    if (pathname === '/api/dev/pay') {
      const answer = await pay(request);
      if (answer.ok) {
        const paid = (await answer.clone().json()) as { paymentHash: string; amountMsat: number };
        walletPaid.push({ paymentHash: paid.paymentHash, amountMsat: paid.amountMsat });
      }
      return answer;
    }
    if (pathname === '/api/dev/receive' || pathname.startsWith('/api/dev/receive/')) {
      const answer = await receive(request);
      if (request.method === 'POST' && answer.ok) returnInvoices.push(((await answer.clone().json()) as { paymentHash: string }).paymentHash);
      return answer;
    }
    return seller(request);
  };

  const served = await listen(routes);
  return {
    url: served.url,
    walletPaid,
    walletPaidMsat: () => walletPaid.reduce((sum, paid) => sum + paid.amountMsat, 0),
    async walletReceivedMsat() {
      let received = 0;
      for (const hash of returnInvoices) {
        const status = await walletNode.lookupInvoice(hash);
        if (status?.settled) received += status.amountMsat;
      }
      return received;
    },
    actions,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      await served.close();
    },
  };
}
