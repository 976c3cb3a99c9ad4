// The NWC provider against a local NIP-01 relay and a NIP-47 wallet service
// written from the NIP (../support), through @getalby/sdk as in production.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeInvoice, encodeInvoice } from 'l402-paywall/lightning';
import { PaymentFailed, ProviderUnavailable } from 'l402-paywall/lightning';
import { ProviderConfigError } from 'l402-paywall/lightning';
import { createNwcProvider, parseNwcUrl } from 'l402-paywall/nwc';
import { startFakeNwcWallet, type FakeNwcWallet } from '../support/fake-nwc-wallet.js';
import { startNostrRelay, type NostrRelay } from '../support/nostr-relay.js';
import { rejectsWithin } from '../support/l402.js';

const TIMEOUT_MS = 1500;
const sha256hex = (hex: string) => createHash('sha256').update(Buffer.from(hex, 'hex')).digest('hex');
const hex32 = () => randomBytes(32).toString('hex');

/** A real BOLT11 invoice from some other node, payable through the fake wallet. */
function payeeInvoice(wallet: FakeNwcWallet, amountMsat: number) {
  const preimage = hex32();
  const paymentHash = wallet.addPayable(preimage);
  const invoice = encodeInvoice(
    { network: 'regtest', amountMsat, timestamp: Math.floor(Date.now() / 1000), paymentHash, paymentSecret: hex32(), description: 'payout' },
    hex32(),
  );
  return { invoice, preimage, paymentHash };
}

let relay: NostrRelay;
let wallet: FakeNwcWallet;
let provider: ReturnType<typeof createNwcProvider>;

beforeAll(async () => {
  // The SDK logs every failed request; the tests cause many on purpose.
  vi.spyOn(console, 'error').mockImplementation(() => {});
  vi.spyOn(console, 'warn').mockImplementation(() => {});
  relay = await startNostrRelay();
  wallet = await startFakeNwcWallet({ relayUrl: relay.url, balanceMsat: 100_000, feeMsat: 3_000 });
  provider = createNwcProvider({ url: wallet.connectionUrl, network: 'regtest', timeoutMs: TIMEOUT_MS });
});

afterAll(async () => {
  provider?.close();
  await wallet?.close();
  await relay?.close();
  vi.restoreAllMocks();
});

afterEach(() => {
  relay.unmute();
  wallet.holdPayments = false;
});

describe('NWC_URL', () => {
  const pubkey = 'a'.repeat(64);
  const secret = 'b'.repeat(64);

  it('parses the wallet key, every relay and the secret', () => {
    const parsed = parseNwcUrl(
      `nostr+walletconnect://${pubkey}?relay=wss%3A%2F%2Frelay.example.com%2Fv1&relay=wss://two.example&secret=${secret.toUpperCase()}&lud16=me@example.com`,
    );
    expect(parsed).toEqual({ walletPubkey: pubkey, relays: ['wss://relay.example.com/v1', 'wss://two.example'], secret });
  });

  it.each([
    ['no scheme', `${pubkey}?relay=wss://r.example&secret=${secret}`],
    ['short pubkey', `nostr+walletconnect://abc?relay=wss://r.example&secret=${secret}`],
    ['no relay', `nostr+walletconnect://${pubkey}?secret=${secret}`],
    ['http relay', `nostr+walletconnect://${pubkey}?relay=https://r.example&secret=${secret}`],
    ['no secret', `nostr+walletconnect://${pubkey}?relay=wss://r.example`],
    ['short secret', `nostr+walletconnect://${pubkey}?relay=wss://r.example&secret=${secret.slice(2)}`],
  ])('refuses %s, naming NWC_URL and never echoing the secret', (_, url) => {
    let error: unknown;
    try {
      createNwcProvider({ url, network: 'regtest', timeoutMs: TIMEOUT_MS });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ProviderConfigError);
    expect((error as ProviderConfigError).setting).toBe('NWC_URL');
    expect((error as Error).message).toContain('NWC_URL');
    expect((error as Error).message).not.toContain(secret.slice(2, 20));
  });
});

