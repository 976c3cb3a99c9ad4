// The demo's BTC price (docs/architecture.md decision 12): public sources tried in order,
// each with a timeout and a validated answer, cached briefly; offline the
// answer says "simulated" instead of pretending.
import { z } from 'zod';
import { readBoundedText } from 'l402-paywall/lightning';
import { servicePart, type ServiceContext } from '../context.js';

export interface BtcPrice {
  usd: number;
  source: string;
  fetchedAt: string;
}

export interface PriceSource {
  name: string;
  url: string;
  parse(body: unknown): number;
}

const positiveNumber = z.coerce.number().positive().finite();

export const PUBLIC_SOURCES: Record<string, PriceSource> = {
  coinbase: {
    name: 'coinbase',
    url: 'https://api.coinbase.com/v2/prices/BTC-USD/spot',
    parse: (body) => z.object({ data: z.object({ amount: positiveNumber }) }).parse(body).data.amount,
  },
  kraken: {
    name: 'kraken',
    url: 'https://api.kraken.com/0/public/Ticker?pair=XBTUSD',
    parse: (body) =>
      z.object({ result: z.object({ XXBTZUSD: z.object({ c: z.tuple([positiveNumber]).rest(z.unknown()) }) }) }).parse(body).result.XXBTZUSD.c[0],
  },
  coingecko: {
    name: 'coingecko',
    url: 'https://api.coingecko.com/api/v3/simple/price?ids=bitcoin&vs_currencies=usd',
    parse: (body) => z.object({ bitcoin: z.object({ usd: positiveNumber }) }).parse(body).bitcoin.usd,
  },
};

/** US cents for `sats` at `price`, to the nearest cent; null when the price is not a live one (never a made-up figure). */
export function usdCents(sats: number, price: BtcPrice): number | null {
  if (price.source === 'simulated') return null;
  return Math.round((sats * price.usd) / 1_000_000);
}

/** Shown when no source answers: a round figure, labelled as such. */
export const SIMULATED_USD = 100_000;
const CACHE_MS = 30_000;
const MAX_BODY_BYTES = 64 * 1024;

/**
 * `report` hears each outage once, not each refresh (one every CACHE_MS while
 * offline): a source's failure when it starts failing, or one line when none
 * answers; and when a source that failed answers again.
 */
export function createPriceFeed(sources: PriceSource[], timeoutMs: number, report: (message: string) => void = () => {}) {
  let cached: { price: BtcPrice; until: number } | undefined;
  let inFlight: Promise<BtcPrice> | undefined;
  // Sources whose current outage was reported, and whether "none answered" was.
  const failing = new Set<PriceSource>();
  let simulating = false;

  async function fetchFrom(source: PriceSource): Promise<BtcPrice> {
    const response = await fetch(source.url, { signal: AbortSignal.timeout(timeoutMs), headers: { accept: 'application/json' }, redirect: 'error' });
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    const read = await readBoundedText(response.body, MAX_BODY_BYTES);
    if (!read.ok) throw new Error(`answer ${read.reason}`);
    const usd = source.parse(JSON.parse(read.text));
    return { usd: Math.round(usd * 100) / 100, source: source.name, fetchedAt: new Date().toISOString() };
  }

  async function refresh(): Promise<BtcPrice> {
    const failures: { source: PriceSource; reason: string }[] = [];
    for (const source of sources) {
      try {
        const price = await fetchFrom(source);
        for (const { source: failed, reason } of failures) {
          if (!failing.has(failed)) report(`price source ${failed.name} failed: ${reason}`);
          failing.add(failed);
        }
        if (failing.delete(source)) report(`price source ${source.name} answers again`);
        simulating = false;
        return price;
      } catch (error) {
        failures.push({ source, reason: error instanceof Error ? error.message : String(error) });
      }
    }
    if (!simulating && sources.length > 0) {
      const reasons = failures.map((f) => `${f.source.name}: ${f.reason}`).join('; ');
      report(`no price source answered (${reasons}): the demo answers a simulated price until one does`);
    }
    simulating = true;
    for (const failure of failures) failing.add(failure.source);
    return { usd: SIMULATED_USD, source: 'simulated', fetchedAt: new Date().toISOString() };
  }

  return {
    async current(): Promise<BtcPrice> {
      if (cached && cached.until > Date.now()) return cached.price;
      // One refresh at a time however many requests arrive.
      inFlight ??= refresh().finally(() => (inFlight = undefined));
      const price = await inFlight;
      cached = { price, until: Date.now() + CACHE_MS };
      return price;
    },
  };
}

export type PriceFeed = ReturnType<typeof createPriceFeed>;

const priceFeed = servicePart('price feed', (ctx): PriceFeed => {
  const sources = ctx.config.demo.priceSources.map((name): PriceSource => {
    const source = PUBLIC_SOURCES[name];
    if (!source) throw new Error(`Unknown BTC price source "${name}" (known: ${Object.keys(PUBLIC_SOURCES).join(', ')}, or none)`);
    return source;
  });
  return createPriceFeed(sources, ctx.config.demo.priceTimeoutMs, (message) => console.warn(`[price] ${message}`));
});

/** The service's BTC price (BTC_PRICE_SOURCES): one cached feed per service context, shared by the demo and the stats. */
export function servicePriceFeed(ctx: ServiceContext): PriceFeed {
  return ctx.part(priceFeed);
}
