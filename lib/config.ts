// The only reader of process.env: environment -> typed, validated config.
// Local runs get embedded defaults (memory store, dev Lightning node, a secret
// generated once under .data/); production refuses to guess (docs/architecture.md "Where it runs").
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { eventSecretKey } from 'l402-paywall/events';
import type { Network } from 'l402-paywall/lightning';

/** A whole number from the environment; the error says what is wrong with the value, e.g. `PORT: must be a whole number (digits only), not "abc"`. */
const wholeNumber = ({ min = 1, max = Number.MAX_SAFE_INTEGER }: { min?: number; max?: number } = {}) =>
  z
    .string()
    .trim()
    .refine((text) => /^\d{1,16}$/.test(text), {
      error: (issue) => `must be a whole number (digits only), not ${JSON.stringify(String(issue.input).slice(0, 40))}`,
    })
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
const optionalText = z.string().trim().min(1).optional();

const EnvSchema = z.object({
  /** Unset, development or test: a local run; any other value: production (runMode). */
  NODE_ENV: z.string().optional(),
  VERCEL: z.string().optional(),
  L402_SECRET: optionalText,
  L402_SECRET_PREVIOUS: optionalText,
  L402_TOKEN_TTL_SECONDS: wholeNumber({ max: 30 * 24 * 3600 }).default(3600),
  LIGHTNING_PROVIDER: z.enum(['dev', 'lnbits', 'phoenixd', 'lnd', 'cln', 'nwc', 'blink']).optional(),
  DEV_NODE_PRIVATE_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  UPSTASH_REDIS_REST_URL: z.string().url().optional(),
  UPSTASH_REDIS_REST_TOKEN: optionalText,
  KV_REST_API_URL: z.string().url().optional(),
  KV_REST_API_TOKEN: optionalText,
  /** Invoices per minute per client IP, every route that makes one together (lib/service/money/invoices.ts invoiceLimit). */
  INVOICE_RATE_LIMIT_PER_MINUTE: wholeNumber().default(20),
  MAX_INVOICE_SATS: wholeNumber().default(1_000_000),
  DEMO_PRICE_SATS: wholeNumber().default(1),
  /** Price of 30 days of Pro (GET /api/dev-token). */
  PRO_PRICE_SATS: wholeNumber({ max: 100_000_000 }).default(9000),
  /** GET /api/health calls per minute from one IP (an uptime monitor needs a few). */
  HEALTH_RATE_LIMIT_PER_MINUTE: wholeNumber().default(60),
  /** POST /api/register calls per minute from one IP. */
  REGISTER_RATE_LIMIT_PER_MINUTE: wholeNumber().default(10),
  /** Comma-separated price sources tried in order; "none" = offline (simulated price). */
  BTC_PRICE_SOURCES: z.string().default('coinbase,kraken,coingecko'),
  BTC_PRICE_TIMEOUT_MS: wholeNumber().default(1500),
  /** The service's public base URL, e.g. https://l402.example.com: where backends send webhooks. Never taken from a request's Host. */
  PUBLIC_URL: z
    .string()
    .url()
    .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL')
    .optional(),
  /** Set by Vercel: the production domain (no scheme); PUBLIC_URL's fallback there. */
  VERCEL_PROJECT_PRODUCTION_URL: optionalText,
  /** postgres:// URL (Neon hosts use the Neon driver); "pglite://memory" for an in-memory PGlite; unset = PGlite under DATA_DIR. */
  DATABASE_URL: optionalText,
  /** Vercel sends it as `Authorization: Bearer <CRON_SECRET>` to scheduled functions (api/cron/*). */
  CRON_SECRET: optionalText,
  // --- Lightning backends (LIGHTNING_PROVIDER and each backend's settings) ---
  LIGHTNING_NETWORK: z.enum(['bitcoin', 'testnet', 'signet', 'regtest']).default('bitcoin'),
  /** Every call to the Lightning backend gives up after this long (then 503, or "outcome unknown" for payments). */
  LIGHTNING_TIMEOUT_MS: wholeNumber({ min: 100, max: 120_000 }).default(10_000),
  LNBITS_URL: z.string().url().optional(),
  LNBITS_API_KEY: optionalText,
  LNBITS_ADMIN_KEY: optionalText,
  PHOENIXD_URL: z.string().url().optional(),
  PHOENIXD_PASSWORD: optionalText,
  PHOENIXD_WEBHOOK_SECRET: optionalText,
  LND_REST_URL: z.string().url().optional(),
  LND_MACAROON: z
    .string()
    .trim()
    .regex(/^[0-9a-fA-F]+$/, 'must be the macaroon in hex (xxd -p -c 10000 admin.macaroon)')
    .optional(),
  LND_TLS_CERT: optionalText,
  CLN_REST_URL: z.string().url().optional(),
  CLN_RUNE: optionalText,
  NWC_URL: z.string().trim().startsWith('nostr+walletconnect://', 'must be a nostr+walletconnect:// URI').optional(),
  BLINK_API_KEY: optionalText,
  BLINK_WALLET_ID: optionalText,
  BLINK_API_URL: z.string().url().default('https://api.blink.sv/graphql'),
  BLINK_WEBHOOK_SECRET: optionalText,
  // --- Managed mode: split, payouts, Lightning Addresses ---
  // lnurl
  /** Comma-separated usernames answered at /.well-known/lnurlp/; unset = any in development, none in production. */
  LNURLP_USERNAMES: z
    .string()
    .regex(/^[a-z0-9\-_.]+(?:\s*,\s*[a-z0-9\-_.]+)*$/, 'must be comma-separated usernames (a-z 0-9 - _ .)')
    .optional(),
  /** Requests to hosts we do not control (Lightning Address servers): whole budget per fetch, ms. */
  OUTBOUND_TIMEOUT_MS: wholeNumber({ max: 60_000 }).default(5000),
  /** Largest response body read from such hosts, bytes. */
  OUTBOUND_MAX_BYTES: wholeNumber({ max: 10 * 1024 * 1024 }).default(64 * 1024),
  // payouts
  /** Header x-split-secret of POST /api/split (manual recovery); unset = the endpoint answers 503. */
  SPLIT_SECRET: optionalText,
  /** Owner shares below this many sats accrue per owner and are paid together once their total reaches it. */
  SPLIT_MIN_SATS: wholeNumber({ max: 100_000_000 }).default(100),
  /** Routing fee a payout may spend, in parts per million of its amount (paid from the service's 0.3%). */
  PAYOUT_MAX_FEE_PPM: wholeNumber({ min: 0, max: 1_000_000 }).default(3000),
  /**
   * Routing fee a payout may always spend (msat), within the fee the service earned on its payments: shares accrue
   * until that fee reaches this. 3000 is the 0.3% of 1,000 sats, so a 1,000-sat payment is paid out at once.
   */
  PAYOUT_MIN_FEE_MSAT: wholeNumber({ min: 0, max: 100_000_000 }).default(3000),
  /** Attempts after which a payout that definitely did not go through is marked failed (an operator decides). */
  PAYOUT_MAX_ATTEMPTS: wholeNumber({ max: 1000 }).default(10),
  /** First retry delay; it doubles per attempt, up to 6 hours. */
  PAYOUT_RETRY_BASE_SECONDS: wholeNumber({ max: 86_400 }).default(60),
  // --- Stats: LNURL-auth sessions, linking, admins ---
  // auth
  /** Comma-separated 33-byte compressed secp256k1 public keys (hex) whose LNURL-auth sessions see everything. */
  ADMIN_PUBKEYS: z
    .string()
    .regex(
      /^\s*0[23][0-9a-fA-F]{64}(?:\s*,\s*0[23][0-9a-fA-F]{64})*\s*$/,
      'must be comma-separated 33-byte compressed public keys in hex (66 characters starting 02 or 03)',
    )
    .optional(),
  /** Dashboard session lifetime. */
  SESSION_TTL_HOURS: wholeNumber({ max: 30 * 24 }).default(24),
  /** Life of an LNURL-auth challenge (k1). */
  LNURL_AUTH_TTL_SECONDS: wholeNumber({ max: 3600 }).default(300),
  /** New LNURL-auth challenges (login or erasure) and wallet callbacks per minute per client IP. */
  AUTH_RATE_LIMIT_PER_MINUTE: wholeNumber().default(30),
  /** Address links started (each pays 1 sat) per hour per public key. */
  LINK_RATE_LIMIT_PER_HOUR: wholeNumber().default(5),
  /** 1-sat link proofs the service pays per UTC day, all keys together: keys are free, so this bounds what link abuse can cost. */
  LINK_PROOFS_PER_DAY: wholeNumber().default(200),
  /** ... of which links started from one client IP (an IPv6 /64) may use this many: one client cannot use up everyone's. */
  LINK_PROOFS_PER_IP_PER_DAY: wholeNumber().default(10),
  /** ... and one Lightning Address may be sent this many. */
  LINK_PROOFS_PER_ADDRESS_PER_DAY: wholeNumber().default(3),
  /** Life of a link code sent in the 1-sat payment's comment. */
  LINK_CODE_TTL_MINUTES: wholeNumber({ max: 24 * 60 }).default(15),
  /** Wrong entries allowed per link code before it is void. */
  LINK_CODE_ATTEMPTS: wholeNumber({ max: 20 }).default(5),
  // --- Audit events ---
  /** Where the paid routes (demo, Pro) post signed audit events (CloudEvents); https, a public host (http to loopback in development). */
  EVENTS_WEBHOOK_URL: z.string().url().optional(),
  /** The Standard Webhooks secret the events are signed with: whsec_ + base64 of 24 to 64 bytes, checked by the signer's own rule. */
  EVENTS_WEBHOOK_SECRET: z
    .string()
    .trim()
    .check((ctx) => {
      try {
        eventSecretKey(ctx.value);
      } catch (error) {
        const recipe = 'echo "whsec_$(openssl rand -base64 32)" makes one (standard base64, its = padding kept)';
        ctx.issues.push({ code: 'custom', input: ctx.value, message: `${(error as Error).message}; ${recipe}` });
      }
    })
    .optional(),
  DATA_DIR: z.string().default('.data'),
  PORT: wholeNumber({ max: 65535 }).default(3000),
  HOST: z.string().default('127.0.0.1'),
});

