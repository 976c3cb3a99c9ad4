// The service's own demo in its own directory, so that an agent's first look
// at a fresh service finds something to call: the BTC price (GET
// /api/demo/btc-price) and, where the demo sells prepaid sessions, its metered
// stream (GET /api/demo/stream, sold by the session only). They are listed at
// the service's public URL, which comes from configuration only (PUBLIC_URL,
// or where `npm start` listens), never from a request's Host; without one
// nothing is listed. Marked as the demo (apis.demo, `demo: true` in the
// listing) and idempotent: one entry per demo route at most, moved when the
// public URL changes, dropped when the demo no longer sells it, untouched when
// nothing changed.
import { DEMO_ROUTE, DEMO_STREAM_ROUTE, demoSellsSessions } from '../demo.js';
import { servicePart, type ServiceContext } from '../context.js';

/**
 * The demo pays the service itself, so its entries have no owner to name. Never
 * listed; `.invalid` (RFC 2606) so that no session can link it and rewrite the
 * entries with an address proof.
 */
const DEMO_OWNER_ADDRESS = 'demo@l402-paywall.invalid';

interface DemoEntry {
  route: string;
  name: string;
  description: string;
  category: string;
}

const PRICE: DemoEntry = {
  route: DEMO_ROUTE,
  name: 'L402 demo: live BTC price',
  description:
    "This service's own demo: the BTC/USD price (simulated when no price source answers), paid per request over Lightning (L402). Try a wallet, a client or an agent against it.",
  category: 'finance',
};
const STREAM: DemoEntry = {
  route: DEMO_STREAM_ROUTE,
  name: 'L402 demo: metered stream',
  description:
    "This service's own demo of prepaid sessions: ?chunks=N (1-200, default 30) streams N Server-Sent Events, price_sats each, spent from a prepaid session (sold by the session only: l402-paywall --session, l402-mcp --sessions).",
  category: 'data',
};

const UPSERT = `
INSERT INTO apis AS a (url, name, description, price_sats, category, lightning_address, demo)
VALUES ($1, $2, $3, $4, $5, $6, true)
ON CONFLICT (url) DO UPDATE SET
  name = EXCLUDED.name, description = EXCLUDED.description, price_sats = EXCLUDED.price_sats,
  category = EXCLUDED.category, lightning_address = EXCLUDED.lightning_address, demo = true, updated_at = now()
WHERE (a.name, a.description, a.price_sats, a.category, a.lightning_address, a.demo)
  IS DISTINCT FROM (EXCLUDED.name, EXCLUDED.description, EXCLUDED.price_sats, EXCLUDED.category, EXCLUDED.lightning_address, true)`;

/** Lists the demo at `publicUrl` (the service's origin from configuration); answers the urls listed, the BTC price first. */
export async function listDemo(ctx: ServiceContext, publicUrl: string): Promise<string[]> {
  const entries = demoSellsSessions(ctx) ? [PRICE, STREAM] : [PRICE];
  const urls = entries.map((entry) => new URL(entry.route, publicUrl).href);
  const db = await ctx.database();
  await db.transaction(async (tx) => {
    // An earlier start on another address or port, or with sessions then: the demo moves rather than being listed twice.
    await tx.query('DELETE FROM apis WHERE demo AND url <> $1 AND url <> $2', [urls[0], urls.at(-1)]);
    for (const [index, entry] of entries.entries())
      await tx.query(UPSERT, [urls[index], entry.name, entry.description, ctx.config.demo.priceSats, entry.category, DEMO_OWNER_ADDRESS]);
  });
  return urls;
}

// The listing under way or done, per service context; forgotten when it fails, so the next listing tries again.
const demoListing = servicePart('demo listing', (): { done?: Promise<void> } => ({}));

/**
 * Before an instance's first listing: the demo at PUBLIC_URL (or Vercel's
 * production domain), when the configuration names one. A failure is logged and
 * tried again at the next listing; the listing itself goes on.
 */
export function demoListedOnce(ctx: ServiceContext): Promise<void> {
  const publicUrl = ctx.config.publicUrl;
  if (!publicUrl) return Promise.resolve();
  const listing = ctx.part(demoListing);
  listing.done ??= listDemo(ctx, publicUrl).then(
    () => undefined,
    (error: unknown) => {
      listing.done = undefined;
      console.error(`[directory] listing the demo failed: ${error instanceof Error ? error.message : String(error)}`);
    },
  );
  return listing.done;
}
