// The wallets of l402-paywall/client, each paying a paid route through its
// backend's fake (../support: the same fakes the backends' contract tests
// use, answering in each backend's documented shapes). The seller is a
// withL402 handler whose invoices come from a node on the same fake network.
// The wallets make invoices too: with an amount, and without one (a prepaid
// session's return invoice) where the backend can; with those, a session is
// opened against a seller on Core Lightning and its refund comes back.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { memoryReplayStore, withL402 } from 'l402-paywall';
import { createClnProvider } from 'l402-paywall/backends';
import { decodeInvoice, lightningSessions } from 'l402-paywall/lightning';
import {
  AmountlessInvoiceUnsupported,
  blinkWallet,
  clnWallet,
  createBudget,
  createSessions,
  fetchWithL402,
  getL402Receipt,
  getPaymentReceipt,
  L402ClientError,
  lnbitsWallet,
  lndWallet,
  phoenixdWallet,
  weblnWallet,
  type Fetch,
  type Wallet,
} from 'l402-paywall/client';
import { nwcWallet } from 'l402-paywall/nwc';
import { startFakeCln } from '../support/fake-backends/cln.js';
import { startFakeLnbits } from '../support/fake-backends/lnbits.js';
import { startFakeLnd } from '../support/fake-backends/lnd.js';
import { FakeNode, type FakeServer } from '../support/fake-backends/node.js';
import { startFakePhoenixd } from '../support/fake-backends/phoenixd.js';
import { startFakeBlink, type FakeBlink } from '../support/fake-blink.js';
import { startFakeNwcWallet, type FakeNwcWallet } from '../support/fake-nwc-wallet.js';
import { startNostrRelay, type NostrRelay } from '../support/nostr-relay.js';
import { APP_SECRET } from '../support/paid-apps.js';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';

const ROUTING_FEE_MSAT = 2_000; // what the fake nodes charge per payment

const payee = new FakeNode();
let blink: FakeBlink;
let lndFake: Awaited<ReturnType<typeof startFakeLnd>>;
let lnbitsFake: Awaited<ReturnType<typeof startFakeLnbits>>;
let nwc: FakeNwcWallet;
let relay: NostrRelay;
const fakes: FakeServer[] = [];

// The seller: 3 sats a request, invoices from `payee`, payable by every fake wallet.
const seller = withL402(() => Response.json({ sold: true }), {
  priceSats: 3,
  secret: APP_SECRET,
  onError: () => {},
  provider: {
    async createInvoice({ amountMsat, memo, expirySeconds }) {
      const issued = payee.createInvoice({ amountMsat, description: memo ?? '', expirySeconds });
      blink?.addPayable(issued.preimage);
      nwc?.addPayable(issued.preimage);
      return { invoice: issued.invoice, paymentHash: issued.paymentHash };
    },
  },
});
const sellerFetch: Fetch = (input, init) => seller(new Request(input, init));
const URL_SOLD = 'http://seller.example/api/sold';

let wallets: Record<string, { wallet: Wallet; feeLimited: boolean; requests: () => number; node?: FakeNode }>;

beforeAll(async () => {
  vi.spyOn(console, 'warn').mockImplementation(() => {});
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const [lnbits, phoenixd, lnd, cln] = await Promise.all([startFakeLnbits(), startFakePhoenixd(), startFakeLnd(), startFakeCln()]);
  fakes.push(lnbits, phoenixd, lnd, cln);
  [lndFake, lnbitsFake] = [lnd, lnbits];
  blink = await startFakeBlink({ balanceSats: 1_000, feeSats: 2 });
  relay = await startNostrRelay();
  nwc = await startFakeNwcWallet({ relayUrl: relay.url, balanceMsat: 1_000_000, feeMsat: ROUTING_FEE_MSAT });
  const webln = {
    enabled: false,
    async enable() {
      webln.enabled = true;
    },
    async sendPayment(invoice: string) {
      const paid = lnbits.node.pay(invoice, undefined);
      if ('refused' in paid || paid.payment.state !== 'succeeded') throw new Error('WebLN: payment failed');
      return { preimage: paid.payment.preimage! };
    },
  };
  const network = 'regtest' as const;
  wallets = {
    LNbits: {
      wallet: lnbitsWallet({ url: lnbits.url, adminKey: lnbits.adminKey, network }),
      feeLimited: false,
      requests: () => lnbits.requests.length,
      node: lnbits.node,
    },
    Phoenixd: {
      wallet: phoenixdWallet({ url: phoenixd.url, password: phoenixd.password, network }),
      feeLimited: false,
      requests: () => phoenixd.requests.length,
      node: phoenixd.node,
    },
    LND: { wallet: lndWallet({ url: lnd.url, macaroon: lnd.macaroon, network }), feeLimited: true, requests: () => lnd.requests.length, node: lnd.node },
    'Core Lightning': {
      wallet: clnWallet({ url: cln.url, rune: cln.rune, network }),
      feeLimited: true,
      requests: () => cln.requests.length,
      node: cln.node,
    },
    Blink: { wallet: blinkWallet({ apiKey: blink.apiKey, apiUrl: blink.url, network }), feeLimited: true, requests: () => blink.requests.length },
    NWC: { wallet: nwcWallet({ url: nwc.connectionUrl, network, timeoutMs: 5_000 }), feeLimited: false, requests: () => nwc.requests.length },
    WebLN: { wallet: weblnWallet({ webln, network }), feeLimited: false, requests: () => 0 },
  };
});