describe('receiving', () => {
  it('creates a real invoice for the exact amount, memo and expiry asked', async () => {
    const created = await provider.createInvoice({ amountMsat: 21_000, memo: 'one call', expirySeconds: 600 });
    const decoded = decodeInvoice(created.invoice);
    expect(decoded.amountMsat).toBe(21_000);
    expect(decoded.description).toBe('one call');
    expect(decoded.paymentHash).toBe(created.paymentHash);
    expect(decoded.payeeNodeKey).toHaveLength(66);
    expect(created).toMatchObject({ amountMsat: 21_000, expiresAt: decoded.timestamp + 600 });
    const request = wallet.requests.at(-1)!;
    expect(request).toMatchObject({ method: 'make_invoice', params: { amount: 21_000, description: 'one call', expiry: 600 }, encryption: 'nip44_v2' });
  });

  it('commits to a description hash instead of a memo when asked', async () => {
    const descriptionHash = createHash('sha256').update('[["text/plain","pay me"]]').digest('hex');
    const created = await provider.createInvoice({ amountMsat: 5_000, memo: 'ignored', descriptionHash });
    expect(decodeInvoice(created.invoice).descriptionHash).toBe(descriptionHash);
    expect(wallet.requests.at(-1)!.params).toEqual({ amount: 5_000, description_hash: descriptionHash });
  });

  it('confirms a payment by lookup: unpaid, then settled with the preimage (NWC has no webhooks)', async () => {
    expect(provider.readWebhook).toBeUndefined();
    const created = await provider.createInvoice({ amountMsat: 42_000, memo: 'x' });
    expect(await provider.lookupInvoice(created.paymentHash)).toEqual({ paymentHash: created.paymentHash, settled: false, amountMsat: 42_000 });
    wallet.settle(created.paymentHash);
    const status = await provider.lookupInvoice(created.paymentHash.toUpperCase());
    expect(status).toMatchObject({ paymentHash: created.paymentHash, settled: true, amountMsat: 42_000 });
    expect(sha256hex(status!.preimage!)).toBe(created.paymentHash);
  });

  it('answers null for a hash the wallet does not know', async () => {
    expect(await provider.lookupInvoice(hex32())).toBeNull();
    expect(await provider.lookupPayment(hex32())).toBeNull();
  });

  it('works with a wallet that speaks only NIP-04', async () => {
    const old = await startFakeNwcWallet({ relayUrl: relay.url, encryptions: ['nip04'] });
    const legacy = createNwcProvider({ url: old.connectionUrl, network: 'regtest', timeoutMs: TIMEOUT_MS });
    try {
      const created = await legacy.createInvoice({ amountMsat: 7_000, memo: 'legacy' });
      expect(decodeInvoice(created.invoice).amountMsat).toBe(7_000);
      expect(old.requests.at(-1)!.encryption).toBe('nip04');
    } finally {
      legacy.close();
      await old.close();
    }
  });
});

