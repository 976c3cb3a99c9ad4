// The embedded dev node as a payer and a webhook sender: what managed mode,
// payouts and linking rely on when `npm start` runs without a real node.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { afterAll, describe, expect, it } from 'vitest';
import { createDevNode, DEV_WEBHOOK_SIGNATURE_HEADER } from 'l402-paywall/backends';
import { PaymentFailed, WebhookRejected } from 'l402-paywall/lightning';
import { createMemoryStore } from '../../lib/store/memory.js';

const key = () => bytesToHex(randomBytes(32));

describe('dev node network', () => {
  it('pays another dev node on the same store, once, moving balances', async () => {
    const store = createMemoryStore();
    const service = createDevNode({ store, privateKey: key() });
    const owner = createDevNode({ store, privateKey: key() });
    const incoming = await service.createInvoice({ amountMsat: 1_000_000 });
    await service.pay(incoming.invoice); // a customer pays the service
    expect(await service.balance()).toEqual({ balanceMsat: 1_000_000 });

    const payout = await owner.createInvoice({ amountMsat: 997_000 });
    const paid = await service.payInvoice({ invoice: payout.invoice, maxFeeMsat: 1000 });
    expect(paid).toEqual({ paymentHash: payout.paymentHash, preimage: expect.stringMatching(/^[0-9a-f]{64}$/), feeMsat: 0 });
    expect(await owner.lookupInvoice(payout.paymentHash)).toMatchObject({ settled: true, preimage: paid.preimage });
    expect(await service.lookupPayment(payout.paymentHash)).toMatchObject({ state: 'succeeded', preimage: paid.preimage });
    expect(await service.lookupPayment(incoming.paymentHash)).toBeNull();
    expect(await service.balance()).toEqual({ balanceMsat: 3_000 });
    expect(await owner.balance()).toEqual({ balanceMsat: 997_000 });

    await expect(service.payInvoice({ invoice: payout.invoice, maxFeeMsat: 0 })).rejects.toThrow(PaymentFailed);
    expect(await service.balance()).toEqual({ balanceMsat: 3_000 }); // a refused payment costs nothing
  });

  it('refuses to spend more than it holds, even when payments race', async () => {
    const store = createMemoryStore();
    const service = createDevNode({ store, privateKey: key() });
    const owner = createDevNode({ store, privateKey: key() });
    await service.pay((await service.createInvoice({ amountMsat: 5_000 })).invoice);
    const invoices = await Promise.all(Array.from({ length: 5 }, () => owner.createInvoice({ amountMsat: 2_000 })));
    const results = await Promise.allSettled(invoices.map((i) => service.payInvoice({ invoice: i.invoice, maxFeeMsat: 0 })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    expect(results.filter((r) => r.status === 'rejected' && r.reason instanceof PaymentFailed)).toHaveLength(3);
    expect(await service.balance()).toEqual({ balanceMsat: 1_000 });
  });
});

describe('dev node webhooks', () => {
  const received: { headers: Headers; body: string }[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      received.push({ headers: new Headers(req.headers as Record<string, string>), body });
      res.end('ok');
    });
  });
  afterAll(() => new Promise((done) => server.close(done)));

  it('announces a paid invoice, signed; the signature is checked over the raw body with a time tolerance', async () => {
    await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const node = createDevNode({ store: createMemoryStore(), privateKey: key() });
    const created = await node.createInvoice({ amountMsat: 21_000, webhookUrl: url });
    await node.pay(created.invoice);
    expect(received).toHaveLength(1);
    const delivery = received[0]!;
    expect(node.readWebhook(delivery)).toEqual({ paymentHash: created.paymentHash });

    const other = createDevNode({ store: createMemoryStore(), privateKey: key() });
    expect(() => other.readWebhook(delivery)).toThrow(WebhookRejected); // another node's secret
    expect(() => node.readWebhook({ ...delivery, body: delivery.body.replace('21000', '21001') })).toThrow(WebhookRejected);
    expect(() => node.readWebhook({ headers: new Headers(), body: delivery.body })).toThrow(WebhookRejected);
    expect(() => node.readWebhook({ ...delivery, now: Date.now() + 10 * 60_000 })).toThrow(/tolerance/);
    const header = delivery.headers.get(DEV_WEBHOOK_SIGNATURE_HEADER)!;
    expect(header).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  });
});
