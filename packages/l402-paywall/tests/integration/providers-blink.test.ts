// The Blink provider against a local GraphQL server with Blink's shapes
// (../support/fake-blink.ts), and its Svix webhook verification.
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { decodeInvoice, encodeInvoice, lightningSessions } from 'l402-paywall/lightning';
import { PaymentFailed, ProviderUnavailable, WebhookRejected, type LightningProvider } from 'l402-paywall/lightning';
import { createBlinkProvider } from 'l402-paywall/backends';
import { ProviderConfigError, ProviderUnsupported } from 'l402-paywall/lightning';
import { startFakeBlink, type FakeBlink } from '../support/fake-blink.js';
import { rejectsWithin } from '../support/l402.js';
import { memorySessionLedger } from '../../src/schemes/session/memory-ledger.js';

const TIMEOUT_MS = 1000;
const hex32 = () => randomBytes(32).toString('hex');
const sha256hex = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex');
const SVIX_KEY = randomBytes(24);
const SVIX_SECRET = `whsec_${SVIX_KEY.toString('base64')}`;

let blink: FakeBlink;
let provider: LightningProvider;
const make = (overrides: Partial<Parameters<typeof createBlinkProvider>[0]> = {}) =>
  createBlinkProvider({ apiKey: blink.apiKey, apiUrl: blink.url, webhookSecret: SVIX_SECRET, network: 'regtest', timeoutMs: TIMEOUT_MS, ...overrides });

/** An invoice out on the network Blink can pay; without `amountMsat`, one whose payer names the amount (a session's return invoice). */
function payeeInvoice(amountMsat?: number) {
  const preimage = hex32();
  const paymentHash = blink.addPayable(preimage);
  const invoice = encodeInvoice(
    {
      network: 'regtest',
      ...(amountMsat !== undefined && { amountMsat }),
      timestamp: Math.floor(Date.now() / 1000),
      paymentHash,
      paymentSecret: hex32(),
      description: 'payout',
    },
    hex32(),
  );
  return { invoice, preimage, paymentHash };
}

beforeAll(async () => {
  blink = await startFakeBlink({ balanceSats: 100, feeSats: 2 });
  provider = make();
});
afterAll(async () => blink?.close());
afterEach(() => {
  blink.holdPayments = false;
});