export type Env = z.infer<typeof EnvSchema>;

/** Every environment variable this module reads. */
export const ENV_KEYS = Object.keys(EnvSchema.shape) as Array<keyof Env>;

export interface Config {
  /** Production unless NODE_ENV is unset, development or test and VERCEL is unset (runMode). */
  production: boolean;
  /** Which setting decided `production`, in words, for the start-up banner. */
  modeReason: string;
  /**
   * The service's public origin (PUBLIC_URL, else https://VERCEL_PROJECT_PRODUCTION_URL);
   * unset: `npm start` uses the address it listens on, production sends no webhook URL.
   */
  publicUrl?: string;
  dataDir: string;
  server: { port: number; host: string };
  l402: {
    /** Newest first: index 0 signs, all verify. */
    secrets: string[];
    /** L402_SECRET; generated at this start; or generated at an earlier one and read from DATA_DIR. */
    secretSource: 'env' | 'generated' | 'saved';
    tokenTtlSeconds: number;
  };
  lightning: LightningConfig;
  store: { upstash?: { url: string; token: string } };
  /** Unset in production = no database: the paywall still works, database features answer 503. */
  database?: { url: string } | { pgliteDir: string | null };
  invoices: { ratePerMinute: number; maxSats: number };
  demo: { priceSats: number; priceSources: string[]; priceTimeoutMs: number };
  pro: { priceSats: number };
  directory: { registerRatePerMinute: number };
  /** GET /api/health, per client IP. */
  health: { ratePerMinute: number };
  /** Scheduled functions (api/cron/*) answer only requests carrying this secret; unset = they refuse. */
  cron: { secret?: string };
  // --- Lightning backends ---
  // --- Managed mode ---
  // lnurl
  /** Usernames the service's own Lightning Addresses answer for; null = any (development only). */
  lnurlp: { usernames: string[] | null };
  /** Fetches to user-supplied hosts (lib/http/outbound.ts). */
  outbound: { timeoutMs: number; maxBytes: number };
  /** Signed audit events of the paid routes, posted here; unset = none produced. */
  events?: { webhookUrl: string; webhookSecret: string };
  // payouts
  /** The split and payouts to owners (lib/service/money/payouts.ts). */
  payouts: {
    /** POST /api/split; unset = NOT_CONFIGURED. */
    splitSecret?: string;
    /** Shares accrue per owner until their total reaches this. */
    minMsat: number;
    maxFeePpm: number;
    minFeeMsat: number;
    maxAttempts: number;
    retryBaseSeconds: number;
  };
  // --- Stats ---
  // auth
  auth: {
    /** Lower-case compressed public keys (hex) that see everything. */
    adminPubkeys: string[];
    sessionTtlSeconds: number;
    challengeTtlSeconds: number;
    ratePerMinute: number;
    linkRatePerHour: number;
    linkProofsPerDay: number;
    linkProofsPerIpPerDay: number;
    linkProofsPerAddressPerDay: number;
    linkCodeTtlSeconds: number;
    linkCodeAttempts: number;
  };
  /** Settings production cannot run without; the paywall answers 503 naming them. */
  problems: string[];
}