describe('answers that do not match what was asked are refused', () => {
  function foreignInvoice(amountMsat: number, fields: { descriptionHash?: string } = {}) {
    const paymentHash = hex32();
    const invoice = encodeInvoice(
      {
        network: 'regtest',
        amountMsat,
        timestamp: Math.floor(Date.now() / 1000),
        paymentHash,
        paymentSecret: hex32(),
        ...(fields.descriptionHash ? { descriptionHash: fields.descriptionHash } : { description: 'x' }),
      },
      hex32(),
    );
    return { invoice, paymentHash };
  }
  const tx = (invoice: string, payment_hash: string, amount: number) => ({
    type: 'incoming',
    state: 'pending',
    invoice,
    payment_hash,
    amount,
    fees_paid: 0,
    created_at: 1,
  });

  it('an invoice for another amount', async () => {
    const { invoice, paymentHash } = foreignInvoice(1_000);
    wallet.answerNext('make_invoice', tx(invoice, paymentHash, 21_000));
    const error = await rejectsWithin(provider.createInvoice({ amountMsat: 21_000 }), ProviderUnavailable, TIMEOUT_MS);
    expect(error.message).toContain('1000 msat instead of 21000');
  });

  it("a payment hash that is not the invoice's", async () => {
    const { invoice } = foreignInvoice(21_000);
    wallet.answerNext('make_invoice', tx(invoice, hex32(), 21_000));
    await rejectsWithin(provider.createInvoice({ amountMsat: 21_000 }), ProviderUnavailable, TIMEOUT_MS);
  });

  it('an invoice without the requested description hash', async () => {
    const { invoice, paymentHash } = foreignInvoice(21_000, { descriptionHash: hex32() });
    wallet.answerNext('make_invoice', tx(invoice, paymentHash, 21_000));
    await rejectsWithin(provider.createInvoice({ amountMsat: 21_000, descriptionHash: hex32() }), ProviderUnavailable, TIMEOUT_MS);
  });

  it('a wallet on another network than LIGHTNING_NETWORK: a configuration error naming it', async () => {
    const mainnet = createNwcProvider({ url: wallet.connectionUrl, network: 'bitcoin', timeoutMs: TIMEOUT_MS });
    try {
      const error = await rejectsWithin(mainnet.createInvoice({ amountMsat: 21_000 }), ProviderConfigError, TIMEOUT_MS);
      expect(error.setting).toBe('LIGHTNING_NETWORK');
    } finally {
      mainnet.close();
    }
  });

  it('an answer without an invoice, or not an invoice at all', async () => {
    wallet.answerNext('make_invoice', { payment_hash: hex32(), amount: 21_000 });
    await rejectsWithin(provider.createInvoice({ amountMsat: 21_000 }), ProviderUnavailable, TIMEOUT_MS);
    wallet.answerNext('make_invoice', tx('lnbcrt1nonsense', hex32(), 21_000));
    await rejectsWithin(provider.createInvoice({ amountMsat: 21_000 }), ProviderUnavailable, TIMEOUT_MS);
  });

  it('a settled invoice whose preimage does not hash to it', async () => {
    const hash = hex32();
    wallet.answerNext('lookup_invoice', { ...tx('', hash, 1_000), state: 'settled', preimage: hex32() });
    await rejectsWithin(provider.lookupInvoice(hash), ProviderUnavailable, TIMEOUT_MS);
  });

  it('a look-up answered about another hash', async () => {
    wallet.answerNext('lookup_invoice', tx('', hex32(), 1_000));
    await rejectsWithin(provider.lookupInvoice(hex32()), ProviderUnavailable, TIMEOUT_MS);
  });
});