describe('receiving', () => {
  it('creates a real invoice in the BTC wallet for the exact amount, memo and expiry', async () => {
    const created = await provider.createInvoice({ amountMsat: 21_000, memo: 'one call', expirySeconds: 600 });
    const decoded = decodeInvoice(created.invoice);
    expect(decoded).toMatchObject({ amountMsat: 21_000, description: 'one call', paymentHash: created.paymentHash, expirySeconds: 600 });
    expect(created).toMatchObject({ amountMsat: 21_000, expiresAt: decoded.timestamp + 600 });
    // The account lists its USD wallet first; sats go to the BTC wallet. Blink counts expiry in minutes.
    expect(blink.requests.at(-1)).toEqual({
      field: 'lnInvoiceCreateOnBehalfOfRecipient',
      variables: { input: { recipientWalletId: blink.btcWalletId, amount: 21, memo: 'one call', expiresIn: 10 } },
    });
  });

  it('commits to a description hash when asked', async () => {
    const descriptionHash = createHash('sha256').update('[["text/plain","pay me"]]').digest('hex');
    const created = await provider.createInvoice({ amountMsat: 5_000, memo: 'ignored', descriptionHash });
    expect(decodeInvoice(created.invoice).descriptionHash).toBe(descriptionHash);
  });

  it('refuses an amount Blink cannot express (a fraction of a sat) before asking', async () => {
    const before = blink.requests.length;
    await expect(provider.createInvoice({ amountMsat: 1_500 })).rejects.toBeInstanceOf(ProviderUnsupported);
    expect(blink.requests.length).toBe(before);
  });

  it('looks an invoice up before and after it is paid', async () => {
    const created = await provider.createInvoice({ amountMsat: 42_000, memo: 'x' });
    expect(await provider.lookupInvoice(created.paymentHash)).toEqual({ paymentHash: created.paymentHash, settled: false, amountMsat: 42_000 });
    blink.settle(created.paymentHash);
    const status = await provider.lookupInvoice(created.paymentHash);
    expect(status).toMatchObject({ paymentHash: created.paymentHash, settled: true, amountMsat: 42_000 });
    expect(sha256hex(status!.preimage!)).toBe(created.paymentHash);
  });

  it('answers null for an unknown hash', async () => {
    expect(await provider.lookupInvoice(hex32())).toBeNull();
    expect(await provider.lookupPayment(hex32())).toBeNull();
  });

  it('a Blink account on another network than LIGHTNING_NETWORK: a configuration error naming it', async () => {
    const error = await rejectsWithin(make({ network: 'bitcoin' }).createInvoice({ amountMsat: 2_000 }), ProviderConfigError, TIMEOUT_MS);
    expect(error.setting).toBe('LIGHTNING_NETWORK');
  });

  it('refuses an issued invoice for another amount, or with another hash', async () => {
    const paymentHash = hex32();
    const paymentRequest = encodeInvoice(
      { network: 'regtest', amountMsat: 1_000, timestamp: 1_700_000_000, paymentHash, paymentSecret: hex32(), description: 'x' },
      hex32(),
    );
    blink.failNext('lnInvoiceCreateOnBehalfOfRecipient', {
      data: { lnInvoiceCreateOnBehalfOfRecipient: { invoice: { paymentRequest, paymentHash }, errors: [] } },
    });
    expect((await rejectsWithin(provider.createInvoice({ amountMsat: 2_000 }), ProviderUnavailable, TIMEOUT_MS)).message).toContain(
      '1000 msat instead of 2000',
    );
    blink.failNext('lnInvoiceCreateOnBehalfOfRecipient', {
      data: { lnInvoiceCreateOnBehalfOfRecipient: { invoice: { paymentRequest, paymentHash: hex32() }, errors: [] } },
    });
    await rejectsWithin(provider.createInvoice({ amountMsat: 1_000 }), ProviderUnavailable, TIMEOUT_MS);
  });

  it("a refusal in the mutation's errors array is ProviderUnavailable with Blink's reason", async () => {
    blink.failNext('lnInvoiceCreateOnBehalfOfRecipient', {
      data: { lnInvoiceCreateOnBehalfOfRecipient: { invoice: null, errors: [{ message: 'Amount too large', code: 'INVALID_INPUT' }] } },
    });
    const error = await rejectsWithin(provider.createInvoice({ amountMsat: 1_000 }), ProviderUnavailable, TIMEOUT_MS);
    expect(error.message).toContain('Amount too large');
  });

  it('a paid status whose preimage does not hash to the invoice is refused', async () => {
    const created = await provider.createInvoice({ amountMsat: 1_000 });
    blink.failNext('lnInvoicePaymentStatusByHash', {
      data: { lnInvoicePaymentStatusByHash: { paymentHash: created.paymentHash, paymentPreimage: hex32(), paymentRequest: created.invoice, status: 'PAID' } },
    });
    await rejectsWithin(provider.lookupInvoice(created.paymentHash), ProviderUnavailable, TIMEOUT_MS);
  });
});