// --- Lightning backends: the provider union and each backend's settings ---
export type LightningProviderName = NonNullable<Env['LIGHTNING_PROVIDER']>;

export interface LightningConfig {
  provider: LightningProviderName;
  devNodePrivateKey: string;
  /** The network our provider's invoices are on; payouts refuse invoices for any other. */
  network: Network;
  /** Upper bound of every call to the backend, in ms. */
  timeoutMs: number;
  /** Only the chosen backend's settings are filled in. */
  lnbits?: { url: string; apiKey: string; adminKey?: string };
  phoenixd?: { url: string; password: string; webhookSecret?: string };
  lnd?: { url: string; macaroon: string; tlsCert?: string };
  cln?: { url: string; rune: string };
  nwc?: { url: string };
  blink?: { apiKey: string; walletId?: string; apiUrl: string; webhookSecret?: string };
}

type BackendSettings = Pick<LightningConfig, 'lnbits' | 'phoenixd' | 'lnd' | 'cln' | 'nwc' | 'blink'>;

/** The chosen backend's settings, and the names of the required ones that are not set. */
function lightningBackend(provider: LightningProviderName, e: Env): { settings: BackendSettings; missing: string[] } {
  const required: Record<LightningProviderName, Array<keyof Env>> = {
    dev: [],
    lnbits: ['LNBITS_URL', 'LNBITS_API_KEY'],
    phoenixd: ['PHOENIXD_URL', 'PHOENIXD_PASSWORD'],
    lnd: ['LND_REST_URL', 'LND_MACAROON'],
    cln: ['CLN_REST_URL', 'CLN_RUNE'],
    nwc: ['NWC_URL'],
    blink: ['BLINK_API_KEY'],
  };
  const missing = required[provider].filter((key) => e[key] === undefined);
  if (missing.length > 0) return { settings: {}, missing };
  const settings: Record<LightningProviderName, () => BackendSettings> = {
    dev: () => ({}),
    lnbits: () => ({ lnbits: { url: e.LNBITS_URL!, apiKey: e.LNBITS_API_KEY!, adminKey: e.LNBITS_ADMIN_KEY } }),
    phoenixd: () => ({ phoenixd: { url: e.PHOENIXD_URL!, password: e.PHOENIXD_PASSWORD!, webhookSecret: e.PHOENIXD_WEBHOOK_SECRET } }),
    lnd: () => ({ lnd: { url: e.LND_REST_URL!, macaroon: e.LND_MACAROON!.toLowerCase(), tlsCert: e.LND_TLS_CERT } }),
    cln: () => ({ cln: { url: e.CLN_REST_URL!, rune: e.CLN_RUNE! } }),
    nwc: () => ({ nwc: { url: e.NWC_URL! } }),
    blink: () => ({ blink: { apiKey: e.BLINK_API_KEY!, walletId: e.BLINK_WALLET_ID, apiUrl: e.BLINK_API_URL, webhookSecret: e.BLINK_WEBHOOK_SECRET } }),
  };
  return { settings: settings[provider](), missing };
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(withoutEmptyValues(env));
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid environment: ${detail}`);
  }
  const e = parsed.data;
  const { production, reason: modeReason } = runMode(e);
  const dataDir = resolve(e.DATA_DIR);
  const problems: string[] = [];

  const upstashUrl = e.UPSTASH_REDIS_REST_URL ?? e.KV_REST_API_URL;
  const upstashToken = e.UPSTASH_REDIS_REST_TOKEN ?? e.KV_REST_API_TOKEN;
  const upstash = upstashUrl && upstashToken ? { url: upstashUrl, token: upstashToken } : undefined;
  if (production && !upstash) problems.push('UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN (or KV_REST_API_URL and KV_REST_API_TOKEN)');

  let secrets: string[];
  let secretSource: Config['l402']['secretSource'] = 'env';
  if (e.L402_SECRET) {
    secrets = [e.L402_SECRET, ...splitList(e.L402_SECRET_PREVIOUS)];
  } else if (production) {
    problems.push('L402_SECRET');
    secrets = [];
  } else {
    const saved = localKey(dataDir, 'l402-secret');
    secrets = [saved.key];
    secretSource = saved.created ? 'generated' : 'saved';
  }
  for (const s of secrets) {
    if (s.length < 32) throw new ConfigError('L402_SECRET and L402_SECRET_PREVIOUS must be at least 32 characters (e.g. `openssl rand -hex 32`)');
  }

  const provider = e.LIGHTNING_PROVIDER ?? 'dev';
  if (provider === 'dev' && production) problems.push('LIGHTNING_PROVIDER (the embedded dev node never runs in production)');
  const backend = lightningBackend(provider, e);
  if (backend.missing.length > 0) {
    const what = `${backend.missing.join(', ')} (needed by LIGHTNING_PROVIDER=${provider})`;
    if (!production) throw new ConfigError(`Set ${what}`);
    problems.push(what);
  }

  const publicUrl = e.PUBLIC_URL ?? (e.VERCEL_PROJECT_PRODUCTION_URL ? `https://${e.VERCEL_PROJECT_PRODUCTION_URL.replace(/^https?:\/\//, '')}` : undefined);

  return {
    production,
    modeReason,
    publicUrl: publicUrl === undefined ? undefined : new URL(publicUrl).origin,
    dataDir,
    server: { port: e.PORT, host: e.HOST },
    l402: { secrets, secretSource, tokenTtlSeconds: e.L402_TOKEN_TTL_SECONDS },
    lightning: {
      provider,
      devNodePrivateKey: e.DEV_NODE_PRIVATE_KEY?.toLowerCase() ?? (production ? '' : localKey(dataDir, 'dev-node-key').key),
      network: provider === 'dev' ? 'regtest' : e.LIGHTNING_NETWORK,
      timeoutMs: e.LIGHTNING_TIMEOUT_MS,
      ...backend.settings,
    },
    store: { upstash },
    database: databaseConfig(e.DATABASE_URL, production, dataDir),
    invoices: { ratePerMinute: e.INVOICE_RATE_LIMIT_PER_MINUTE, maxSats: e.MAX_INVOICE_SATS },
    demo: {
      priceSats: e.DEMO_PRICE_SATS,
      priceSources: e.BTC_PRICE_SOURCES === 'none' ? [] : splitList(e.BTC_PRICE_SOURCES),
      priceTimeoutMs: e.BTC_PRICE_TIMEOUT_MS,
    },
    pro: { priceSats: e.PRO_PRICE_SATS },
    directory: { registerRatePerMinute: e.REGISTER_RATE_LIMIT_PER_MINUTE },
    health: { ratePerMinute: e.HEALTH_RATE_LIMIT_PER_MINUTE },
    cron: { secret: e.CRON_SECRET },
    // --- Lightning backends ---
    // --- Managed mode ---
    // lnurl
    lnurlp: { usernames: e.LNURLP_USERNAMES !== undefined ? splitList(e.LNURLP_USERNAMES) : production ? [] : null },
    outbound: { timeoutMs: e.OUTBOUND_TIMEOUT_MS, maxBytes: e.OUTBOUND_MAX_BYTES },
    events: eventsConfig(e, production),
    // payouts
    payouts: {
      splitSecret: e.SPLIT_SECRET,
      minMsat: e.SPLIT_MIN_SATS * 1000,
      maxFeePpm: e.PAYOUT_MAX_FEE_PPM,
      minFeeMsat: e.PAYOUT_MIN_FEE_MSAT,
      maxAttempts: e.PAYOUT_MAX_ATTEMPTS,
      retryBaseSeconds: e.PAYOUT_RETRY_BASE_SECONDS,
    },
    // --- Stats ---
    // auth
    auth: {
      adminPubkeys: splitList(e.ADMIN_PUBKEYS).map((key) => key.toLowerCase()),
      sessionTtlSeconds: e.SESSION_TTL_HOURS * 3600,
      challengeTtlSeconds: e.LNURL_AUTH_TTL_SECONDS,
      ratePerMinute: e.AUTH_RATE_LIMIT_PER_MINUTE,
      linkRatePerHour: e.LINK_RATE_LIMIT_PER_HOUR,
      linkProofsPerDay: e.LINK_PROOFS_PER_DAY,
      linkProofsPerIpPerDay: e.LINK_PROOFS_PER_IP_PER_DAY,
      linkProofsPerAddressPerDay: e.LINK_PROOFS_PER_ADDRESS_PER_DAY,
      linkCodeTtlSeconds: e.LINK_CODE_TTL_MINUTES * 60,
      linkCodeAttempts: e.LINK_CODE_ATTEMPTS,
    },
    problems,
  };
}