afterAll(async () => {
  (wallets?.NWC?.wallet as { close?: () => void } | undefined)?.close?.();
  await Promise.all([...fakes.map((f) => f.close()), blink?.close(), nwc?.close()]);
  await relay?.close();
  vi.restoreAllMocks();
});

const NAMES = ['LNbits', 'Phoenixd', 'LND', 'Core Lightning', 'Blink', 'NWC', 'WebLN'];

describe.each(NAMES)('%s wallet', (name) => {
  it('pays the paid route on first try, with the fee it reports', async () => {
    const budget = createBudget({ totalSats: 10 });
    const response = await fetchWithL402(URL_SOLD, undefined, { wallet: wallets[name]!.wallet, maxPriceSats: 3, budget, fetch: sellerFetch, tokens: false });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ sold: true });
    const receipt = getL402Receipt(response)!;
    expect(receipt.amountMsat).toBe(3_000);
    if (name !== 'WebLN') expect(receipt.feeMsat).toBeGreaterThan(0); // WebLN does not say
    expect(budget.spent().totalMsat).toBe(3_000);
  });

  it('is never asked to pay an invoice for another network', async () => {
    const before = wallets[name]!.requests();
    const onMainnet = { ...wallets[name]!.wallet, network: 'bitcoin' as const, payInvoice: wallets[name]!.wallet.payInvoice };
    const error = await fetchWithL402(URL_SOLD, undefined, { wallet: onMainnet, maxPriceSats: 3, fetch: sellerFetch, tokens: false }).catch((e: unknown) => e);
    expect((error as L402ClientError).code).toBe('WRONG_NETWORK');
    expect(wallets[name]!.requests()).toBe(before);
  });
});