describe('paying', () => {
  it('probes the fee, pays, and returns the preimage and fee; lookupPayment agrees', async () => {
    blink.balanceSats = 100;
    const { invoice, preimage, paymentHash } = payeeInvoice(10_000);
    const paid = await provider.payInvoice({ invoice, maxFeeMsat: 2_000 });
    expect(paid).toEqual({ paymentHash, preimage, feeMsat: 2_000 });
    expect(blink.balanceSats).toBe(100 - 10 - 2);
    expect(blink.requests.slice(-2).map((r) => r.field)).toEqual(['lnInvoiceFeeProbe', 'lnInvoicePaymentSend']);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'succeeded', preimage, feeMsat: 2_000 });
    expect(await provider.balance()).toEqual({ balanceMsat: 88_000 });
  });

  it('refuses when the probed fee is above the limit, and sends nothing', async () => {
    blink.balanceSats = 100;
    const { invoice, paymentHash } = payeeInvoice(10_000);
    const error = await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 1_999 }), PaymentFailed, TIMEOUT_MS);
    expect(error.message).toContain('2000 msat');
    expect(blink.requests.at(-1)!.field).toBe('lnInvoiceFeeProbe');
    expect(blink.balanceSats).toBe(100);
    expect(await provider.lookupPayment(paymentHash)).toBeNull();
  });

  it('no route (at the probe) and no balance (at the send) are PaymentFailed', async () => {
    blink.balanceSats = 100;
    const unroutable = encodeInvoice(
      { network: 'regtest', amountMsat: 1_000, timestamp: Math.floor(Date.now() / 1000), paymentHash: hex32(), paymentSecret: hex32(), description: 'x' },
      hex32(),
    );
    expect((await rejectsWithin(provider.payInvoice({ invoice: unroutable, maxFeeMsat: 5_000 }), PaymentFailed, TIMEOUT_MS)).message).toContain('route');

    const { invoice, paymentHash } = payeeInvoice(50_000);
    blink.failNext('lnInvoicePaymentSend', {
      data: {
        lnInvoicePaymentSend: { status: 'FAILURE', transaction: null, errors: [{ message: 'Payment amount exceeds balance', code: 'INSUFFICIENT_BALANCE' }] },
      },
    });
    expect((await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 5_000 }), PaymentFailed, TIMEOUT_MS)).message).toContain('exceeds balance');
    expect(await provider.lookupPayment(paymentHash)).toBeNull();
  });

  it('a route failure at the send looks up as failed', async () => {
    blink.balanceSats = 100;
    const paymentHash = hex32();
    const invoice = encodeInvoice(
      { network: 'regtest', amountMsat: 1_000, timestamp: Math.floor(Date.now() / 1000), paymentHash, paymentSecret: hex32(), description: 'x' },
      hex32(),
    );
    blink.failNext('lnInvoiceFeeProbe', { data: { lnInvoiceFeeProbe: { amount: 0, errors: [] } } });
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 0 }), PaymentFailed, TIMEOUT_MS);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'failed' });
  });

  it('a PENDING payment is ProviderUnavailable (outcome unknown); lookupPayment follows it to success', async () => {
    blink.balanceSats = 100;
    blink.holdPayments = true;
    const { invoice, preimage, paymentHash } = payeeInvoice(3_000);
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 2_000 }), ProviderUnavailable, TIMEOUT_MS);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'pending' });
    blink.completePayment(paymentHash, 'SUCCESS');
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'succeeded', preimage, feeMsat: 2_000 });
    // Paying it again is answered ALREADY_PAID: the provider returns the proof it already has.
    expect(await provider.payInvoice({ invoice, maxFeeMsat: 2_000 })).toEqual({ paymentHash, preimage, feeMsat: 2_000 });
  });

  it('a send that times out is ProviderUnavailable within timeoutMs', async () => {
    blink.balanceSats = 100;
    const { invoice } = payeeInvoice(1_000);
    blink.failNext('lnInvoicePaymentSend', { hang: true });
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 2_000 }), ProviderUnavailable, TIMEOUT_MS + 500);
  });

  it('a success whose preimage does not hash to the invoice is not accepted', async () => {
    blink.balanceSats = 100;
    const { invoice } = payeeInvoice(1_000);
    blink.failNext('lnInvoicePaymentSend', {
      data: {
        lnInvoicePaymentSend: {
          status: 'SUCCESS',
          errors: [],
          transaction: { settlementFee: 0, settlementVia: { __typename: 'SettlementViaLn', preImage: hex32() } },
        },
      },
    });
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 2_000 }), ProviderUnavailable, TIMEOUT_MS);
  });
});

