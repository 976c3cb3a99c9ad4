// The embedded dev node under a production NODE_ENV (`next start` sets
// NODE_ENV=production): it makes no invoice and pays nothing, and a paywall
// on it answers 503 DEV_NODE_IN_PRODUCTION, loudly (onError each time),
// instead of selling regtest invoices nobody can pay. Making the node is
// allowed everywhere: `next build` evaluates the modules that make one under
// NODE_ENV=production. The packed Next.js app proves the same under next start
// (tests/package/packed.test.ts).
import { afterEach, describe, expect, it, vi } from 'vitest';
import { withL402 } from 'l402-paywall';
import { DevNodeInProduction, createDevNode, memoryDevNodeStore } from 'l402-paywall/backends';
import { lightningSessions, memorySessionLedger } from 'l402-paywall/lightning';

const SECRET = 'dev-node-production-secret-0123456789abcdef';
const handler = () => Response.json({ ok: true });

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the dev node under a production NODE_ENV', () => {
  for (const environment of ['production', 'staging', 'Production']) {
    it(`NODE_ENV=${environment}: withL402 answers 503 DEV_NODE_IN_PRODUCTION naming why, onError hears it, nothing is sold`, async () => {
      const devNode = createDevNode({ store: memoryDevNodeStore() });
      const onError = vi.fn();
      const paid = withL402(handler, { priceSats: 1, provider: devNode, secret: SECRET, onError });
      vi.stubEnv('NODE_ENV', environment);
      for (let i = 0; i < 2; i++) {
        const response = await paid(new Request('http://shop.example/paid'));
        expect(response.status).toBe(503);
        expect(response.headers.get('www-authenticate')).toBeNull();
        expect(Number(response.headers.get('retry-after'))).toBeGreaterThan(0);
        const body = (await response.json()) as { error: string; code: string };
        expect(body.code).toBe('DEV_NODE_IN_PRODUCTION');
        expect(body.error).toContain(`NODE_ENV is ${JSON.stringify(environment)}`);
        expect(body.error).toContain('Use a real Lightning backend');
      }
      expect(onError).toHaveBeenCalledTimes(2);
      expect(onError.mock.calls[0]![0]).toBeInstanceOf(DevNodeInProduction);
    });
  }

  it('a route sold by the session alone says the same; the node pays nothing and makes no invoice', async () => {
    const devNode = createDevNode({ store: memoryDevNodeStore() });
    const made = await devNode.createInvoice({ amountMsat: 1000 });
    const paid = withL402(handler, {
      priceSats: 1,
      provider: devNode,
      secret: SECRET,
      onError: () => {},
      schemes: { l402: false, payment: false },
      session: lightningSessions({ unitPriceSats: 1, ledger: memorySessionLedger() }),
    });
    vi.stubEnv('NODE_ENV', 'production');
    const response = await paid(new Request('http://shop.example/paid'));
    expect(response.status).toBe(503);
    expect(((await response.json()) as { code: string }).code).toBe('DEV_NODE_IN_PRODUCTION');
    await expect(devNode.pay(made.invoice)).rejects.toBeInstanceOf(DevNodeInProduction);
    await expect(devNode.createInvoice({ amountMsat: 1000 })).rejects.toThrow(/NODE_ENV is "production"/);
    await expect(devNode.createAmountlessInvoice({})).rejects.toBeInstanceOf(DevNodeInProduction);
    await expect(devNode.payInvoice({ invoice: made.invoice, maxFeeMsat: 0 })).rejects.toBeInstanceOf(DevNodeInProduction);
    // Nothing was settled: the same invoice is still payable where the dev node may run.
    vi.stubEnv('NODE_ENV', 'test');
    expect((await devNode.pay(made.invoice)).amountMsat).toBe(1000);
  });

  for (const environment of [undefined, 'development', 'test']) {
    it(`NODE_ENV ${environment ?? 'unset'}: the usual 402`, async () => {
      vi.stubEnv('NODE_ENV', environment);
      const paid = withL402(handler, { priceSats: 1, provider: createDevNode(), secret: SECRET });
      const response = await paid(new Request('http://shop.example/paid'));
      expect(response.status).toBe(402);
      expect(((await response.json()) as { code: string }).code).toBe('PAYMENT_REQUIRED');
    });
  }

  it('making a dev node under NODE_ENV=production does not throw (next build evaluates modules that make one)', () => {
    vi.stubEnv('NODE_ENV', 'production');
    expect(() => withL402(handler, { priceSats: 1, provider: createDevNode(), secret: SECRET })).not.toThrow();
  });
});