describe('paying', () => {
  it('pays, returns the preimage and the fee, and the payment can be looked up', async () => {
    wallet.balanceMsat = 100_000;
    const { invoice, preimage, paymentHash } = payeeInvoice(wallet, 10_000);
    // NIP-47 has no fee limit: the wallet's budget for the connection applies, and the fee is reported.
    const paid = await provider.payInvoice({ invoice, maxFeeMsat: 0 });
    expect(paid).toEqual({ paymentHash, preimage, feeMsat: 3_000 });
    expect(wallet.balanceMsat).toBe(100_000 - 10_000 - 3_000);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'succeeded', preimage, feeMsat: 3_000 });
    expect(await provider.balance()).toEqual({ balanceMsat: 87_000 });
  });

  it('pays an invoice without an amount the amount given (NIP-47 `amount`), and refuses one that names its amount', async () => {
    wallet.balanceMsat = 100_000;
    const preimage = hex32();
    const paymentHash = wallet.addPayable(preimage);
    const invoice = encodeInvoice(
      { network: 'regtest', timestamp: Math.floor(Date.now() / 1000), paymentHash, paymentSecret: hex32(), description: 'refund' },
      hex32(),
    );
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 0 }), PaymentFailed, 100);
    expect(await provider.payAmountlessInvoice!({ invoice, amountMsat: 7_000, maxFeeMsat: 0 })).toEqual({ paymentHash, preimage, feeMsat: 3_000 });
    expect(wallet.balanceMsat).toBe(100_000 - 7_000 - 3_000);
    expect([...wallet.requests].reverse().find((r) => r.method === 'pay_invoice')?.params).toMatchObject({ invoice, amount: 7_000 });
    const fixed = payeeInvoice(wallet, 10_000);
    await rejectsWithin(provider.payAmountlessInvoice!({ invoice: fixed.invoice, amountMsat: 10_000, maxFeeMsat: 0 }), PaymentFailed, 100);
  });

  it('a refusal for lack of balance is PaymentFailed and moves nothing', async () => {
    wallet.balanceMsat = 5_000;
    const { invoice, paymentHash } = payeeInvoice(wallet, 10_000);
    const error = await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 10_000 }), PaymentFailed, TIMEOUT_MS);
    expect(error.message).toContain('INSUFFICIENT_BALANCE');
    expect(wallet.balanceMsat).toBe(5_000);
    expect(await provider.lookupPayment(paymentHash)).toBeNull();
  });

  it('a failed route is PaymentFailed and looks up as failed', async () => {
    wallet.balanceMsat = 100_000;
    const paymentHash = hex32();
    const invoice = encodeInvoice(
      { network: 'regtest', amountMsat: 1_000, timestamp: Math.floor(Date.now() / 1000), paymentHash, paymentSecret: hex32(), description: 'x' },
      hex32(),
    );
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 1_000 }), PaymentFailed, TIMEOUT_MS);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'failed' });
  });

  it('an INTERNAL error leaves the outcome unknown (ProviderUnavailable), not a refusal', async () => {
    const { invoice } = payeeInvoice(wallet, 1_000);
    wallet.failNext('pay_invoice', 'INTERNAL', 'something broke');
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 1_000 }), ProviderUnavailable, TIMEOUT_MS);
  });

  it('a payment stuck in flight times out as ProviderUnavailable; lookupPayment says pending, then succeeded', async () => {
    wallet.balanceMsat = 100_000;
    wallet.holdPayments = true;
    const { invoice, preimage, paymentHash } = payeeInvoice(wallet, 2_000);
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 5_000 }), ProviderUnavailable, TIMEOUT_MS + 1_000);
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'pending' });
    wallet.completePayment(paymentHash, 'settled');
    expect(await provider.lookupPayment(paymentHash)).toEqual({ paymentHash, state: 'succeeded', preimage, feeMsat: 3_000 });
  });

  it('refuses to send an invalid invoice (nothing is asked of the wallet)', async () => {
    const before = wallet.requests.length;
    await rejectsWithin(provider.payInvoice({ invoice: 'lnbcrt1garbage', maxFeeMsat: 0 }), PaymentFailed, 100);
    expect(wallet.requests.length).toBe(before);
  });

  it('a preimage that does not hash to the invoice is not accepted as payment', async () => {
    const { invoice } = payeeInvoice(wallet, 1_000);
    wallet.answerNext('pay_invoice', { preimage: hex32(), fees_paid: 0 });
    await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 1_000 }), ProviderUnavailable, TIMEOUT_MS);
  });
});