describe('invoices without an amount (prepaid sessions)', () => {
  it("makes one with Blink's no-amount mutation in the BTC wallet: no amount in it, its hash the one reported; paid, it settles with the payer's amount", async () => {
    const created = await provider.createAmountlessInvoice!({ memo: 'refund', expirySeconds: 86_400 });
    const decoded = decodeInvoice(created.invoice);
    expect(decoded).toMatchObject({ amountMsat: null, paymentHash: created.paymentHash, description: 'refund', expirySeconds: 86_400 });
    expect(created).toEqual({ invoice: created.invoice, paymentHash: created.paymentHash, expiresAt: decoded.expiresAt });
    expect(blink.requests.at(-1)).toEqual({
      field: 'lnNoAmountInvoiceCreateOnBehalfOfRecipient',
      variables: { input: { recipientWalletId: blink.btcWalletId, memo: 'refund', expiresIn: 1_440 } },
    });
    const before = blink.balanceSats;
    blink.settle(created.paymentHash, 7);
    expect(blink.balanceSats).toBe(before + 7);
  });

  it('refuses a description hash (the no-amount mutation takes a memo only) before asking, and an issued invoice that names an amount', async () => {
    const before = blink.requests.length;
    const descriptionHash = createHash('sha256').update('x').digest('hex');
    await expect(provider.createAmountlessInvoice!({ descriptionHash })).rejects.toBeInstanceOf(ProviderUnsupported);
    expect(blink.requests.length).toBe(before);
    const paymentHash = hex32();
    const paymentRequest = encodeInvoice(
      { network: 'regtest', amountMsat: 1_000, timestamp: Math.floor(Date.now() / 1000), paymentHash, paymentSecret: hex32(), description: 'x' },
      hex32(),
    );
    blink.failNext('lnNoAmountInvoiceCreateOnBehalfOfRecipient', {
      data: { lnNoAmountInvoiceCreateOnBehalfOfRecipient: { invoice: { paymentRequest, paymentHash }, errors: [] } },
    });
    const error = await rejectsWithin(provider.createAmountlessInvoice!({ memo: 'refund' }), ProviderUnavailable, TIMEOUT_MS);
    expect(error.message).toContain('for 1000 msat instead of none');
  });

  it('pays one the amount asked, in whole sats: no-amount fee probe and send; lookupPayment agrees', async () => {
    blink.balanceSats = 10_000;
    const { invoice, preimage, paymentHash } = payeeInvoice();
    const paid = await provider.payAmountlessInvoice!({ invoice, amountMsat: 1_234_000, maxFeeMsat: 20_000 });
    expect(paid).toEqual({ paymentHash, preimage, feeMsat: 2_000 });
    expect(blink.balanceSats).toBe(10_000 - 1_234 - 2);
    const input = { walletId: blink.btcWalletId, paymentRequest: invoice, amount: 1_234 };
    expect(blink.requests.slice(-2)).toEqual([
      { field: 'lnNoAmountInvoiceFeeProbe', variables: { input } },
      { field: 'lnNoAmountInvoicePaymentSend', variables: { input } },
    ]);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'succeeded', preimage, feeMsat: 2_000 });
  });

  it('refuses, sending nothing: a fraction of a sat, an invoice that names its amount, a probed fee above the limit', async () => {
    blink.balanceSats = 10_000;
    const before = blink.requests.length;
    const error = await rejectsWithin(
      provider.payAmountlessInvoice!({ invoice: payeeInvoice().invoice, amountMsat: 1_500, maxFeeMsat: 20_000 }),
      PaymentFailed,
      TIMEOUT_MS,
    );
    expect(error.message).toBe('Blink pays whole satoshis; 1500 msat is not');
    const named = await rejectsWithin(
      provider.payAmountlessInvoice!({ invoice: payeeInvoice(2_000).invoice, amountMsat: 2_000, maxFeeMsat: 20_000 }),
      PaymentFailed,
      TIMEOUT_MS,
    );
    expect(named.message).toBe('This invoice names its amount; pay it with payInvoice');
    // And the other way round: payInvoice does not pay an invoice without an amount.
    await rejectsWithin(provider.payInvoice({ invoice: payeeInvoice().invoice, maxFeeMsat: 20_000 }), PaymentFailed, TIMEOUT_MS);
    expect(blink.requests.length).toBe(before);
    const { invoice, paymentHash } = payeeInvoice();
    const dear = await rejectsWithin(provider.payAmountlessInvoice!({ invoice, amountMsat: 5_000, maxFeeMsat: 1_999 }), PaymentFailed, TIMEOUT_MS);
    expect(dear.message).toContain('2000 msat');
    expect(blink.requests.at(-1)!.field).toBe('lnNoAmountInvoiceFeeProbe');
    expect(blink.balanceSats).toBe(10_000);
    expect(await provider.lookupPayment(paymentHash)).toBeNull();
  });

  it('so a Blink backend can sell prepaid sessions (lightningSessions no longer refuses it)', () => {
    const session = lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() });
    expect(() => withL402(() => new Response('x'), { priceSats: 1, provider, secret: 'blink-sessions-secret-0123456789abcdef', session })).not.toThrow();
  });

  it('a PENDING no-amount payment is outcome unknown; lookupPayment follows it', async () => {
    blink.balanceSats = 10_000;
    blink.holdPayments = true;
    const { invoice, preimage, paymentHash } = payeeInvoice();
    await rejectsWithin(provider.payAmountlessInvoice!({ invoice, amountMsat: 3_000, maxFeeMsat: 2_000 }), ProviderUnavailable, TIMEOUT_MS);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'pending' });
    blink.completePayment(paymentHash, 'SUCCESS');
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'succeeded', preimage, feeMsat: 2_000 });
  });
});

