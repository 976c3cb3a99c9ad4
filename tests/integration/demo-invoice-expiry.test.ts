// Every demo 402 makes two invoices (the charge's and the session deposit's),
// and most are never paid: the embedded dev node keeps an invoice only until it
// expires unless it is paid (then a day longer, for late look-ups), and the
// in-process store drops expired keys from memory soon after, rather than
// holding every 402 ever answered for a day. Through the local server; the
// store's own sweep on a fake clock.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decodeInvoice } from 'l402-paywall/lightning';
import { createMemoryStore, EXPIRED_SWEEP_INTERVAL_MS } from '../../lib/store/memory.js';
import { useDevServer } from '../support/server.js';

const TTL_SECONDS = 2;
const server = useDevServer(() => ({ DATABASE_URL: undefined, L402_TOKEN_TTL_SECONDS: String(TTL_SECONDS) }));

interface Demo402 {
  invoice: string;
  paymentHash: string;
  session: { depositInvoice: string };
}

describe('the dev node drops the invoices of unpaid 402s when they expire', () => {
  it('an unpaid invoice is gone after its expiry; a paid one is still found settled', async () => {
    const answer = await fetch(`${server.url}/api/demo/btc-price`);
    expect(answer.status).toBe(402);
    const body = (await answer.json()) as Demo402;
    const depositHash = decodeInvoice(body.session.depositInvoice).paymentHash;
    const paid = await fetch(`${server.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: body.invoice }),
    });
    expect(paid.status).toBe(200);
    const { provider, store } = server.ctx;
    expect(await provider.lookupInvoice(depositHash)).toMatchObject({ settled: false });

    await new Promise((resolve) => setTimeout(resolve, TTL_SECONDS * 1000 + 300));
    expect(await store.get(`devnode:invoice:${depositHash}`)).toBeNull();
    expect(await provider.lookupInvoice(depositHash)).toBeNull();
    expect(await provider.lookupInvoice(body.paymentHash)).toMatchObject({ settled: true, amountMsat: 1000 });
    // Paying it now is refused, as before: it is unknown (expired and dropped).
    const late = await fetch(`${server.url}/api/dev/pay`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoice: body.session.depositInvoice }),
    });
    expect(late.status).toBeGreaterThanOrEqual(400);
    expect(late.status).toBeLessThan(500);
  });
});

describe('the in-process store lets expired keys go from memory', () => {
  afterEach(() => vi.useRealTimers());

  it('3,000 keys of expired invoices leave memory at the first write after the sweep interval, though nobody reads them', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = createMemoryStore();
    for (let i = 0; i < 3_000; i++) await store.set(`devnode:invoice:${i}`, 'x'.repeat(600), { ttlMs: 1_000 });
    await store.set('kept', 'y');
    vi.setSystemTime(Date.now() + 1_000 + EXPIRED_SWEEP_INTERVAL_MS);
    await store.set('another', 'z');
    expect(store.size()).toBe(2);
    expect(await store.get('kept')).toBe('y');
  });

  it('keys that have not expired are kept, and a sweep waits its interval', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const store = createMemoryStore();
    for (let i = 0; i < 100; i++) await store.set(`k${i}`, 'v', { ttlMs: i < 50 ? 1_000 : 3_600_000 });
    vi.setSystemTime(Date.now() + EXPIRED_SWEEP_INTERVAL_MS + 1_000);
    await store.set('w', 'v');
    expect(store.size()).toBe(51);
  });
});