/** One line per embedded default in use, for the start-up banner. */
export function describeEmbeddedDefaults(config: Config): string[] {
  const lines: string[] = [];
  // Production never falls back to these: what is missing there is named by describeMissingSettings.
  if (!config.store.upstash && !config.production) lines.push('key-value store: in memory (set UPSTASH_REDIS_REST_URL/TOKEN to share it)');
  if (config.lightning.provider === 'dev' && !config.production)
    lines.push('Lightning: embedded dev node, fake money (POST /api/dev/pay settles its invoices)');
  const secretFile = join(config.dataDir, 'l402-secret');
  if (config.l402.secretSource === 'generated') lines.push(`L402_SECRET: generated now, kept in ${secretFile} for the next starts`);
  if (config.l402.secretSource === 'saved') lines.push(`L402_SECRET: the one generated at an earlier start, read from ${secretFile}`);
  if (config.demo.priceSources.length === 0) lines.push('BTC price: simulated (BTC_PRICE_SOURCES=none)');
  return lines;
}

/** How to set each setting production refuses to run without, keyed by the first name in a problem. */
const HOW_TO_SET: Record<string, string> = {
  UPSTASH_REDIS_REST_URL:
    'create an Upstash Redis database (Vercel: Storage > Upstash for Redis, which sets KV_REST_API_URL/TOKEN) and copy its REST URL and token',
  L402_SECRET: 'a random string of at least 32 characters: openssl rand -hex 32',
  LIGHTNING_PROVIDER: 'your Lightning backend: lnbits, phoenixd, lnd, cln, nwc or blink, with its settings (docs/lightning-backends.md)',
};