describe('errors and configuration', () => {
  it('a wrong API key (HTTP 401) is a configuration error naming BLINK_API_KEY', async () => {
    const error = await rejectsWithin(make({ apiKey: 'blink_wrong' }).balance(), ProviderConfigError, TIMEOUT_MS);
    expect(error.setting).toBe('BLINK_API_KEY');
    expect(error.message).not.toContain('blink_wrong');
  });

  it('a key without the scope (GraphQL "Not authorized") is a configuration error', async () => {
    blink.failNext('wallets', { graphqlErrors: [{ message: 'Not authorized', extensions: { code: 'NOT_AUTHORIZED' } }] });
    expect((await rejectsWithin(provider.balance(), ProviderConfigError, TIMEOUT_MS)).setting).toBe('BLINK_API_KEY');
  });

  it('a USD wallet id, or one of another account, names BLINK_WALLET_ID', async () => {
    expect((await rejectsWithin(make({ walletId: blink.usdWalletId }).createInvoice({ amountMsat: 1_000 }), ProviderConfigError, TIMEOUT_MS)).setting).toBe(
      'BLINK_WALLET_ID',
    );
    expect((await rejectsWithin(make({ walletId: 'nope' }).balance(), ProviderConfigError, TIMEOUT_MS)).setting).toBe('BLINK_WALLET_ID');
    const explicit = make({ walletId: blink.btcWalletId });
    expect(decodeInvoice((await explicit.createInvoice({ amountMsat: 3_000 })).invoice).amountMsat).toBe(3_000);
  });

  it('other GraphQL errors, 5xx, non-JSON and malformed data are ProviderUnavailable', async () => {
    blink.failNext('wallets', { graphqlErrors: [{ message: 'Internal server error' }] });
    await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS);
    blink.failNext('wallets', { status: 502, body: '<html>bad gateway</html>' });
    await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS);
    blink.failNext('wallets', { status: 200, body: 'not json' });
    await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS);
    blink.failNext('wallets', { data: { me: { defaultAccount: { wallets: [{ id: 1 }] } } } });
    await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS);
  });

  it('a server that never answers is bounded by timeoutMs', async () => {
    blink.failNext('wallets', { hang: true });
    const error = await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS + 500);
    expect(error.message).toContain(`${TIMEOUT_MS} ms`);
  });

  it('an unreachable server is ProviderUnavailable', async () => {
    await rejectsWithin(make({ apiUrl: 'http://127.0.0.1:9/graphql' }).balance(), ProviderUnavailable, TIMEOUT_MS + 500);
  });

  it('a webhook secret that is not whsec_<base64> is refused at start, naming BLINK_WEBHOOK_SECRET', () => {
    expect(() => make({ webhookSecret: 'secret' })).toThrow(ProviderConfigError);
    expect(() => make({ webhookSecret: 'whsec_' })).toThrow(/BLINK_WEBHOOK_SECRET/);
  });
});

