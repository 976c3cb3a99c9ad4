// The paying client asks for the Payment scheme with Accept-Payment (the MPP
// core draft) when its caller asked for that scheme: a withL402 route (L402,
// the charge, the session; dev-node invoices) sees the header on every request
// of the call, answers its Payment challenges first, and is paid on first try.
// An L402 client sends none; a caller's own header is kept.
import { describe, expect, it } from 'vitest';
import { withL402 } from 'l402-paywall';
import { createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { createBudget, createSessions, fetchWithL402, type FetchWithL402Options } from 'l402-paywall/client';
import { lightningSessions, memorySessionLedger } from 'l402-paywall/sessions';
import { devNodeWallet } from '../support/dev-wallet.js';

const SECRET = 'client-accept-payment-secret-0123456789abcdef0123';

function shop(withSessions = false) {
  const store = memoryDevNodeStore();
  const walletNode = createDevNode({ store });
  const wallet = devNodeWallet(walletNode);
  const handler = withL402(() => Response.json({ ok: true }), {
    priceSats: 2,
    provider: createDevNode({ store }),
    secret: SECRET,
    onError: () => {},
    ...(withSessions && { session: lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() }) }),
  });
  const seen: { acceptPayment: string | null; authorization: string | null; firstChallenge: string | undefined }[] = [];
  const fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const response = await handler(request);
    seen.push({
      acceptPayment: request.headers.get('accept-payment'),
      authorization: request.headers.get('authorization'),
      firstChallenge: response.headers.get('www-authenticate')?.split(' ')[0],
    });
    return response;
  };
  const options = (extra: Partial<FetchWithL402Options> = {}): FetchWithL402Options => ({
    wallet,
    maxPriceSats: 50,
    budget: createBudget({ totalSats: 1000 }),
    fetch,
    ...extra,
  });
  return { seen, options };
}

describe('Accept-Payment from the client', () => {
  it('scheme Payment: sent on every request of the call; the 402 starts with the Payment challenge and the charge is paid on first try', async () => {
    const { seen, options } = shop();
    const response = await fetchWithL402('https://shop.example/paid', undefined, options({ scheme: 'Payment' }));
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(2);
    expect(seen.map((s) => s.acceptPayment)).toEqual(['lightning/charge', 'lightning/charge']);
    expect(seen[0]!.firstChallenge).toBe('Payment');
    expect(seen[1]!.authorization).toMatch(/^Payment /);
  });

  it('with sessions, the session first and the charge after it', async () => {
    const { seen, options } = shop(true);
    const sessions = createSessions({ maxDepositSats: 40 });
    const response = await fetchWithL402('https://shop.example/paid', undefined, options({ scheme: 'Payment', sessions }));
    expect(response.status).toBe(200);
    expect(seen[0]!.acceptPayment).toBe('lightning/session, lightning/charge;q=0.9');
    expect(seen[0]!.firstChallenge).toBe('Payment');
    await sessions.closeAll();
  });

  it('an L402 client (the default) sends none and gets the L402 family first (LSAT, then L402)', async () => {
    const { seen, options } = shop();
    const response = await fetchWithL402('https://shop.example/paid', undefined, options());
    expect(response.status).toBe(200);
    expect(seen.every((s) => s.acceptPayment === null)).toBe(true);
    // The L402 family first: Aperture's order, LSAT then L402.
    expect(seen[0]!.firstChallenge).toBe('LSAT');
    expect(seen[1]!.authorization).toMatch(/^L402 /);
  });

  it("a caller's own Accept-Payment is sent as it is", async () => {
    const { seen, options } = shop();
    const init = { headers: { 'accept-payment': 'lightning/charge;q=0.5' } };
    const response = await fetchWithL402('https://shop.example/paid', init, options({ scheme: 'Payment' }));
    expect(response.status).toBe(200);
    expect(seen.map((s) => s.acceptPayment)).toEqual(['lightning/charge;q=0.5', 'lightning/charge;q=0.5']);
  });
});
