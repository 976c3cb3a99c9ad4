// GET /api/stats (docs/architecture.md decision 11): payment
// analytics over the payments a login may see. The SQL is in
// stats-queries.ts, the CSV export in csv.ts, the BTC price in price.ts.
//
// Who sees what: admin keys see every payment (ownerless ones too), the
// service fee and the service wallet; any other key sees the payments of the
// Lightning Addresses linked to it. Free owners see the last 7 days (every
// history field is computed over that window); Pro owners (an active Pro
// subscription on any linked address) and admins see everything and may
// export CSV.
//
// walletSats is a balance, not history: a free owner sees everything the
// service still owes them, however old the payments it came from.
//
// Rounding (integer sats from msat): serviceFee = floor(sum of fee_msat / 1000)
// over the visible payments' splits; walletSats = floor(msat / 1000);
// walletUsdCents = walletSats at the current BTC price, to the nearest cent,
// or null when no live price is available (never a made-up figure).
import type { Queryable } from '../../db/types.js';
import { linkedAddresses, type Login } from '../accounts/auth.js';
import type { ServiceContext } from '../context.js';
import { providerUnavailable } from '../money/provider-errors.js';
import { servicePriceFeed, usdCents, type BtcPrice } from './price.js';
import { owedMsat, paymentStats, type PaymentStats, type StatsScope } from './stats-queries.js';

export const FREE_HISTORY_DAYS = 7;
const DAY_MS = 86_400_000;

export type Tier = 'admin' | 'pro' | 'free';

export interface StatsView extends StatsScope {
  tier: Tier;
}

/** The stats object plus what the dashboard needs to label it. */
export interface Stats extends PaymentStats {
  /** Admin: the service wallet's balance. Owner: what the service still owes them (splits not yet paid). Sats, floor. */
  walletSats: number;
  /** walletSats in US cents at btcPrice, rounded; null when no live price answered (btcPrice.source is "simulated"). */
  walletUsdCents: number | null;
  btcPrice: BtcPrice;
  scope: { tier: Tier; addresses: string[] | null; since: string | null; generatedAt: string };
}

// ---------------------------------------------------------------------------
// Who sees what

/** The caller's view: admins everything; owners their linked addresses, 7 days unless Pro. */
export async function statsView(db: Queryable, login: Login, now: Date = new Date()): Promise<StatsView> {
  if (login.admin) return { tier: 'admin', addresses: 'all', since: null, now };
  const addresses = await linkedAddresses(db, login.pubkey);
  const pro =
    addresses.length > 0 &&
    (await db.query('SELECT 1 FROM pro_subscriptions WHERE address = ANY($1::text[]) AND expires_at > $2 LIMIT 1', [addresses, now])).length > 0;
  return { tier: pro ? 'pro' : 'free', addresses, since: pro ? null : new Date(now.getTime() - FREE_HISTORY_DAYS * DAY_MS), now };
}

// ---------------------------------------------------------------------------
// The stats object for a login

export interface StatsOptions {
  now?: Date;
  /** Replaces the live price feed (tests). */
  price?: () => Promise<BtcPrice>;
}

export async function statsFor(ctx: ServiceContext, login: Login, options: StatsOptions = {}): Promise<Stats> {
  const db = await ctx.database();
  const view = await statsView(db, login, options.now);
  const [history, walletMsat, price] = await Promise.all([
    paymentStats(db, view),
    view.addresses === 'all' ? serviceBalanceMsat(ctx) : owedMsat(db, view.addresses),
    options.price ? options.price() : servicePriceFeed(ctx).current(),
  ]);
  const walletSats = Math.floor(walletMsat / 1000);
  return {
    totalPayments: history.totalPayments,
    totalSats: history.totalSats,
    serviceFee: history.serviceFee,
    walletSats,
    walletUsdCents: usdCents(walletSats, price),
    byOwner: history.byOwner,
    byDay: history.byDay,
    trend: history.trend,
    recent: history.recent,
    sessions: history.sessions,
    btcPrice: price,
    scope: {
      tier: view.tier,
      addresses: view.addresses === 'all' ? null : view.addresses,
      since: view.since?.toISOString() ?? null,
      generatedAt: view.now.toISOString(),
    },
  };
}

async function serviceBalanceMsat(ctx: ServiceContext): Promise<number> {
  try {
    return (await ctx.provider.balance()).balanceMsat;
  } catch (error) {
    throw providerUnavailable(error);
  }
}