/**
 * The production settings that are missing, in words, for the start-up banner
 * and /api/health: what to set and how. Empty when nothing is missing.
 */
export function describeMissingSettings(config: Config): string[] {
  if (config.problems.length === 0) return [];
  return [
    `NOT CONFIGURED for production: every route that needs them answers 503 NOT_CONFIGURED until these are set (environment or .env; see .env.example):`,
    ...config.problems.map((problem) => `  - ${describeProblem(problem)}`),
  ];
}

/** One missing production setting (an entry of Config.problems) and, where there is one recipe, how to set it. */
export function describeProblem(problem: string): string {
  const how = HOW_TO_SET[problem.split(/[\s,(]/)[0]!];
  return how ? `${problem}: ${how}` : problem;
}

// `FOO=` (as copied from .env.example) means "not set": the default applies,
// rather than an empty string failing validation or overriding the default.
function withoutEmptyValues(env: Record<string, string | undefined>): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value.trim() !== '') set[key] = value;
  return set;
}

function eventsConfig(e: Env, production: boolean): Config['events'] {
  const url = e.EVENTS_WEBHOOK_URL;
  const secret = e.EVENTS_WEBHOOK_SECRET;
  if (!url && !secret) return undefined;
  if (!url || !secret) throw new ConfigError('Set both EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET (or neither: no audit events)');
  const protocol = new URL(url).protocol;
  // The outbound policy checks every address at send time; the scheme can be refused now.
  if (protocol !== 'https:' && (production || protocol !== 'http:'))
    throw new ConfigError('EVENTS_WEBHOOK_URL must be an https URL (http only to loopback, in development)');
  return { webhookUrl: url, webhookSecret: secret };
}

