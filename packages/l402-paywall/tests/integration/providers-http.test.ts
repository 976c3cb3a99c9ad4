// Contract tests of the four REST backends (LNbits, Phoenixd, LND, CLNRest)
// against local fakes that answer in each backend's documented shapes,
// including their error shapes, with real BOLT11 invoices: what the service
// relies on from any provider, and every way a backend can fail.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { decodeInvoice, lightningSessions } from 'l402-paywall/lightning';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';
import { PaymentFailed, ProviderUnavailable, WebhookRejected, type LightningProvider } from 'l402-paywall/lightning';
import { createClnProvider } from 'l402-paywall/backends';
import { ProviderConfigError } from 'l402-paywall/lightning';
import { createLnbitsProvider } from 'l402-paywall/backends';
import { createLndProvider } from 'l402-paywall/backends';
import { fetchTrustingCa } from 'l402-paywall/node';
import { createPhoenixdProvider } from 'l402-paywall/backends';
import { startFakeCln } from '../support/fake-backends/cln.js';
import { startFakeLnbits } from '../support/fake-backends/lnbits.js';
import { startFakeLnd } from '../support/fake-backends/lnd.js';
import { FakeNode, sha256Hex, type FakeRequest, type FakeServer } from '../support/fake-backends/node.js';
import { startFakePhoenixd } from '../support/fake-backends/phoenixd.js';
import { closedPort } from '../support/ports.js';

const TIMEOUT_MS = 1_500;

interface Settings {
  url: string;
  timeoutMs?: number;
  network?: 'regtest' | 'bitcoin';
  badCredentials?: boolean;
}

interface Backend {
  name: string;
  credentialSetting: string;
  fake: FakeServer & { node: FakeNode };
  provider(settings: Settings): LightningProvider;
  /** An outside payer pays our invoice. */
  settle(paymentHash: string): Promise<void>;
  /** Where the backend takes a fee limit, how it reached it (msat); null where the API has none. */
  feeLimitSent: ((request: FakeRequest) => number) | null;
  payPath: string;
}

const backends: Array<{ name: string; start(): Promise<Backend> }> = [
  {
    name: 'LNbits',
    async start() {
      const fake = await startFakeLnbits();
      return {
        name: 'LNbits',
        credentialSetting: 'LNBITS_API_KEY',
        fake,
        provider: (s) =>
          createLnbitsProvider({
            url: s.url,
            apiKey: s.badCredentials ? 'wrong' : fake.invoiceKey,
            adminKey: fake.adminKey,
            network: s.network ?? 'regtest',
            timeoutMs: s.timeoutMs ?? TIMEOUT_MS,
          }),
        settle: (hash) => fake.settle(hash),
        feeLimitSent: null,
        payPath: '/api/v1/payments',
      };
    },
  },
  {
    name: 'Phoenixd',
    async start() {
      const fake = await startFakePhoenixd();
      return {
        name: 'Phoenixd',
        credentialSetting: 'PHOENIXD_PASSWORD',
        fake,
        provider: (s) =>
          createPhoenixdProvider({
            url: s.url,
            password: s.badCredentials ? 'wrong' : fake.password,
            webhookSecret: fake.webhookSecret,
            network: s.network ?? 'regtest',
            timeoutMs: s.timeoutMs ?? TIMEOUT_MS,
          }),
        settle: (hash) => fake.settle(hash),
        feeLimitSent: null,
        payPath: '/payinvoice',
      };
    },
  },
  {
    name: 'LND',
    async start() {
      const fake = await startFakeLnd();
      return {
        name: 'LND',
        credentialSetting: 'LND_MACAROON',
        fake,
        provider: (s) =>
          createLndProvider({
            url: s.url,
            macaroon: s.badCredentials ? 'ab'.repeat(20) : fake.macaroon,
            network: s.network ?? 'regtest',
            timeoutMs: s.timeoutMs ?? TIMEOUT_MS,
          }),
        settle: async (hash) => void fake.node.settle(hash),
        feeLimitSent: (r) => Number((JSON.parse(r.body) as { fee_limit_msat: string }).fee_limit_msat),
        payPath: '/v2/router/send',
      };
    },
  },
  {
    name: 'Core Lightning',
    async start() {
      const fake = await startFakeCln();
      return {
        name: 'Core Lightning',
        credentialSetting: 'CLN_RUNE',
        fake,
        provider: (s) =>
          createClnProvider({
            url: s.url,
            rune: s.badCredentials ? 'not-a-rune' : fake.rune,
            network: s.network ?? 'regtest',
            timeoutMs: s.timeoutMs ?? TIMEOUT_MS,
          }),
        settle: async (hash) => void fake.node.settle(hash),
        feeLimitSent: (r) => (JSON.parse(r.body) as { maxfee: number }).maxfee,
        payPath: '/v1/pay',
      };
    },
  },
];