describe('Svix webhooks', () => {
  const paymentHash = hex32();
  const body = JSON.stringify({
    accountId: 'acc',
    eventType: 'receive.lightning',
    walletId: 'w',
    transaction: { id: 't', initiationVia: { type: 'lightning', paymentHash, pubkey: 'p' }, settlementAmount: 21, status: 'success' },
  });
  const now = 1_700_000_000_000;
  const sign = (id: string, ts: number, payload: string, key = SVIX_KEY) => `v1,${createHmac('sha256', key).update(`${id}.${ts}.${payload}`).digest('base64')}`;
  const delivery = (headers: Record<string, string>, payload = body, at = now) => ({ headers: new Headers(headers), body: payload, now: at });
  const ts = now / 1000;

  it('accepts a signed delivery and returns the payment hash and svix-id', () => {
    const event = provider.readWebhook!(delivery({ 'svix-id': 'msg_1', 'svix-timestamp': String(ts), 'svix-signature': sign('msg_1', ts, body) }));
    expect(event).toEqual({ paymentHash, eventId: 'msg_1' });
  });

  it('accepts when any of several signatures is valid (secret rotation)', () => {
    const signatures = `v1,${randomBytes(32).toString('base64')} v2,abc ${sign('msg_2', ts, body)}`;
    expect(provider.readWebhook!(delivery({ 'svix-id': 'msg_2', 'svix-timestamp': String(ts), 'svix-signature': signatures }))?.paymentHash).toBe(paymentHash);
  });

  it.each([
    ['a missing signature', { 'svix-id': 'm', 'svix-timestamp': String(ts) }],
    ['a missing id', { 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, body) }],
    ['a signature by another key', { 'svix-id': 'm', 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, body, randomBytes(24)) }],
    ['a signature for another id', { 'svix-id': 'm2', 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, body) }],
    ['a stale timestamp (6 minutes old)', { 'svix-id': 'm', 'svix-timestamp': String(ts - 360), 'svix-signature': sign('m', ts - 360, body) }],
    ['a timestamp 6 minutes ahead', { 'svix-id': 'm', 'svix-timestamp': String(ts + 360), 'svix-signature': sign('m', ts + 360, body) }],
    ['a non-numeric timestamp', { 'svix-id': 'm', 'svix-timestamp': 'soon', 'svix-signature': sign('m', ts, body) }],
    ['an unversioned signature', { 'svix-id': 'm', 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, body).slice(3) }],
  ])('rejects %s', (_, headers) => {
    expect(() => provider.readWebhook!(delivery(headers as Record<string, string>))).toThrow(WebhookRejected);
  });

  it('rejects a body changed after signing', () => {
    const signature = sign('m', ts, body);
    const tampered = body.replace(paymentHash, hex32());
    expect(() => provider.readWebhook!(delivery({ 'svix-id': 'm', 'svix-timestamp': String(ts), 'svix-signature': signature }, tampered))).toThrow(
      WebhookRejected,
    );
  });

  it('accepts a timestamp 4 minutes old (inside the tolerance)', () => {
    const old = ts - 240;
    expect(provider.readWebhook!(delivery({ 'svix-id': 'm', 'svix-timestamp': String(old), 'svix-signature': sign('m', old, body) }))?.paymentHash).toBe(
      paymentHash,
    );
  });

  it('acknowledges authentic events that are not incoming Lightning payments with null (nothing to do, no redelivery)', () => {
    for (const eventType of ['send.lightning', 'receive.onchain']) {
      const other = body.replace('receive.lightning', eventType);
      expect(provider.readWebhook!(delivery({ 'svix-id': 'm', 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, other) }, other))).toBeNull();
    }
    // The signature is still checked first.
    const forged = body.replace('receive.lightning', 'send.lightning');
    expect(() => provider.readWebhook!(delivery({ 'svix-id': 'm', 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, body) }, forged))).toThrow(
      WebhookRejected,
    );
  });

  it('rejects every delivery when no webhook secret is configured', () => {
    const unsigned = make({ webhookSecret: undefined });
    expect(() => unsigned.readWebhook!(delivery({ 'svix-id': 'm', 'svix-timestamp': String(ts), 'svix-signature': sign('m', ts, body) }))).toThrow(
      /BLINK_WEBHOOK_SECRET/,
    );
  });
});
