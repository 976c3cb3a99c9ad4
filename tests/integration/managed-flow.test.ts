// Managed mode end to end, on one machine: a library app wrapped with
// withL402({managed}) asks the real local server for the invoice, the client
// pays it with the dev wallet, the dev node's signed webhook reaches
// /api/provider-webhook, the split runs and the owner's own node (behind a
// Lightning Address server on loopback) receives exactly 99.7%.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeToken } from 'l402-paywall';
import { managedInvoiceProvider, ManagedServiceError, withL402, type DirectoryRegistration } from 'l402-paywall/managed';
import { databaseBackends } from '../support/postgres.js';
import { requestNamingHost } from '../support/host-header.js';
import { useDevServerOn, type ChallengeBody } from '../support/server.js';
import { startOwnerServer, type OwnerServer } from '../support/owner-server.js';

// PostgreSQL (production's database) and PGlite (what `npm start` runs on).
const backends = await databaseBackends();
const APP_SECRET = 'library-app-secret-0123456789abcdef0123456789abcdef';

for (const backend of backends)
  describe.skipIf(backend.skip !== undefined)(`managed mode end to end (local server, ${backend.name})${backend.skip ? ` (${backend.skip})` : ''}`, () => {
    const server = useDevServerOn(backend);
    let owner: OwnerServer;
    beforeAll(async () => {
      owner = await startOwnerServer({ store: server.ctx.store });
    });
    afterAll(() => owner?.close());

    async function devPay(invoice: string): Promise<{ preimage: string; paymentHash: string }> {
      const response = await fetch(`${server.url}/api/dev/pay`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ invoice }),
      });
      expect(response.status).toBe(200);
      return (await response.json()) as { preimage: string; paymentHash: string };
    }

    it('402 -> pay -> webhook -> split: the owner receives exactly 1994 of 2000 sats and the ledger says paid', async () => {
      const address = owner.address('alice');
      const app = withL402(async () => Response.json({ data: 'the paid answer' }), {
        priceSats: 2000, // its 0.3% (6,000 msat) covers the routing budget, so it is paid out at once
        secret: APP_SECRET,
        route: '/v1/data',
        managed: { lightningAddress: address, serviceUrl: server.url },
      });
      const ownerBefore = (await owner.node.balance()).balanceMsat;
      const serviceBefore = (await server.ctx.provider.balance()).balanceMsat;

      const challenge = await app(new Request('https://api.example.com/v1/data'));
      expect(challenge.status).toBe(402);
      const body = (await challenge.json()) as ChallengeBody;
      // The app's own token (its own secret), bound to the owner.
      expect(decodeToken(body.macaroon)).toMatchObject({ hash: body.paymentHash });
      expect(decodeToken(body.macaroon)!.caveats).toContain(`owner=${address}`);

      const paid = await devPay(body.invoice); // the dev node's webhook runs the split before this returns
      expect(paid.paymentHash).toBe(body.paymentHash);

      const served = await app(new Request('https://api.example.com/v1/data', { headers: { authorization: `L402 ${body.macaroon}:${paid.preimage}` } }));
      expect(served.status).toBe(200);
      expect(await served.json()).toEqual({ data: 'the paid answer' });

      expect((await owner.node.balance()).balanceMsat - ownerBefore).toBe(1_994_000);
      expect((await server.ctx.provider.balance()).balanceMsat - serviceBefore).toBe(6_000);

      const splits = await server.db.query('SELECT owner_address, amount_msat, owner_msat, fee_msat, state, source FROM splits WHERE payment_hash = $1', [
        body.paymentHash,
      ]);
      expect(splits).toEqual([{ owner_address: address, amount_msat: 2_000_000, owner_msat: 1_994_000, fee_msat: 6_000, state: 'paid', source: 'webhook' }]);
      const payouts = await server.db.query('SELECT amount_msat, state, invoice_hash, attempts, routing_fee_msat FROM payouts WHERE owner_address = $1', [
        address,
      ]);
      expect(payouts).toEqual([
        { amount_msat: 1_994_000, state: 'paid', invoice_hash: expect.stringMatching(/^[0-9a-f]{64}$/), attempts: 1, routing_fee_msat: 0 },
      ]);
      // The payout paid the owner's own invoice, which its node reports settled.
      expect(await owner.node.lookupInvoice(payouts[0]!.invoice_hash as string)).toMatchObject({ settled: true, amountMsat: 1_994_000 });
      const logged = await server.db.query('SELECT endpoint, amount_sats, owner_address FROM payments WHERE payment_hash = $1', [body.paymentHash]);
      expect(logged).toEqual([{ endpoint: '/v1/data', amount_sats: 2000, owner_address: address }]);
    });

    it('register: one directory entry from the first request, proved by the app itself, idempotent across restarts, never in the way of requests', async () => {
      const errors: unknown[] = [];
      const registrations: number[] = [];
      const recordingFetch: typeof fetch = async (input, init) => {
        const response = await fetch(input, init);
        if (String(input).endsWith('/api/register')) registrations.push(response.status);
        return response;
      };
      // The app listens on loopback: the directory fetches its proof from there (development allows loopback).
      let app: (request: Request) => Promise<Response> = () => Promise.resolve(new Response('starting', { status: 503 }));
      const appServer = createServer(getRequestListener((request) => app(request)));
      await new Promise<void>((resolve) => appServer.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(appServer.address() as AddressInfo).port}/now`;
        const options = {
          priceSats: 21,
          secret: APP_SECRET,
          managed: { lightningAddress: 'bob@example.com', serviceUrl: server.url, fetch: recordingFetch },
          register: { name: 'Weather', category: 'weather' as const, url },
          onError: (error: unknown) => errors.push(error),
        };
        app = withL402(() => new Response('ok'), options);
        const rows = () => server.db.query('SELECT name, price_sats, category, lightning_address FROM apis WHERE url = $1', [url]);
        expect((await fetch(url)).status).toBe(402);
        await expect.poll(() => registrations, { timeout: 30_000 }).toEqual([200]);
        expect(await rows()).toEqual([{ name: 'Weather', price_sats: 21, category: 'weather', lightning_address: 'bob@example.com' }]);
        expect((await fetch(url)).status).toBe(402); // registers once per process
        app = withL402(() => new Response('ok'), options); // the app restarts
        expect((await fetch(url)).status).toBe(402);
        await expect.poll(() => registrations, { timeout: 30_000 }).toEqual([200, 200]);
        expect(await rows()).toEqual([{ name: 'Weather', price_sats: 21, category: 'weather', lightning_address: 'bob@example.com' }]);
        expect(errors).toEqual([]);
      } finally {
        appServer.closeAllConnections();
        await new Promise((resolve) => appServer.close(resolve));
      }
    });

    describe("register never takes its url from a request (its Host header is the client's choice)", () => {
      // The attacker's host echoes the proof: it passes every request on to the app, so the
      // directory's proof check of a url on that host reaches the real app and succeeds.
      let app: (request: Request) => Promise<Response>;
      let appUrl = '';
      let attackerHost = '';
      const servers: import('node:http').Server[] = [];
      beforeAll(async () => {
        const listen = async (listener: Parameters<typeof createServer>[1]) => {
          const listening = createServer(listener);
          await new Promise<void>((resolve) => listening.listen(0, '127.0.0.1', resolve));
          servers.push(listening);
          return `127.0.0.1:${(listening.address() as AddressInfo).port}`;
        };
        appUrl = `http://${await listen(getRequestListener((request) => app(request)))}/now`;
        attackerHost = await listen(async (request, response) => {
          const forwarded = await fetch(new URL(request.url ?? '/', appUrl), { headers: request.headers as Record<string, string> });
          response.writeHead(forwarded.status, { 'content-type': forwarded.headers.get('content-type') ?? 'text/plain' });
          response.end(await forwarded.text());
        });
      });
      afterAll(async () => {
        for (const listening of servers) {
          listening.closeAllConnections();
          await new Promise((resolve) => listening.close(resolve));
        }
      });

      /** The app's first request, sent to the app with the attacker's host in Host: a Web Request's url is built from it. */
      const firstRequestNaming = async (host: string) => (await requestNamingHost(appUrl, host)).status;
      const entriesOn = (host: string) => server.db.query('SELECT url, lightning_address FROM apis WHERE url LIKE $1', [`http://${host}/%`]);
      const recording =
        (registrations: string[]): typeof fetch =>
        async (input, init) => {
          if (String(input).endsWith('/api/register')) registrations.push(JSON.parse(String(init?.body)).url);
          return fetch(input, init);
        };

      it('without register.url: construction says what is missing, and nothing is registered', async () => {
        const errors: [unknown, string][] = [];
        const registrations: string[] = [];
        app = withL402(() => new Response('ok'), {
          priceSats: 21,
          secret: APP_SECRET,
          managed: { lightningAddress: 'carol@example.com', serviceUrl: server.url, fetch: recording(registrations) },
          register: { name: 'Guessed' } as DirectoryRegistration, // a JavaScript caller may leave url out
          onError: (error, context) => errors.push([error, context]),
        });
        expect(await firstRequestNaming(attackerHost)).toBe(402);
        await new Promise((resolve) => setTimeout(resolve, 1000)); // what a background registration would take
        expect(registrations).toEqual([]);
        expect(await entriesOn(attackerHost)).toEqual([]);
        expect(errors).toHaveLength(1);
        expect(errors[0]![1]).toBe('directory registration is off');
        expect((errors[0]![0] as Error).message).toMatch(/^register\.url is missing/);
      });

      it('with register.url: that url is registered, whatever Host the first request names', async () => {
        const errors: unknown[] = [];
        const registrations: string[] = [];
        app = withL402(() => new Response('ok'), {
          priceSats: 21,
          secret: APP_SECRET,
          managed: { lightningAddress: 'dave@example.com', serviceUrl: server.url, fetch: recording(registrations) },
          register: { name: 'Configured', url: `${appUrl}?utm=dropped#and-this` },
          onError: (error) => errors.push(error),
        });
        expect(await firstRequestNaming(attackerHost)).toBe(402);
        await expect.poll(() => registrations, { timeout: 30_000 }).toEqual([appUrl]);
        await expect
          .poll(() => server.db.query('SELECT lightning_address FROM apis WHERE url = $1', [appUrl]), { timeout: 30_000 })
          .toEqual([{ lightning_address: 'dave@example.com' }]);
        expect(await entriesOn(attackerHost)).toEqual([]);
        expect(errors).toEqual([]);
      });

      it('a register.url that is not an absolute http(s) URL throws at construction', () => {
        for (const url of ['/now', 'ftp://api.example.com/now'])
          expect(() =>
            withL402(() => new Response('ok'), {
              priceSats: 21,
              secret: APP_SECRET,
              managed: { lightningAddress: 'erin@example.com', serviceUrl: server.url },
              register: { name: 'Wrong', url },
            }),
          ).toThrow(/register\.url must be/);
      });
    });

    it('the service refuses owner addresses that are not Lightning Addresses (400), and the library fails closed (503)', async () => {
      const response = await fetch(`${server.url}/api/invoice`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ amountSats: 10, ownerAddress: 'not an address' }),
      });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ code: 'INVALID_REQUEST' });
    });
  });