describe('errors', () => {
  it("balance is the wallet's, in msat", async () => {
    wallet.balanceMsat = 123_456;
    expect(await provider.balance()).toEqual({ balanceMsat: 123_456 });
  });

  it('a connection the wallet does not know (UNAUTHORIZED) is a configuration error naming NWC_URL', async () => {
    const foreign = createNwcProvider({
      url: wallet.connectionUrl.replace(/secret=[0-9a-f]+/, `secret=${hex32()}`),
      network: 'regtest',
      timeoutMs: TIMEOUT_MS,
    });
    try {
      const error = await rejectsWithin(foreign.balance(), ProviderConfigError, TIMEOUT_MS);
      expect(error.setting).toBe('NWC_URL');
      expect(error.message).toContain('UNAUTHORIZED');
    } finally {
      foreign.close();
    }
  });

  it('a method the connection may not use (RESTRICTED) is a configuration error', async () => {
    const { invoice } = payeeInvoice(wallet, 1_000);
    wallet.failNext('pay_invoice', 'RESTRICTED', 'pay_invoice is not allowed');
    const error = await rejectsWithin(provider.payInvoice({ invoice, maxFeeMsat: 1_000 }), ProviderConfigError, TIMEOUT_MS);
    expect(error.setting).toBe('NWC_URL');
  });

  it('RATE_LIMITED on a read is ProviderUnavailable; NOT_FOUND is null', async () => {
    wallet.failNext('get_balance', 'RATE_LIMITED');
    await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS);
    wallet.failNext('lookup_invoice', 'NOT_FOUND');
    expect(await provider.lookupInvoice(hex32())).toBeNull();
  });

  it('a malformed answer is ProviderUnavailable', async () => {
    wallet.answerNext('get_balance', { balance: -5 });
    await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS);
  });

  it('a wallet that never answers is bounded by timeoutMs', async () => {
    wallet.silence('get_balance');
    try {
      const error = await rejectsWithin(provider.balance(), ProviderUnavailable, TIMEOUT_MS + 1_000);
      expect(error.message).toContain(`${TIMEOUT_MS} ms`);
    } finally {
      wallet.speak('get_balance');
    }
    expect(await provider.balance()).toEqual({ balanceMsat: wallet.balanceMsat });
  });

  it('a relay that accepts connections and never answers is bounded by timeoutMs', async () => {
    const fresh = createNwcProvider({ url: wallet.connectionUrl, network: 'regtest', timeoutMs: TIMEOUT_MS });
    relay.mute();
    try {
      await rejectsWithin(fresh.createInvoice({ amountMsat: 1_000 }), ProviderUnavailable, TIMEOUT_MS + 1_000);
    } finally {
      fresh.close();
    }
  });

  it('a relay that is down is ProviderUnavailable, quickly', async () => {
    const down = await startNostrRelay();
    await down.close();
    const url = wallet.connectionUrl.replace(/relay=[^&]+/, `relay=${encodeURIComponent(down.url)}`);
    const offline = createNwcProvider({ url, network: 'regtest', timeoutMs: TIMEOUT_MS });
    try {
      await rejectsWithin(offline.balance(), ProviderUnavailable, TIMEOUT_MS + 1_000);
    } finally {
      offline.close();
    }
  });

  it('hangs up the relay connection on close(), and by itself once idle (nothing keeps the process alive)', async () => {
    provider.close();
    await vi.waitFor(() => expect(relay.connectionCount()).toBe(1), { timeout: 2_000 }); // the wallet's
    const own = createNwcProvider({ url: wallet.connectionUrl, network: 'regtest', timeoutMs: TIMEOUT_MS });
    await own.balance();
    expect(relay.connectionCount()).toBe(2);
    own.close();
    await vi.waitFor(() => expect(relay.connectionCount()).toBe(1), { timeout: 2_000 });

    const idle = createNwcProvider({ url: wallet.connectionUrl, network: 'regtest', timeoutMs: TIMEOUT_MS, idleCloseMs: 200 });
    await Promise.all([idle.balance(), idle.balance()]);
    expect(relay.connectionCount()).toBe(2);
    await vi.waitFor(() => expect(relay.connectionCount()).toBe(1), { timeout: 2_000 });
    expect(await idle.balance()).toEqual({ balanceMsat: wallet.balanceMsat }); // reconnects when needed
  });
});
