// MPP discovery of the running service: /llms.txt, the OpenAPI document's
// `x-service-info` and each paid operation's `x-payment-info`, checked
// against the 402s the operations really answer. mppx's own validator runs
// against it in mppx-validate.test.ts (slow: a child process).
import { Challenge } from 'mppx';
import { beforeAll, describe, expect, it } from 'vitest';
import { useDevServer } from '../support/server.js';

const server = useDevServer(() => ({ DATABASE_URL: undefined, DEMO_STREAM_INTERVAL_MS: '0' }));

interface Offer {
  method: string;
  intent: string;
  amount: string;
  currency: string;
}
type Operation = { 'x-payment-info'?: { offers: Offer[] }; security?: Record<string, unknown>[] };
interface Document {
  'x-service-info'?: { docs?: { llms?: string } };
  paths: Record<string, Record<string, Operation>>;
}

let doc: Document;
beforeAll(async () => {
  doc = (await (await fetch(`${server.url}/api/openapi.json`)).json()) as Document;
});

/** Every operation of the document: method, path, and the operation. */
const operations = () =>
  Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })));

/** Sold by a Payment credential: its security names the Payment scheme. */
const sold = (operation: Operation) => operation.security?.some((requirement) => 'Payment' in requirement) ?? false;

/** The Payment challenges of an operation's real 402, as offers: method, intent, the request's amount and currency. */
async function offersOf402(method: string, path: string): Promise<Offer[]> {
  const response = await fetch(`${server.url}${path}`, { method });
  expect(response.status, `${method} ${path}`).toBe(402);
  return Challenge.fromHeadersList(response.headers).map((challenge) => {
    const request = challenge.request as { amount: string; currency: string };
    return { method: challenge.method, intent: challenge.intent, amount: request.amount, currency: request.currency };
  });
}

const sortedOffers = (offers: Offer[]) => [...offers].sort((a, b) => `${a.method}/${a.intent}`.localeCompare(`${b.method}/${b.intent}`));

describe('/llms.txt and x-service-info', () => {
  it('serves /llms.txt: non-empty text that names the document and how to pay', async () => {
    const response = await fetch(`${server.url}/llms.txt`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await response.text();
    expect(text.startsWith('# ')).toBe(true);
    expect(text).toContain('/api/openapi.json');
    expect(text).toContain('Accept-Payment');
  });

  it('lists POST /api/mcp with its tools and their prices, as the document and the landing page name it', async () => {
    const text = await (await fetch(`${server.url}/llms.txt`)).text();
    const tools = text.slice(text.indexOf('## Paid MCP tools'), text.indexOf('## Reference'));
    expect(tools).toContain('POST /api/mcp');
    expect(tools).toMatch(/`btc_price`: [^\n]*DEMO_PRICE_SATS \(1 sat by default\) a call[^\n]*intent `charge`/);
    expect(tools).toMatch(/`btc_price_session`: [^\n]*DEMO_PRICE_SATS a call from a prepaid session/);
    expect(tools).toContain('-32042');
    expect(Object.keys(doc.paths['/api/mcp'] ?? {})).toEqual(['post']);
    const landing = await (await fetch(`${server.url}/`)).text();
    expect(landing).toMatch(/\/api\/mcp<\/code> sells the same price as a paid tool, <code>btc_price<\/code>/);
  });

  it('the document names it in x-service-info.docs.llms', () => {
    expect(doc['x-service-info']?.docs?.llms).toBe('/llms.txt');
  });
});

describe('x-payment-info', () => {
  it('every operation sold by a Payment credential carries offers, and only those', () => {
    const paid = operations().filter(({ operation }) => sold(operation));
    expect(paid.map(({ method, path }) => `${method} ${path}`)).toEqual(
      expect.arrayContaining(['GET /api/demo/btc-price', 'HEAD /api/demo/btc-price', 'GET /api/demo/stream', 'HEAD /api/demo/stream']),
    );
    for (const { operation } of paid) expect(operation['x-payment-info']?.offers.length).toBeGreaterThan(0);
    for (const { operation } of operations().filter(({ operation }) => !sold(operation))) expect(operation['x-payment-info']).toBeUndefined();
  });

  it("each operation's offers are what its 402 asks: method, intent, amount in sats, currency", async () => {
    for (const { method, path, operation } of operations().filter(({ operation }) => sold(operation))) {
      const offers = operation['x-payment-info']!.offers;
      expect(sortedOffers(offers), `${method} ${path}`).toEqual(sortedOffers(await offersOf402(method, path)));
      for (const offer of offers) expect(offer.amount).toMatch(/^[1-9][0-9]*$/);
    }
    // The demo's price (DEMO_PRICE_SATS, 1 by default), charged and per session unit.
    expect(sortedOffers(doc.paths['/api/demo/btc-price']!.get!['x-payment-info']!.offers)).toEqual([
      { method: 'lightning', intent: 'charge', amount: '1', currency: 'sat' },
      { method: 'lightning', intent: 'session', amount: '1', currency: 'sat' },
    ]);
  });
});
