// The hosted demo sells by the prepaid session, through the local server (the
// same api/ files Vercel runs): GET /api/demo/btc-price offers the charge and
// a 20-sat session together; GET /api/demo/stream is sold by the session
// only, a metered SSE stream of `chunks` 1-sat chunks, its query checked
// before anything is sold. The real client pays with the dev wallet (the
// service's own dev node), tops the stream up and closes with the refund.
import { decodeInvoice } from 'l402-paywall/lightning';
import { createBudget, createSessions, devWallet, fetchWithL402, getPaymentReceipt } from 'l402-paywall/client';
import { describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({
  L402_SECRET: 'demo-sessions-secret-0123456789abcdef0123456789',
  DATABASE_URL: undefined,
  DEMO_STREAM_INTERVAL_MS: '0',
}));
const SAT = 1000;

const challengesOf = (response: Response) => (response.headers.get('www-authenticate') ?? '').split(/,\s*(?=(?:L402|Payment) )/);

describe('the demo sells by the session', () => {
  it('GET /api/demo/btc-price: one 402 offers L402, the Payment charge and a session with a 20-sat deposit', async () => {
    const response = await fetch(`${server.url}/api/demo/btc-price`);
    expect(response.status).toBe(402);
    const header = response.headers.get('www-authenticate') ?? '';
    expect(header).toMatch(/^LSAT macaroon="[^"]+", invoice="[^"]+", L402 /);
    expect(header).toContain('intent="charge"');
    expect(header).toContain('intent="session"');
    const body = (await response.json()) as { priceSats: number; session: { depositSats: number; unitPriceSats: number; depositInvoice: string } };
    expect(body.priceSats).toBe(1);
    expect(body.session).toMatchObject({ depositSats: 20, unitPriceSats: 1, idleTimeoutSeconds: 300 });
    expect(decodeInvoice(body.session.depositInvoice).amountMsat).toBe(20 * SAT);
  });

  it('GET /api/demo/stream: sold by the session only; a bad chunks is 400 before any invoice is made', async () => {
    const response = await fetch(`${server.url}/api/demo/stream`);
    expect(response.status).toBe(402);
    const header = response.headers.get('www-authenticate') ?? '';
    expect(challengesOf(response)).toHaveLength(1);
    expect(header).toMatch(/^Payment .*intent="session"/);
    const body = (await response.json()) as { error: string; session: { depositSats: number } };
    expect(body.error).toMatch(/sold by the prepaid session only/);
    expect(body.session.depositSats).toBe(20);
    for (const chunks of ['0', '201', '1.5', 'abc', '-3', '']) {
      const bad = await fetch(`${server.url}/api/demo/stream?chunks=${chunks}`);
      expect(bad.status, chunks).toBe(400);
      expect(bad.headers.get('www-authenticate')).toBeNull();
      expect(await bad.json()).toMatchObject({ code: 'INVALID_REQUEST', error: 'chunks must be a whole number from 1 to 200' });
    }
  });

  it('streams 25 chunks on a 20-sat deposit through the real client: a top-up mid-stream, the receipt, then a close refunding 15 sats', async () => {
    const budget = createBudget({ totalSats: 100 });
    const sessions = createSessions({ maxDepositSats: 20 });
    try {
      const response = await fetchWithL402(`${server.url}/api/demo/stream?chunks=25`, undefined, {
        wallet: devWallet({ serviceUrl: server.url }),
        maxPriceSats: 1,
        budget,
        sessions,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      expect(getPaymentReceipt(response)?.session?.action).toBe('open');
      const text = await response.text();
      // The chunks are the unnamed events; payment-need-topup and payment-receipt carry JSON too.
      const chunks = text
        .split('\n\n')
        .filter((event) => event.startsWith('data: {'))
        .map((event) => JSON.parse(event.slice('data: '.length)) as { chunk: number; of: number; word: string });
      expect(chunks.map((c) => c.chunk)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
      expect(chunks.every((c) => c.of === 25 && c.word.length > 0)).toBe(true);
      expect(text).toContain('event: payment-need-topup');
      expect(text).toContain('event: payment-receipt');
      expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      const [held] = sessions.list();
      expect(held).toMatchObject({ depositedMsat: 40 * SAT });
      const [closed] = await sessions.closeAll();
      expect(closed).toMatchObject({ status: 200, refundSats: 15, refundStatus: 'succeeded', creditedMsat: 15 * SAT });
      expect(budget.spent().totalMsat).toBe(25 * SAT);
      expect(await server.ctx.sessions.get(held!.sessionId)).toMatchObject({
        status: 'closed',
        paidMsat: 40 * SAT,
        spentMsat: 25 * SAT,
        refund: { state: 'paid', amountMsat: 15 * SAT },
      });
    } finally {
      await sessions.closeAll();
    }
  });
});
