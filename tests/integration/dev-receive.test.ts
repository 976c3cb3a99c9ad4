// The dev wallet's receiving side through the local server (the same api/
// files Vercel runs): POST /api/dev/receive makes an invoice of the embedded
// dev node, without an amount when none is asked (a prepaid session's return
// invoice), GET /api/dev/receive/<paymentHash> says whether it was paid and
// how much; devWallet() makes its invoices there. Like /api/dev/pay, never in
// production.
import { decodeInvoice } from 'l402-paywall/lightning';
import { devWallet } from 'l402-paywall/client';
import { describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({ L402_SECRET: 'dev-receive-secret-0123456789abcdef0123456789', DATABASE_URL: undefined }));

const receive = (body: unknown) =>
  fetch(`${server.url}/api/dev/receive`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const status = async (hash: string) => {
  const response = await fetch(`${server.url}/api/dev/receive/${hash}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('POST /api/dev/receive and GET /api/dev/receive/:paymentHash', () => {
  it('makes an invoice without an amount; the payer names it, once, and the look-up says how much was paid', async () => {
    const response = await receive({});
    expect(response.status).toBe(200);
    const made = (await response.json()) as { invoice: string; paymentHash: string; amountMsat: null; expiresAt: number };
    expect(made).toMatchObject({ amountMsat: null, paymentHash: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const decoded = decodeInvoice(made.invoice);
    expect(decoded).toMatchObject({ amountMsat: null, network: 'regtest', paymentHash: made.paymentHash, payeeNodeKey: server.ctx.devNode!.nodeKey });
    expect(await status(made.paymentHash)).toEqual({ status: 200, body: { paymentHash: made.paymentHash, paid: false, amountMsat: 0 } });
    await server.ctx.devNode!.payAmountlessInvoice({ invoice: made.invoice, amountMsat: 13_000, maxFeeMsat: 0 });
    expect(await status(made.paymentHash)).toEqual({ status: 200, body: { paymentHash: made.paymentHash, paid: true, amountMsat: 13_000 } });
    await expect(server.ctx.devNode!.payAmountlessInvoice({ invoice: made.invoice, amountMsat: 1_000, maxFeeMsat: 0 })).rejects.toThrow('Invoice already paid');
  });

  it('makes an invoice for whole satoshis when asked, with the memo', async () => {
    const made = (await (await receive({ amountSats: 21, memo: 'tip' })).json()) as { invoice: string; amountMsat: number };
    expect(made.amountMsat).toBe(21_000);
    expect(decodeInvoice(made.invoice)).toMatchObject({ amountMsat: 21_000, description: 'tip' });
  });

  it('makes it payable as long as asked, up to a week; an hour by default', async () => {
    const lifetime = async (body: Record<string, unknown>) => {
      const made = (await (await receive(body)).json()) as { invoice: string; expiresAt: number };
      const decoded = decodeInvoice(made.invoice);
      expect(made.expiresAt).toBe(decoded.expiresAt);
      return decoded.expiresAt - decoded.timestamp;
    };
    expect(await lifetime({})).toBe(3600);
    expect(await lifetime({ expirySeconds: 7 * 24 * 3600 })).toBe(7 * 24 * 3600);
    expect(await lifetime({ amountSats: 3, expirySeconds: 120 })).toBe(120);
  });

  it('refuses bodies that are not {amountSats?, memo?, expirySeconds?} and hashes that are not 64 hex: 400, never a 500', async () => {
    for (const body of [
      { amountSats: 0 },
      { amountSats: 1.5 },
      { amountSats: '5' },
      { amountSats: 200_000_000 },
      { extra: 1 },
      [],
      '{',
      { memo: 'x'.repeat(201) },
      { expirySeconds: 0 },
      { expirySeconds: 60.5 },
      { expirySeconds: '3600' },
      { expirySeconds: 7 * 24 * 3600 + 1 },
    ]) {
      const response = await receive(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(await response.json()).toMatchObject({ code: expect.stringMatching(/^(INVALID_REQUEST|INVALID_JSON)$/), error: expect.any(String) });
    }
    expect((await status('zz')).status).toBe(400);
    expect(await status('a'.repeat(64))).toMatchObject({ status: 404, body: { code: 'UNKNOWN_INVOICE' } });
  });

  it('devWallet makes its return invoices here, in whole satoshis', async () => {
    const wallet = devWallet({ serviceUrl: server.url });
    const open = await wallet.createInvoice!({ memo: 'refund' });
    expect(decodeInvoice(open.invoice)).toMatchObject({ amountMsat: null, description: 'refund', paymentHash: open.paymentHash });
    const fixed = await wallet.createInvoice!({ amountMsat: 5_000 });
    expect(decodeInvoice(fixed.invoice).amountMsat).toBe(5_000);
    await expect(wallet.createInvoice!({ amountMsat: 1_500 })).rejects.toThrow('the dev wallet receives whole satoshis; 1500 msat is not');
  });

  it("devWallet asks for the expiry it is given, cut to the dev node's week", async () => {
    const wallet = devWallet({ serviceUrl: server.url });
    const lifetime = (invoice: string) => decodeInvoice(invoice).expiresAt - decodeInvoice(invoice).timestamp;
    expect(lifetime((await wallet.createInvoice!({ expirySeconds: 86_400 })).invoice)).toBe(86_400);
    expect(lifetime((await wallet.createInvoice!({ expirySeconds: 30 * 86_400 })).invoice)).toBe(7 * 86_400);
    await expect(wallet.createInvoice!({ expirySeconds: 0 })).rejects.toThrow(RangeError);
  });

  it('does not exist in production: 404 NOT_FOUND, nothing made', async () => {
    server.redeploy(server.config({ NODE_ENV: 'production' }));
    try {
      const response = await receive({});
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ code: 'NOT_FOUND' });
      expect((await status('a'.repeat(64))).status).toBe(404);
    } finally {
      server.restore();
    }
  });
});