/** Someone else on the (fake) network: invoices we pay. */
const payee = new FakeNode();
const invoiceToPay = (sats = 2_000) => payee.createInvoice({ amountMsat: sats * 1000, description: 'payout' });
/** An invoice no node on the network can settle: "no route". */
const unreachable = Object.assign(new FakeNode(), { offline: true });
const unroutableInvoice = () => unreachable.createInvoice({ amountMsat: 5_000_000, description: 'nowhere' });

describe.each(backends)('$name provider against its documented API', ({ start }) => {
  let b: Backend;
  let provider: LightningProvider;
  beforeAll(async () => {
    b = await start();
  });
  afterAll(() => b.fake.close());
  beforeEach(() => {
    b.fake.node.fault = 'none';
    b.fake.node.paymentsStayPending = false;
    b.fake.node.routingFeeMsat = 2_000;
    provider = b.provider({ url: b.fake.url });
  });

  describe('invoices', () => {
    it('creates a real BOLT11 invoice for the amount and memo, and reports its hash and expiry', async () => {
      const created = await provider.createInvoice({ amountMsat: 21_000, memo: 'L402 payment of 21 sats', expirySeconds: 600 });
      const decoded = decodeInvoice(created.invoice);
      expect(decoded.amountMsat).toBe(21_000);
      expect(decoded.paymentHash).toBe(created.paymentHash);
      expect(decoded.description).toBe('L402 payment of 21 sats');
      expect(decoded.expirySeconds).toBe(600);
      expect(created).toMatchObject({ amountMsat: 21_000, expiresAt: decoded.expiresAt });
      expect(b.fake.node.invoices.get(created.paymentHash)?.invoice).toBe(created.invoice);
    });

    it('makes an invoice without an amount (a session return invoice) where the backend can, that a payer settles with the amount it names', async () => {
      if (b.name === 'LNbits') {
        // LNbits refuses invoices of amount 0 ("Amountless invoices not supported").
        expect(provider.createAmountlessInvoice).toBeUndefined();
        return;
      }
      const created = await provider.createAmountlessInvoice!({ memo: 'refund of a prepaid session', expirySeconds: 86_400 });
      const decoded = decodeInvoice(created.invoice);
      expect(decoded.amountMsat).toBeNull();
      expect(decoded.paymentHash).toBe(created.paymentHash);
      expect(decoded.description).toBe('refund of a prepaid session');
      expect(decoded.expirySeconds).toBe(86_400);
      expect(created).toEqual({ invoice: created.invoice, paymentHash: created.paymentHash, expiresAt: decoded.expiresAt });
      const paid = payee.pay(created.invoice, undefined, 7_000);
      expect('payment' in paid && paid.payment.state).toBe('succeeded');
      expect(b.fake.node.invoices.get(created.paymentHash)).toMatchObject({ settled: true, amountMsat: 7_000 });
    });

    it.each([
      ['amount-when-none', /for 1000 msat instead of none/],
      ['wrong-hash', /payment hash/],
    ] as const)('refuses an invoice without an amount that the backend issued with the %s', async (fault, message) => {
      if (b.name === 'LNbits') return;
      b.fake.node.fault = fault;
      const error = await provider.createAmountlessInvoice!({ memo: 'refund' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderUnavailable);
      expect((error as Error).message).toMatch(message);
    });

    it('commits to a description hash (LNURL-pay) when asked', async () => {
      const metadata = JSON.stringify([['text/plain', 'Pay to the service']]);
      const descriptionHash = createHash('sha256').update(metadata).digest('hex');
      // The memo is the text behind the hash: Core Lightning needs it, the others ignore it.
      const created = await provider.createInvoice({ amountMsat: 5_000, descriptionHash, memo: metadata });
      expect(decodeInvoice(created.invoice).descriptionHash).toBe(descriptionHash);
    });

    it('looks an invoice up before and after it is paid; the preimage is the one that hashes to it', async () => {
      const created = await provider.createInvoice({ amountMsat: 3_000, memo: 'look me up' });
      expect(await provider.lookupInvoice(created.paymentHash)).toEqual({ paymentHash: created.paymentHash, settled: false, amountMsat: 3_000 });
      await b.settle(created.paymentHash);
      const after = await provider.lookupInvoice(created.paymentHash);
      expect(after).toMatchObject({ paymentHash: created.paymentHash, settled: true, amountMsat: 3_000 });
      expect(sha256Hex(after!.preimage!)).toBe(created.paymentHash);
    });

    it('says null for a hash it does not know', async () => {
      expect(await provider.lookupInvoice(randomBytes(32).toString('hex'))).toBeNull();
    });

    it.each([
      ['wrong-amount', /msat instead of/],
      ['wrong-hash', /payment hash/],
    ] as const)('refuses an invoice the backend issued with the %s', async (fault, message) => {
      b.fake.node.fault = fault;
      const error = await provider.createInvoice({ amountMsat: 8_000, memo: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderUnavailable);
      expect((error as Error).message).toMatch(message);
    });

    it('refuses an invoice without the requested description hash', async () => {
      b.fake.node.fault = 'wrong-description-hash';
      const metadata = 'metadata';
      const descriptionHash = createHash('sha256').update(metadata).digest('hex');
      await expect(provider.createInvoice({ amountMsat: 8_000, descriptionHash, memo: metadata })).rejects.toThrow(/description hash/);
    });

    it('refuses invoices for another network than LIGHTNING_NETWORK, naming the setting', async () => {
      const mainnet = b.provider({ url: b.fake.url, network: 'bitcoin' });
      const error = await mainnet.createInvoice({ amountMsat: 1_000, memo: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderConfigError);
      expect(error).toMatchObject({ setting: 'LIGHTNING_NETWORK' });
    });
  });

  describe('payments', () => {
    it('pays an invoice: preimage, fee, balance; the fee limit reaches the backend where it takes one', async () => {
      const before = (await provider.balance()).balanceMsat;
      const target = invoiceToPay();
      const paid = await provider.payInvoice({ invoice: target.invoice, maxFeeMsat: 5_000 });
      expect(paid).toEqual({ paymentHash: target.paymentHash, preimage: target.preimage, feeMsat: 2_000 });
      expect(payee.invoices.get(target.paymentHash)!.settled).toBe(true);
      const after = (await provider.balance()).balanceMsat;
      expect(before - after).toBe(2_000_000 + 2_000);
      if (b.feeLimitSent) {
        const request = [...b.fake.requests].reverse().find((r) => r.path === b.payPath)!;
        expect(b.feeLimitSent(request)).toBe(5_000);
      }
      expect(await provider.lookupPayment(target.paymentHash)).toEqual({
        paymentHash: target.paymentHash,
        state: 'succeeded',
        preimage: target.preimage,
        feeMsat: 2_000,
      });
    });

    it('pays an invoice without an amount the amount given (session refunds), where the backend can; refuses one that names its amount', async () => {
      if (b.name === 'LNbits') {
        // LNbits' payments API takes no amount and refuses an invoice without one: no refunds, so no sessions.
        expect(provider.payAmountlessInvoice).toBeUndefined();
        const session = lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() });
        expect(() => withL402(() => new Response('x'), { priceSats: 1, provider, secret: 'lnbits-sessions-secret-0123456789abcdef', session })).toThrow(
          /option `session`: the lnbits backend cannot pay invoices without an amount/,
        );
        return;
      }
      const target = payee.createInvoice({ description: 'refund' });
      const before = (await provider.balance()).balanceMsat;
      const paid = await provider.payAmountlessInvoice!({ invoice: target.invoice, amountMsat: 1_234_000, maxFeeMsat: 5_000 });
      expect(paid).toEqual({ paymentHash: target.paymentHash, preimage: target.preimage, feeMsat: 2_000 });
      expect(payee.invoices.get(target.paymentHash)).toMatchObject({ settled: true, amountMsat: 1_234_000 });
      expect(before - (await provider.balance()).balanceMsat).toBe(1_234_000 + 2_000);
      expect(await provider.lookupPayment(target.paymentHash)).toMatchObject({ state: 'succeeded', preimage: target.preimage });
      const fixed = invoiceToPay();
      await expect(provider.payAmountlessInvoice!({ invoice: fixed.invoice, amountMsat: 2_000_000, maxFeeMsat: 5_000 })).rejects.toThrow(
        'This invoice names its amount; pay it with payInvoice',
      );
      await expect(provider.payInvoice({ invoice: payee.createInvoice({ description: 'refund' }).invoice, maxFeeMsat: 5_000 })).rejects.toBeInstanceOf(
        PaymentFailed,
      );
      if (b.name === 'Phoenixd') {
        await expect(provider.payAmountlessInvoice!({ invoice: payee.createInvoice({}).invoice, amountMsat: 1_500, maxFeeMsat: 5_000 })).rejects.toThrow(
          'Phoenixd pays whole satoshis; 1500 msat is not',
        );
      }
    });

    it('a payment the backend could not make is PaymentFailed, and lookupPayment then says failed', async () => {
      const target = unroutableInvoice();
      await expect(provider.payInvoice({ invoice: target.invoice, maxFeeMsat: 5_000 })).rejects.toBeInstanceOf(PaymentFailed);
      expect(await provider.lookupPayment(target.paymentHash)).toMatchObject({ paymentHash: target.paymentHash, state: 'failed' });
    });

    it('an invoice the backend refuses outright (not BOLT11) is PaymentFailed', async () => {
      await expect(provider.payInvoice({ invoice: 'lnbcrt1notaninvoice', maxFeeMsat: 1_000 })).rejects.toBeInstanceOf(PaymentFailed);
    });

    it('a routing fee over the limit is refused where the backend takes a limit, and reported where it does not', async () => {
      b.fake.node.routingFeeMsat = 9_000;
      const target = invoiceToPay();
      const paying = provider.payInvoice({ invoice: target.invoice, maxFeeMsat: 1_000 });
      if (b.feeLimitSent) {
        await expect(paying).rejects.toBeInstanceOf(PaymentFailed);
        expect(payee.invoices.get(target.paymentHash)!.settled).toBe(false);
      } else {
        // LNbits and Phoenixd apply their own fee policy (docs/lightning-backends.md): the fee actually paid is what comes back.
        expect((await paying).feeMsat).toBe(9_000);
      }
    });

    it('a payment still in flight is "outcome unknown" (ProviderUnavailable), never PaymentFailed; lookupPayment says pending', async () => {
      b.fake.node.paymentsStayPending = true;
      const quick = b.provider({ url: b.fake.url, timeoutMs: 400 });
      const target = invoiceToPay();
      const error = await quick.payInvoice({ invoice: target.invoice, maxFeeMsat: 5_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderUnavailable);
      expect(await quick.lookupPayment(target.paymentHash)).toEqual({ paymentHash: target.paymentHash, state: 'pending' });
    });

    it('lookupPayment says null for a hash never paid', async () => {
      expect(await provider.lookupPayment(randomBytes(32).toString('hex'))).toBeNull();
    });

    it('reports the balance in msat', async () => {
      const { balanceMsat } = await provider.balance();
      const expected = b.name === 'Phoenixd' ? Math.floor(b.fake.node.balanceMsat / 1000) * 1000 : b.fake.node.balanceMsat;
      expect(balanceMsat).toBe(expected);
    });
  });

  describe('failures', () => {
    it('refused credentials are a ProviderConfigError naming the setting', async () => {
      const refused = b.provider({ url: b.fake.url, badCredentials: true });
      const error = await refused.createInvoice({ amountMsat: 1_000, memo: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderConfigError);
      expect(error).toMatchObject({ setting: b.credentialSetting });
      expect((error as Error).message).toContain(`${b.credentialSetting} was refused by ${b.name}`);
      await expect(refused.balance()).rejects.toBeInstanceOf(ProviderConfigError);
    });

    it.each(['status500', 'html', 'garbage'] as const)('%s answers are ProviderUnavailable for every call', async (fault) => {
      b.fake.node.fault = fault;
      const hash = randomBytes(32).toString('hex');
      for (const call of [
        () => provider.createInvoice({ amountMsat: 1_000, memo: 'x' }),
        () => provider.lookupInvoice(hash),
        () => provider.lookupPayment(hash),
        () => provider.balance(),
      ]) {
        await expect(call()).rejects.toBeInstanceOf(ProviderUnavailable);
      }
    });

    it('a 5xx to a payment is "outcome unknown", not a failure', async () => {
      b.fake.node.fault = 'status500';
      await expect(provider.payInvoice({ invoice: invoiceToPay().invoice, maxFeeMsat: 5_000 })).rejects.toBeInstanceOf(ProviderUnavailable);
    });

    it('a backend that accepts the connection and never answers is ProviderUnavailable within the timeout', async () => {
      b.fake.node.fault = 'hang';
      const quick = b.provider({ url: b.fake.url, timeoutMs: 300 });
      // The message names the 300 ms limit that ended it (a hang would end with the test's timeout instead).
      const error = await quick.createInvoice({ amountMsat: 1_000, memo: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderUnavailable);
      expect((error as Error).message).toMatch(/did not answer within 300 ms/);
    });

    it('a closed port is ProviderUnavailable, and the message carries no credentials', async () => {
      const port = await closedPort();
      const url = `http://user:secret-in-url@127.0.0.1:${port}`;
      const error = await b
        .provider({ url })
        .balance()
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ProviderUnavailable);
      expect((error as Error).message).toMatch(/unreachable \(ECONNREFUSED\)/);
      expect((error as Error).message).not.toContain('secret');
    });
  });
});

// ---------------------------------------------------------------------------
// Webhooks

/** Collects webhook deliveries, as /api/provider-webhook would receive them. */
async function webhookReceiver(): Promise<{ url: string; deliveries: Array<{ headers: Headers; body: string }>; close(): Promise<void> }> {
  const deliveries: Array<{ headers: Headers; body: string }> = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const headers = new Headers();
      for (const [k, v] of Object.entries(req.headers)) if (typeof v === 'string') headers.set(k, v);
      deliveries.push({ headers, body: Buffer.concat(chunks).toString('utf8') });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/provider-webhook`,
    deliveries,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Phoenixd webhooks (X-Phoenix-Signature)', () => {
  let fake: Awaited<ReturnType<typeof startFakePhoenixd>>;
  let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
  const provider = () =>
    createPhoenixdProvider({ url: fake.url, password: fake.password, webhookSecret: fake.webhookSecret, network: 'regtest', timeoutMs: TIMEOUT_MS });
  beforeAll(async () => {
    [fake, receiver] = await Promise.all([startFakePhoenixd(), webhookReceiver()]);
  });
  afterAll(() => Promise.all([fake.close(), receiver.close()]));

  it('passes the webhook URL with the invoice; the signed delivery names the paid hash', async () => {
    const created = await provider().createInvoice({ amountMsat: 4_000, memo: 'hook', webhookUrl: receiver.url });
    expect(new URLSearchParams(fake.requests.at(-1)!.body).get('webhookUrl')).toBe(receiver.url);
    await fake.settle(created.paymentHash);
    const delivery = receiver.deliveries.at(-1)!;
    expect(provider().readWebhook!(delivery)).toEqual({ paymentHash: created.paymentHash });
  });

  it('rejects a tampered body, a wrong signature and a missing one', async () => {
    const body = JSON.stringify({ type: 'payment_received', timestamp: Date.now(), amountSat: 5, paymentHash: 'ab'.repeat(32) });
    const signed = new Headers({ 'x-phoenix-signature': fake.sign(body) });
    expect(provider().readWebhook!({ headers: signed, body })).toEqual({ paymentHash: 'ab'.repeat(32) });
    expect(() => provider().readWebhook!({ headers: signed, body: body.replace('"amountSat":5', '"amountSat":500') })).toThrow(WebhookRejected);
    expect(() => provider().readWebhook!({ headers: new Headers({ 'x-phoenix-signature': 'cd'.repeat(32) }), body })).toThrow(WebhookRejected);
    expect(() => provider().readWebhook!({ headers: new Headers(), body })).toThrow(/Missing or malformed x-phoenix-signature/);
  });

  it('acknowledges an authentic event about something else (payment_sent) with null', () => {
    const body = JSON.stringify({ type: 'payment_sent', recipientAmountSat: 5, routingFeeSat: 0, paymentHash: 'ab'.repeat(32) });
    expect(provider().readWebhook!({ headers: new Headers({ 'x-phoenix-signature': fake.sign(body) }), body })).toBeNull();
  });

  it('rejects every delivery when PHOENIXD_WEBHOOK_SECRET is not set', () => {
    const body = JSON.stringify({ type: 'payment_received', paymentHash: 'ab'.repeat(32) });
    const unsigned = createPhoenixdProvider({ url: fake.url, password: fake.password, network: 'regtest', timeoutMs: TIMEOUT_MS });
    expect(() => unsigned.readWebhook!({ headers: new Headers({ 'x-phoenix-signature': fake.sign(body) }), body })).toThrow(/PHOENIXD_WEBHOOK_SECRET/);
  });
});

describe('LNbits webhooks (unsigned: the hash, confirmed by a look-up)', () => {
  let fake: Awaited<ReturnType<typeof startFakeLnbits>>;
  let receiver: Awaited<ReturnType<typeof webhookReceiver>>;
  const provider = () => createLnbitsProvider({ url: fake.url, apiKey: fake.invoiceKey, network: 'regtest', timeoutMs: TIMEOUT_MS });
  beforeAll(async () => {
    [fake, receiver] = await Promise.all([startFakeLnbits(), webhookReceiver()]);
  });
  afterAll(() => Promise.all([fake.close(), receiver.close()]));

  it('passes the webhook URL; the delivery gives the hash and lookupInvoice confirms it', async () => {
    const created = await provider().createInvoice({ amountMsat: 6_000, memo: 'hook', webhookUrl: receiver.url });
    expect(JSON.parse(fake.requests.at(-1)!.body)).toMatchObject({ out: false, amount: 6, unit: 'sat', webhook: receiver.url });
    await fake.settle(created.paymentHash);
    const event = provider().readWebhook!(receiver.deliveries.at(-1)!);
    expect(event).toEqual({ paymentHash: created.paymentHash });
    expect(await provider().lookupInvoice(event!.paymentHash)).toMatchObject({ settled: true });
  });

  it('a forged delivery names a hash the look-up does not confirm', async () => {
    const forged = { headers: new Headers(), body: JSON.stringify({ payment_hash: 'ef'.repeat(32), amount: 1_000_000 }) };
    const event = provider().readWebhook!(forged);
    expect(await provider().lookupInvoice(event!.paymentHash)).toBeNull();
  });

  it('rejects a body that is not an LNbits payment', () => {
    expect(() => provider().readWebhook!({ headers: new Headers(), body: 'not json' })).toThrow(WebhookRejected);
    expect(() => provider().readWebhook!({ headers: new Headers(), body: '{"payment_hash":"xyz"}' })).toThrow(WebhookRejected);
  });

  it('paying needs LNBITS_ADMIN_KEY, and says so', async () => {
    const error = await provider()
      .payInvoice({ invoice: invoiceToPay().invoice, maxFeeMsat: 1_000 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderConfigError);
    expect(error).toMatchObject({ setting: 'LNBITS_ADMIN_KEY' });
  });
});

describe('amounts the sat-denominated APIs cannot express', () => {
  it('LNbits and Phoenixd refuse a fraction of a sat instead of rounding it', async () => {
    for (const provider of [
      createLnbitsProvider({ url: 'http://127.0.0.1:9', apiKey: 'k', network: 'regtest', timeoutMs: 100 }),
      createPhoenixdProvider({ url: 'http://127.0.0.1:9', password: 'p', network: 'regtest', timeoutMs: 100 }),
    ]) {
      await expect(provider.createInvoice({ amountMsat: 1_500, memo: 'x' })).rejects.toThrow(/whole satoshis/);
    }
  });
});

describe('LND with its self-signed TLS certificate (LND_TLS_CERT)', () => {
  let fake: Awaited<ReturnType<typeof startFakeLnd>>;
  let cert = '';
  beforeAll(async () => {
    // A certificate like lnd's own tls.cert: self-signed, for the host it serves.
    const dir = mkdtempSync(join(tmpdir(), 'lnd-tls-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:prime256v1',
          '-nodes',
          '-days',
          '1',
          '-subj',
          '/CN=lnd',
          '-addext',
          'subjectAltName=IP:127.0.0.1',
          '-keyout',
          join(dir, 'tls.key'),
          '-out',
          join(dir, 'tls.cert'),
        ],
        { stdio: 'ignore' },
      );
      cert = readFileSync(join(dir, 'tls.cert'), 'utf8');
      fake = await startFakeLnd(new FakeNode(), { key: readFileSync(join(dir, 'tls.key'), 'utf8'), cert });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  afterAll(() => fake.close());
  const lnd = (tlsCert?: string) =>
    createLndProvider({
      url: fake.url,
      macaroon: fake.macaroon,
      network: 'regtest',
      timeoutMs: TIMEOUT_MS,
      ...(tlsCert ? { fetch: fetchTrustingCa(tlsCert) } : {}),
    });

  it('trusts the certificate given as PEM, or as the base64 of the file', async () => {
    expect(fake.url).toMatch(/^https:/);
    expect(await lnd(cert).balance()).toEqual({ balanceMsat: fake.node.balanceMsat });
    expect(await lnd(Buffer.from(cert).toString('base64')).balance()).toEqual({ balanceMsat: fake.node.balanceMsat });
  });

  it('without it, the unverifiable certificate is ProviderUnavailable naming the TLS error', async () => {
    const error = await lnd()
      .balance()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProviderUnavailable);
    expect((error as Error).message).toMatch(/LND is unreachable \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)\)/);
  });
});
