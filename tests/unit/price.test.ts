// The demo price feed against local stand-ins for the public sources: order,
// timeouts, malformed answers, caching, and the honest "simulated" fallback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPriceFeed, PUBLIC_SOURCES, SIMULATED_USD, type PriceSource } from '../../lib/service/records/price.js';

let server: Server;
let base = '';
let hits: Record<string, number> = {};

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
});