describe.each(['LND', 'Core Lightning', 'Blink'])('%s: the per-payment fee limit', (name) => {
  it('refuses a route dearer than maxFeeSats, and the budget is as it was', async () => {
    const budget = createBudget({ totalSats: 10 });
    const error = await fetchWithL402(URL_SOLD, undefined, {
      wallet: wallets[name]!.wallet,
      maxPriceSats: 3,
      maxFeeSats: 1,
      budget,
      fetch: sellerFetch,
      tokens: false,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(L402ClientError);
    expect((error as L402ClientError).code).toBe('PAYMENT_FAILED');
    expect(budget.spent().totalMsat).toBe(0);
    expect(budget.remainingMsat()).toBe(10_000);
  });
});

describe('a backend that fails', () => {
  it('refused (no balance): PAYMENT_FAILED and nothing charged; unreachable: not paid either', async () => {
    const broke = new FakeNode();
    broke.balanceMsat = 0;
    const lnbits = await startFakeLnbits(broke);
    try {
      const budget = createBudget({ totalSats: 10 });
      const wallet = lnbitsWallet({ url: lnbits.url, adminKey: lnbits.adminKey, network: 'regtest' });
      const error = (await fetchWithL402(URL_SOLD, undefined, { wallet, maxPriceSats: 3, budget, fetch: sellerFetch, tokens: false }).catch(
        (e: unknown) => e,
      )) as L402ClientError;
      expect(error.code).toBe('PAYMENT_FAILED');
      expect(budget.spent().totalMsat).toBe(0);
    } finally {
      await lnbits.close();
    }
    const closed = lnbitsWallet({ url: `http://127.0.0.1:9/${randomBytes(2).toString('hex')}`, adminKey: 'x', network: 'regtest', timeoutMs: 1_000 });
    const budget = createBudget({ totalSats: 10 });
    const error = (await fetchWithL402(URL_SOLD, undefined, { wallet: closed, maxPriceSats: 3, budget, fetch: sellerFetch, tokens: false }).catch(
      (e: unknown) => e,
    )) as L402ClientError;
    // Unreachable is an unknown outcome for the backends (a request may have left): kept charged, never paid again.
    expect(error.code).toBe('PAYMENT_OUTCOME_UNKNOWN');
    expect(budget.spent().totalMsat).toBe(3_000);
  });
});

// What each backend's wallet is: LNbits and NIP-47 make invoices only with an amount.
const MAKES_AMOUNTLESS: Record<string, boolean> = { LNbits: false, Phoenixd: true, LND: true, 'Core Lightning': true, Blink: true, NWC: false };

describe.each(Object.keys(MAKES_AMOUNTLESS))('%s wallet makes invoices', (name) => {
  it('with an amount: the invoice asks exactly that, on the wallet network, its hash the one returned', async () => {
    const made = await wallets[name]!.wallet.createInvoice!({ amountMsat: 21_000, memo: 'top-up' });
    const decoded = decodeInvoice(made.invoice);
    expect(decoded).toMatchObject({ amountMsat: 21_000, paymentHash: made.paymentHash, description: 'top-up', network: 'regtest' });
    expect(made).toEqual({ invoice: made.invoice, paymentHash: made.paymentHash });
  });

  it('without one: an invoice whose payer names the amount, payable as long as asked (a week for a return invoice); or, where the backend cannot, a clear refusal asking nothing of it', async () => {
    const { wallet, requests } = wallets[name]!;
    if (!MAKES_AMOUNTLESS[name]) {
      const before = requests();
      const error = await wallet.createInvoice!({ memo: 'refund' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AmountlessInvoiceUnsupported);
      expect(error).toMatchObject({ code: 'AMOUNTLESS_INVOICE_UNSUPPORTED', backend: name === 'NWC' ? 'NWC wallet' : 'LNbits' });
      expect((error as Error).message).toMatch(new RegExp(`^${name === 'NWC' ? 'NWC wallet' : 'LNbits'} cannot make an invoice without an amount: `));
      expect(requests()).toBe(before);
      return;
    }
    const made = await wallet.createInvoice!({ memo: 'refund of a prepaid session', expirySeconds: 7 * 86_400 });
    const decoded = decodeInvoice(made.invoice);
    expect(decoded).toMatchObject({ amountMsat: null, paymentHash: made.paymentHash, description: 'refund of a prepaid session', expirySeconds: 7 * 86_400 });
  });
});

describe('prepaid sessions with the backend wallets', () => {
  // A seller on Core Lightning (its own fake node on the network) selling 1-sat calls through 20-sat sessions, refunding what is left on close.
  const sellerNode = new FakeNode();
  sellerNode.routingFeeMsat = 0; // this node's routes are free (and the seller reserves no fee for its refunds, below)
  const issue = sellerNode.createInvoice.bind(sellerNode);
  sellerNode.createInvoice = (input) => {
    const issued = issue(input);
    nwc?.addPayable(issued.preimage);
    return issued;
  };
  let sellerCln: FakeServer;
  let shopFetch: Fetch;
  beforeAll(async () => {
    sellerCln = await startFakeCln(sellerNode);
    const cln = sellerCln as Awaited<ReturnType<typeof startFakeCln>>;
    const shop = withL402(() => Response.json({ served: true }), {
      priceSats: 1,
      secret: APP_SECRET,
      onError: () => {},
      provider: createClnProvider({ url: cln.url, rune: cln.rune, network: 'regtest', timeoutMs: 5_000 }),
      replayStore: memoryReplayStore(),
      // This node's routes are free, and its operator reserves no fee: the refund is paid whole.
      session: lightningSessions({ unitPriceSats: 1, depositUnits: 20, ledger: memorySessionLedger(), idleTimeoutSeconds: 600, maxRefundFeeMsat: () => 0 }),
    });
    shopFetch = (input, init) => shop(input instanceof Request ? input : new Request(input, init));
  });
  afterAll(() => sellerCln?.close());

  it.each(['LND', 'Core Lightning', 'Phoenixd'])('%s: opens one on its own return invoice, spends from it, and gets the rest back on close', async (name) => {
    const { wallet, node } = wallets[name]!;
    const sessions = createSessions();
    const budget = createBudget({ totalSats: 100 });
    const options = { wallet, maxPriceSats: 1, budget, sessions, fetch: shopFetch, tokens: false as const };
    const first = await fetchWithL402('http://shop.example/api/call', undefined, options);
    expect(first.status).toBe(200);
    expect(getPaymentReceipt(first)).toMatchObject({ amountMsat: 20_000, session: { action: 'open' } });
    const second = await fetchWithL402('http://shop.example/api/call', undefined, options);
    expect(second.status).toBe(200);
    expect(getPaymentReceipt(second)).toBeUndefined(); // bearer: nothing paid
    const [closed] = await sessions.closeAll();
    // Credited because the wallet's own backend says it received the refund (an invoice without an amount: what was paid into it).
    expect(closed).toMatchObject({ status: 200, refundSats: 18, refundStatus: 'succeeded', refundSeen: true, receivedMsat: 18_000, creditedMsat: 18_000 });
    expect(budget.spent().totalMsat).toBe(2_000); // the two calls' units: the deposit less the refund
    // The refund went to the invoice without an amount the wallet's backend made, 18 sats named by the payer.
    const returned = [...node!.invoices.values()].filter((i) => i.amountless && i.settled);
    expect(returned.map((i) => i.amountMsat)).toContain(18_000);
  });

  it('the command line (--session) opens one with the wallet in the environment (LND here), and with LNbits says why it pays per request', async () => {
    const { createServer } = await import('node:http');
    const { PassThrough } = await import('node:stream');
    const { getRequestListener } = await import('@hono/node-server');
    const { fetchCommand } = await import('../../src/cli/fetch-command.js');
    const server = createServer(getRequestListener((request) => shopFetch(request)));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/call`;
    const run = async (env: Record<string, string>) => {
      const [stdout, stderr] = [new PassThrough(), new PassThrough()];
      const out: string[] = [];
      const err: string[] = [];
      stdout.on('data', (chunk: Buffer) => out.push(chunk.toString()));
      stderr.on('data', (chunk: Buffer) => err.push(chunk.toString()));
      const io = { stdout, stderr, stdin: new PassThrough(), env: { LIGHTNING_NETWORK: 'regtest', ...env }, readFile: async () => new Uint8Array() };
      const code = await fetchCommand([url, '--session', '--max-sats', '1', '--budget-sats', '100'], io);
      return { code, stdout: out.join(''), stderr: err.join('') };
    };
    try {
      const withLnd = await run({ LND_REST_URL: lndFake.url, LND_MACAROON: lndFake.macaroon });
      expect(withLnd.code).toBe(0);
      expect(JSON.parse(withLnd.stdout)).toEqual({ served: true });
      expect(withLnd.stderr).toMatch(/session [0-9a-f]{64} closed, refund 19 sats \(succeeded\)/);
      const withLnbits = await run({ LNBITS_URL: lnbitsFake.url, LNBITS_ADMIN_KEY: lnbitsFake.adminKey });
      expect(withLnbits.code).toBe(0);
      expect(withLnbits.stderr).toContain(
        'no session opened: the wallet cannot make an invoice without an amount for the refund (LNbits: its API refuses an invoice of amount 0',
      );
      expect(withLnbits.stderr).toContain('paid per request');
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("a wallet of one's own says it cannot by the error code alone; any other createInvoice failure is said as such", async () => {
    const lnd = wallets.LND!.wallet;
    const own = (error: Error): Wallet => ({
      network: 'regtest',
      payInvoice: (args) => lnd.payInvoice(args),
      createInvoice: async () => Promise.reject(error),
    });
    const call = (wallet: Wallet) =>
      fetchWithL402('http://shop.example/api/call', undefined, {
        wallet,
        maxPriceSats: 1,
        budget: createBudget({ totalSats: 100 }),
        sessions: createSessions(),
        fetch: shopFetch,
        tokens: false,
      });
    const unable = await call(own(Object.assign(new Error('my wallet only takes amounts'), { code: 'AMOUNTLESS_INVOICE_UNSUPPORTED' })));
    expect(getPaymentReceipt(unable)?.sessionNotUsed).toBe('the wallet cannot make an invoice without an amount for the refund (my wallet only takes amounts)');
    const failed = await call(own(new Error('backend down')));
    expect(getPaymentReceipt(failed)?.sessionNotUsed).toBe('the wallet could not make a return invoice (backend down)');
  });

  it.each(['LNbits', 'NWC'])('%s: cannot make the return invoice, so the call pays per request and says why', async (name) => {
    const sessions = createSessions();
    const response = await fetchWithL402('http://shop.example/api/call', undefined, {
      wallet: wallets[name]!.wallet,
      maxPriceSats: 1,
      budget: createBudget({ totalSats: 100 }),
      sessions,
      fetch: shopFetch,
      tokens: false,
    });
    expect(response.status).toBe(200);
    const receipt = getL402Receipt(response) ?? getPaymentReceipt(response);
    expect(receipt).toMatchObject({ amountMsat: 1_000 });
    expect(receipt?.sessionNotUsed).toMatch(
      new RegExp(
        `^the wallet cannot make an invoice without an amount for the refund \\(${name === 'NWC' ? "NWC wallet: NIP-47's make_invoice requires an amount" : 'LNbits: its API refuses an invoice of amount 0'}`,
      ),
    );
    expect(sessions.list()).toEqual([]);
  });
});
