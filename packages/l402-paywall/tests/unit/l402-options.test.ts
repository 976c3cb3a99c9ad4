// Options are checked where they are given: withL402 (and the adapters built
// on createPaywall) refuse unusable options at construction, naming the option.
import { withL402, Keyring } from 'l402-paywall';
import { l402Middleware } from 'l402-paywall/express';
import { withL402 as withManagedL402 } from 'l402-paywall/managed';
import { describe, expect, it, vi } from 'vitest';
import { recordingProvider } from '../support/l402.js';

const SECRET = 'options-test-secret-0123456789abcdef0123456789';
const handler = () => Response.json({ ok: true });
const valid = () => ({ priceSats: 10, provider: recordingProvider(), secret: SECRET });

describe('withL402 options', () => {
  // A build (next build evaluates every route module) has no runtime secrets: a
  // secret that is not set must not throw where withL402 is called, and must not sell anything either.
  describe('a secret that is not set (an unset environment variable, as in a build)', () => {
    for (const [name, secret] of [
      ['undefined', process.env.L402_SECRET_THAT_IS_NOT_SET],
      ['empty', ''],
      ['null', null as never],
    ] as const) {
      it(`${name}: withL402 does not throw; each request answers 503 NOT_CONFIGURED naming the option, and onError hears it`, async () => {
        const onError = vi.fn();
        const provider = recordingProvider();
        let paywalled: ReturnType<typeof withL402> | undefined;
        expect(() => {
          paywalled = withL402(handler, { ...valid(), provider, secret, onError });
        }).not.toThrow();
        for (const authorization of [undefined, 'L402 bm90LWEtdG9rZW4:00'] as const) {
          const response = await paywalled!(new Request('http://shop.example/paid', authorization ? { headers: { authorization } } : {}));
          expect(response.status).toBe(503);
          expect(response.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
          expect(response.headers.get('www-authenticate')).toBeNull();
          const body = (await response.json()) as { error: string; code: string; missing: string[] };
          expect(body).toMatchObject({ code: 'NOT_CONFIGURED', missing: ['secret'] });
          expect(body.error).toMatch(/option `secret` is missing \(is the environment variable, e\.g\. L402_SECRET, set\?\)/);
        }
        // Nothing sold: no invoice was made, and the handler never ran.
        expect(provider.requests).toEqual([]);
        expect(onError).toHaveBeenCalledTimes(2);
        expect(onError.mock.calls[0]![0]).toBeInstanceOf(TypeError);
        expect(String(onError.mock.calls[0]![0].message)).toMatch(/option `secret` is missing/);
        expect(onError.mock.calls[0]![1]).toBe('withL402 is not configured');
      });
    }

    it('the Express adapter and managed mode answer the same, and managed mode registers nothing', async () => {
      const onError = vi.fn();
      const middleware = l402Middleware({ ...valid(), secret: undefined, onError });
      const answer = await new Promise<{ status: number; body: string }>((resolve) => {
        const res = {
          statusCode: 200,
          setHeader: () => res,
          end: (body?: string) => resolve({ status: res.statusCode, body: body ?? '' }),
          once: () => res,
        };
        middleware({ method: 'GET', url: '/paid', headers: { host: 'shop.example' } } as never, res as never, () => resolve({ status: 0, body: 'next' }));
      });
      expect(answer.status).toBe(503);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'NOT_CONFIGURED', missing: ['secret'] });
      expect(onError).toHaveBeenCalledTimes(1);

      const fetches = vi.fn(() => Promise.reject(new Error('no network in this test')));
      const managed = withManagedL402(handler, {
        priceSats: 10,
        secret: undefined,
        onError,
        managed: { lightningAddress: 'owner@example.com', serviceUrl: 'https://service.example', fetch: fetches },
        register: { name: 'Price feed', url: 'https://shop.example/paid' },
      });
      const response = await managed(new Request('http://shop.example/paid'));
      expect(response.status).toBe(503);
      expect(((await response.json()) as { code: string }).code).toBe('NOT_CONFIGURED');
      expect(fetches).not.toHaveBeenCalled();
    });

    it('a secret that is set but wrong still throws at once', () => {
      expect(() => withL402(handler, { ...valid(), secret: 'short' })).toThrow(/at least 32 bytes/);
      expect(() => withL402(handler, { ...valid(), secret: 42 as never })).toThrow(/option `secret` must be a string/);
      expect(() => withL402(handler, { ...valid(), secret: undefined, priceSats: -1 })).toThrow(/priceSats must be a positive whole number/);
      expect(() => withL402(handler, { ...valid(), secret: undefined, provider: undefined as never })).toThrow(/option `provider`/);
    });
  });

  // The same for managed mode's own settings: a build (next build on the Node or edge runtime) has
  // no LIGHTNING_ADDRESS or service URL; a setting that is there but wrong still stops the deploy, named.
  describe("managed mode's settings", () => {
    const managedOptions = (managed: Record<string, unknown>, secret: string | undefined) =>
      ({ priceSats: 10, secret, managed, register: { name: 'Price feed', url: 'https://shop.example/paid' } }) as never;

    it.each([
      ['lightningAddress unset', { serviceUrl: 'https://service.example' }, SECRET, ['managed.lightningAddress']],
      ['serviceUrl empty', { lightningAddress: 'owner@example.com', serviceUrl: '' }, SECRET, ['managed.serviceUrl']],
      [
        'both unset, and the secret',
        { lightningAddress: undefined, serviceUrl: undefined },
        undefined,
        ['secret', 'managed.lightningAddress', 'managed.serviceUrl'],
      ],
    ] as const)(
      '%s: withL402 does not throw; each request answers 503 NOT_CONFIGURED naming it, nothing is asked of the service',
      async (_, managed, secret, missing) => {
        const onError = vi.fn();
        const fetches = vi.fn(() => Promise.reject(new Error('no network in this test')));
        let paywalled: ReturnType<typeof withManagedL402> | undefined;
        expect(() => {
          paywalled = withManagedL402(handler, { ...(managedOptions({ ...managed, fetch: fetches }, secret) as object), onError } as never);
        }).not.toThrow();
        const response = await paywalled!(new Request('http://shop.example/paid'));
        expect(response.status).toBe(503);
        expect(response.headers.get('www-authenticate')).toBeNull();
        const body = (await response.json()) as { error: string; code: string; missing: string[] };
        expect(body).toMatchObject({ code: 'NOT_CONFIGURED', missing });
        for (const option of missing) expect(body.error).toContain(`option \`${option}\` is missing`);
        expect(fetches).not.toHaveBeenCalled();
        expect(onError).toHaveBeenCalledTimes(1);
        expect(String(onError.mock.calls[0]![0].message)).toContain(`option \`${missing.at(-1)}\` is missing`);
      },
    );

    it.each([
      [
        { lightningAddress: 'not an address', serviceUrl: 'https://service.example' },
        /option `managed\.lightningAddress` must be a Lightning Address like name@example\.com.*got "not an address"/,
      ],
      [{ lightningAddress: 42, serviceUrl: 'https://service.example' }, /option `managed\.lightningAddress` must be a Lightning Address.*got 42/],
      [
        { lightningAddress: 'owner@example.com', serviceUrl: 'service.example' },
        /option `managed\.serviceUrl` must be the hosted service's http\(s\) URL.*got "service\.example"/,
      ],
      [{ lightningAddress: 'owner@example.com', serviceUrl: 'ftp://service.example' }, /option `managed\.serviceUrl` must be .*http\(s\) URL/],
      [
        { lightningAddress: 'owner@example.com', serviceUrl: 'https://service.example', network: 'mainnet' },
        /option `managed\.network` must be one of bitcoin, testnet, signet, regtest, got "mainnet"/,
      ],
      [
        { lightningAddress: 'owner@example.com', serviceUrl: 'https://service.example', timeoutMs: 0 },
        /option `managed\.timeoutMs` must be a positive whole number/,
      ],
    ])('a managed setting that is set but wrong throws at once, naming itself: %j', (managed, message) => {
      const thrown = (() => {
        try {
          withManagedL402(handler, managedOptions(managed, SECRET));
        } catch (error) {
          return error;
        }
      })();
      expect(thrown).toBeInstanceOf(TypeError);
      expect((thrown as Error).name).not.toBe('ZodError');
      expect((thrown as Error).message).toMatch(message);
    });

    it('managed itself must be an object', () => {
      expect(() => withManagedL402(handler, { priceSats: 10, secret: SECRET, managed: 'owner@example.com' } as never)).toThrow(
        /option `managed` must be an object/,
      );
    });
  });

  it('a secret shorter than 32 bytes is refused, in the library as in the service', () => {
    expect(() => withL402(handler, { ...valid(), secret: 'abc' })).toThrow(/secret must be at least 32 bytes, got 3/);
    expect(() => withL402(handler, { ...valid(), secret: 'x'.repeat(31) })).toThrow(/at least 32 bytes/);
    expect(() => withL402(handler, { ...valid(), secret: [SECRET, 'short'] })).toThrow(/secret\[1\] must be at least 32 bytes/);
    expect(() => new Keyring(['short'])).toThrow(/at least 32 bytes/);
    expect(() => withL402(handler, { ...valid(), secret: 'x'.repeat(32) })).not.toThrow();
  });

  it('each other option is named when it cannot work', () => {
    expect(() => withL402(handler, { ...valid(), priceSats: 0 })).toThrow(/priceSats must be a positive whole number/);
    expect(() => withL402(handler, { ...valid(), priceSats: 1.5 })).toThrow(/priceSats/);
    expect(() => withL402(handler, { ...valid(), priceSats: '10' as never })).toThrow(/option `priceSats`/);
    expect(() => withL402(handler, { ...valid(), provider: undefined as never })).toThrow(/option `provider` must be a Lightning backend/);
    expect(() => withL402(handler, { ...valid(), provider: {} as never })).toThrow(/option `provider`/);
    expect(() => withL402(handler, { ...valid(), replayStore: {} as never })).toThrow(/option `replayStore`/);
    expect(() => withL402(handler, { ...valid(), route: 42 as never })).toThrow(/option `route`/);
    expect(() => withL402(handler, { ...valid(), onPaid: 'yes' as never })).toThrow(/option `onPaid` must be a function/);
    expect(() => withL402(handler, { ...valid(), uses: 0 })).toThrow(/uses must be a positive integer/);
    expect(() => withL402(handler, { ...valid(), tokenTtlSeconds: -1 })).toThrow(/tokenTtlSeconds/);
    expect(() => withL402(handler, undefined as never)).toThrow(/needs options/);
  });

  it('the Express adapter checks the same way', () => {
    expect(() => l402Middleware({ ...valid(), secret: 'short' })).toThrow(/at least 32 bytes/);
  });
});
