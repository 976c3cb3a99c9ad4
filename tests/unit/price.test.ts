// The demo price feed against local stand-ins for the public sources: order,
// timeouts, malformed answers, caching, and the honest "simulated" fallback.
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPriceFeed, PUBLIC_SOURCES, SIMULATED_USD, type PriceSource } from '../../lib/service/records/price.js';

let server: Server;
let base = '';
let hits: Record<string, number> = {};
/** Whether /flaky answers (a source that goes down and comes back). */
let flakyUp = true;

beforeAll(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '';
    hits[path] = (hits[path] ?? 0) + 1;
    if (path === '/slow') return; // never answers: only the feed's timeout gets past it
    if (path === '/error') return void res.writeHead(500).end('{}');
    if (path === '/garbage') return void res.end('<html>not json');
    if (path === '/negative') return void res.end('{"data":{"amount":"-5"}}');
    if (path === '/huge') return void res.end(JSON.stringify({ data: { amount: '1', pad: 'x'.repeat(100_000) } }));
    if (path === '/coinbase') return void res.end('{"data":{"amount":"91234.567","base":"BTC","currency":"USD"}}');
    if (path === '/kraken') return void res.end('{"error":[],"result":{"XXBTZUSD":{"c":["90001.1","0.01"]}}}');
    if (path === '/coingecko') return void res.end('{"bitcoin":{"usd":89999}}');
    if (path === '/flaky') return flakyUp ? void res.end('{"bitcoin":{"usd":88888}}') : void res.writeHead(503).end('{}');
    res.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => {
  server.closeAllConnections();
  return new Promise((r) => server.close(r));
});

const at = (name: keyof typeof PUBLIC_SOURCES, path = `/${name}`): PriceSource => ({ ...PUBLIC_SOURCES[name]!, url: base + path });

describe('BTC price feed', () => {
  it('parses each public source shape and names the source', async () => {
    expect(await createPriceFeed([at('coinbase')], 1000).current()).toMatchObject({ usd: 91234.57, source: 'coinbase' });
    expect(await createPriceFeed([at('kraken')], 1000).current()).toMatchObject({ usd: 90001.1, source: 'kraken' });
    expect(await createPriceFeed([at('coingecko')], 1000).current()).toMatchObject({ usd: 89999, source: 'coingecko' });
  });

  it('falls through slow, failing, malformed, implausible and oversized answers to the next source', async () => {
    const errors: string[] = [];
    const feed = createPriceFeed(
      [at('coinbase', '/slow'), at('coinbase', '/error'), at('coinbase', '/garbage'), at('coinbase', '/negative'), at('coinbase', '/huge'), at('kraken')],
      300,
      (m) => errors.push(m),
    );
    const price = await feed.current(); // resolving at all shows the silent source was cut off at its timeout
    expect(price).toMatchObject({ usd: 90001.1, source: 'kraken' });
    expect(errors).toHaveLength(5);
  });

  it('says "simulated" when no source answers, never pretending', async () => {
    const price = await createPriceFeed([at('coinbase', '/error')], 300).current();
    expect(price).toMatchObject({ usd: SIMULATED_USD, source: 'simulated' });
    expect(Date.parse(price.fetchedAt)).not.toBeNaN();
    expect(await createPriceFeed([], 300).current()).toMatchObject({ source: 'simulated' });
  });

  it('caches briefly and shares one refresh between concurrent callers', async () => {
    hits = {};
    const feed = createPriceFeed([at('coingecko')], 1000);
    const prices = await Promise.all(Array.from({ length: 20 }, () => feed.current()));
    await feed.current();
    expect(new Set(prices.map((p) => p.fetchedAt)).size).toBe(1);
    expect(hits['/coingecko']).toBe(1);
  });

  describe('reports each outage once, not each refresh', () => {
    afterEach(() => {
      vi.useRealTimers();
      flakyUp = true;
    });
    /** The next call refreshes: the cache (30 s) has run out. */
    const later = () => vi.setSystemTime(Date.now() + 31_000);

    it('offline: one line when no source answers, none at the next refreshes, and one when a source is back', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const reports: string[] = [];
      flakyUp = false;
      const feed = createPriceFeed([at('coinbase', '/error'), at('kraken', '/error'), at('coingecko', '/flaky')], 300, (m) => reports.push(m));
      for (let refresh = 0; refresh < 3; refresh++, later()) expect(await feed.current()).toMatchObject({ source: 'simulated' });
      expect(reports).toEqual([
        'no price source answered (coinbase: HTTP 500; kraken: HTTP 500; coingecko: HTTP 503): the demo answers a simulated price until one does',
      ]);
      flakyUp = true;
      expect(await feed.current()).toMatchObject({ source: 'coingecko', usd: 88888 });
      later();
      await feed.current();
      expect(reports.slice(1)).toEqual(['price source coingecko answers again']);
      flakyUp = false; // a new outage is reported again, once
      later();
      await feed.current();
      later();
      await feed.current();
      expect(reports.slice(2)).toEqual([expect.stringMatching(/^no price source answered /)]);
    });

    it('a failing source before one that answers: its failure once, not at every refresh', async () => {
      vi.useFakeTimers({ toFake: ['Date'] });
      const reports: string[] = [];
      const feed = createPriceFeed([at('coinbase', '/error'), at('kraken')], 300, (m) => reports.push(m));
      for (let refresh = 0; refresh < 3; refresh++, later()) expect(await feed.current()).toMatchObject({ source: 'kraken' });
      expect(reports).toEqual(['price source coinbase failed: HTTP 500']);
    });
  });
});
