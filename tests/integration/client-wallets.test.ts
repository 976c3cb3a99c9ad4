// The wallets of l402-paywall/client, each paying a paid route through its
// backend's fake (tests/support: the same fakes the backends' contract tests
// use, answering in each backend's documented shapes). The seller is a
// withL402 handler whose invoices come from a node on the same fake network.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { withL402 } from 'l402-paywall';
import {
  blinkWallet,
  clnWallet,
  createBudget,
  fetchWithL402,
  getL402Receipt,
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

const ROUTING_FEE_MSAT = 2_000; // what the fake nodes charge per payment

const payee = new FakeNode();
let blink: FakeBlink;
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

let wallets: Record<string, { wallet: Wallet; feeLimited: boolean; requests: () => number }>;

beforeAll(async () => {
  vi.spyOn(console, 'warn').mockImplementation(() => {});
  vi.spyOn(console, 'error').mockImplementation(() => {});
  const [lnbits, phoenixd, lnd, cln] = await Promise.all([startFakeLnbits(), startFakePhoenixd(), startFakeLnd(), startFakeCln()]);
  fakes.push(lnbits, phoenixd, lnd, cln);
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
    LNbits: { wallet: lnbitsWallet({ url: lnbits.url, adminKey: lnbits.adminKey, network }), feeLimited: false, requests: () => lnbits.requests.length },
    Phoenixd: {
      wallet: phoenixdWallet({ url: phoenixd.url, password: phoenixd.password, network }),
      feeLimited: false,
      requests: () => phoenixd.requests.length,
    },
    LND: { wallet: lndWallet({ url: lnd.url, macaroon: lnd.macaroon, network }), feeLimited: true, requests: () => lnd.requests.length },
    'Core Lightning': { wallet: clnWallet({ url: cln.url, rune: cln.rune, network }), feeLimited: true, requests: () => cln.requests.length },
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