function databaseConfig(url: string | undefined, production: boolean, dataDir: string): Config['database'] {
  if (url === 'pglite://memory') return { pgliteDir: null };
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL must be a postgres:// URL (or pglite://memory)');
    return { url };
  }
  // Vercel's file system is read-only and per instance: no embedded database there.
  return production ? undefined : { pgliteDir: join(dataDir, 'pglite') };
}

/** NODE_ENV values that run locally. */
const LOCAL_NODE_ENVS = ['development', 'test'];

/**
 * Production unless we are told otherwise, exactly: a misspelt or unusual
 * NODE_ENV (`Production`, `prod`, `staging`, `production `) must not run the dev
 * node, the dev wallet's admin login and a generated secret (docs/architecture.md "Where it runs").
 */
function runMode(e: Env): { production: boolean; reason: string } {
  const rule = 'only an unset NODE_ENV, development or test runs locally';
  if (e.VERCEL) return { production: true, reason: 'VERCEL is set' };
  if (e.NODE_ENV === undefined) return { production: false, reason: `NODE_ENV is unset; ${rule}` };
  if (LOCAL_NODE_ENVS.includes(e.NODE_ENV)) return { production: false, reason: `NODE_ENV=${e.NODE_ENV}; ${rule}` };
  return { production: true, reason: `NODE_ENV=${JSON.stringify(e.NODE_ENV)}; ${rule}` };
}

function splitList(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

// Kept on disk so tokens and invoices made before a restart still verify after it.
function localKey(dataDir: string, name: string): { key: string; created: boolean } {
  const file = join(dataDir, name);
  if (existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), created: false };
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32).toString('hex');
  writeFileSync(file, key + '\n', { mode: 0o600 });
  return { key, created: true };
}