describe('managed invoice provider checks what the service answers', () => {
  // A real invoice from a dev node, served by a fake "service" that may lie about it.
  async function answering(transform: (answer: { paymentRequest: string; paymentHash: string; macaroon: string }) => unknown, status = 200) {
    const { createDevNode } = await import('l402-paywall/backends');
    const { createMemoryStore } = await import('../../lib/store/memory.js');
    const node = createDevNode({ store: createMemoryStore(), privateKey: '11'.repeat(32) });
    const requests: unknown[] = [];
    const fakeFetch: typeof fetch = async (_input, init) => {
      const asked = JSON.parse(String(init?.body)) as { amountSats: number };
      requests.push(asked);
      const created = await node.createInvoice({ amountMsat: 1000 * 1000 });
      return Response.json(transform({ paymentRequest: created.invoice, paymentHash: created.paymentHash, macaroon: 'x' }), { status });
    };
    return { provider: managedInvoiceProvider({ lightningAddress: 'alice@example.com', serviceUrl: 'https://service.example', fetch: fakeFetch }), requests };
  }

  it('accepts an invoice for exactly the amount and hash asked, sending the owner address', async () => {
    const { provider, requests } = await answering((a) => a);
    const invoice = await provider.createInvoice({ amountMsat: 1_000_000 });
    expect(invoice.paymentHash).toMatch(/^[0-9a-f]{64}$/);
    expect(requests).toEqual([{ amountSats: 1000, ownerAddress: 'alice@example.com' }]);
  });

  it.each([
    ['an invoice for another amount', (a: { paymentRequest: string; paymentHash: string }) => a, 2_000_000],
    ['another payment hash', (a: { paymentRequest: string; paymentHash: string }) => ({ ...a, paymentHash: 'ab'.repeat(32) }), 1_000_000],
    ['a malformed invoice', (a: { paymentRequest: string; paymentHash: string }) => ({ ...a, paymentRequest: 'lnbcrt1garbage' }), 1_000_000],
    ['no invoice at all', () => ({ hello: 'world' }), 1_000_000],
  ])('refuses %s', async (_name, transform, askedMsat) => {
    const { provider } = await answering(transform);
    await expect(provider.createInvoice({ amountMsat: askedMsat })).rejects.toThrow(ManagedServiceError);
  });

  it.each([
    ['a huge answer', 'huge'],
    ['an answer that never ends', 'stall'],
  ])('refuses %s, within its time limit', async (_name, kind) => {
    const sockets = new Set<import('node:net').Socket>();
    const service = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      if (kind === 'huge') response.end(`{"paymentRequest":"${'x'.repeat(1 << 20)}"}`);
      else response.write('{"paymentRequest":"'); // and nothing more
    });
    service.on('connection', (socket) => sockets.add(socket));
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = service.address() as AddressInfo;
      const provider = managedInvoiceProvider({ lightningAddress: 'alice@example.com', serviceUrl: `http://127.0.0.1:${port}`, timeoutMs: 500 });
      // A stall ends with the client's own time limit (500 ms), not the test's: the error says which.
      const error = await provider.createInvoice({ amountMsat: 1_000_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ManagedServiceError);
      expect((error as Error).message).toBe(
        kind === 'huge' ? 'the managed service answered more than 16384 bytes' : 'the managed service did not finish its answer within 500 ms',
      );
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => service.close(resolve));
    }
  });

  it('a lying service gets the paywall to answer 503, never a token for the wrong payment', async () => {
    const { provider } = await answering((a) => ({ ...a, paymentHash: 'cd'.repeat(32) }));
    const app = withL402(() => new Response('secret'), { priceSats: 1000, secret: APP_SECRET, provider, onError: () => {} });
    const response = await app(new Request('https://api.example.com/x'));
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBeTruthy();
  });
});
