// The only reader of process.env: environment -> typed, validated config.
// Local runs get embedded defaults (memory store, dev Lightning node, a secret
// generated once under .data/); production refuses to guess (DESIGN.md).
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { Network } from './lightning/bolt11.js';

const positiveInt = z.coerce.number().int().positive();
const optionalText = z.string().trim().min(1).optional();

const EnvSchema = z.object({
  NODE_ENV: z.string().optional(),
  VERCEL: z.string().optional(),
  L402_SECRET: optionalText,
  L402_SECRET_PREVIOUS: optionalText,
  L402_TOKEN_TTL_SECONDS: positiveInt.max(30 * 24 * 3600).default(3600),
  LIGHTNING_PROVIDER: z.enum(['dev']).optional(),
  DEV_NODE_PRIVATE_KEY: z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters').optional(),
  UPSTASH_REDIS_REST_URL: z.string().url().optional(),
  UPSTASH_REDIS_REST_TOKEN: optionalText,
  KV_REST_API_URL: z.string().url().optional(),
  KV_REST_API_TOKEN: optionalText,
  INVOICE_RATE_LIMIT_PER_MINUTE: positiveInt.default(20),
  MAX_INVOICE_SATS: positiveInt.default(1_000_000),
  DEMO_PRICE_SATS: positiveInt.default(1),
  /** Price of 30 days of Pro (GET /api/dev-token). */
  PRO_PRICE_SATS: positiveInt.max(100_000_000).default(9000),
  /** POST /api/register calls per minute from one IP. */
  REGISTER_RATE_LIMIT_PER_MINUTE: positiveInt.default(10),
  /** Comma-separated price sources tried in order; "none" = offline (simulated price). */
  BTC_PRICE_SOURCES: z.string().default('coinbase,kraken,coingecko'),
  BTC_PRICE_TIMEOUT_MS: positiveInt.default(1500),
  /** postgres:// URL (Neon hosts use the Neon driver); "pglite://memory" for an in-memory PGlite; unset = PGlite under DATA_DIR. */
  DATABASE_URL: optionalText,
  /** Vercel sends it as `Authorization: Bearer <CRON_SECRET>` to scheduled functions (api/cron/*). */
  CRON_SECRET: optionalText,
  // --- Lightning backends (LIGHTNING_PROVIDER and each backend's settings) ---
  // --- Managed mode: split, payouts, Lightning Addresses ---
  // --- Stats: LNURL-auth sessions, linking, admins ---
  DATA_DIR: z.string().default('.data'),
  PORT: positiveInt.max(65535).default(3000),
  HOST: z.string().default('127.0.0.1'),
});

export type Env = z.infer<typeof EnvSchema>;

/** Every environment variable this module reads. */
export const ENV_KEYS = Object.keys(EnvSchema.shape) as Array<keyof Env>;

export interface Config {
  production: boolean;
  dataDir: string;
  server: { port: number; host: string };
  l402: {
    /** Newest first: index 0 signs, all verify. */
    secrets: string[];
    secretSource: 'env' | 'generated';
    tokenTtlSeconds: number;
  };
  lightning: {
    provider: 'dev';
    devNodePrivateKey: string;
    /** The network our provider's invoices are on; payouts refuse invoices for any other. */
    network: Network;
  };
  store: { upstash?: { url: string; token: string } };
  /** Unset in production = no database: the paywall still works, database features answer 503. */
  database?: { url: string } | { pgliteDir: string | null };
  invoices: { ratePerMinute: number; maxSats: number };
  demo: { priceSats: number; priceSources: string[]; priceTimeoutMs: number };
  pro: { priceSats: number };
  directory: { registerRatePerMinute: number };
  /** Scheduled functions (api/cron/*) answer only requests carrying this secret; unset = they refuse. */
  cron: { secret?: string };
  // --- Lightning backends ---
  // --- Managed mode ---
  // --- Stats ---
  /** Settings production cannot run without; the paywall answers 503 naming them. */
  problems: string[];
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
  const production = Boolean(e.VERCEL) || e.NODE_ENV === 'production';
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
    secrets = [localKey(dataDir, 'l402-secret')];
    secretSource = 'generated';
  }
  for (const s of secrets) {
    if (s.length < 32) throw new ConfigError('L402_SECRET and L402_SECRET_PREVIOUS must be at least 32 characters (e.g. `openssl rand -hex 32`)');
  }

  const provider = e.LIGHTNING_PROVIDER ?? 'dev';
  if (provider === 'dev' && production) problems.push('LIGHTNING_PROVIDER (the embedded dev node never runs in production)');

  return {
    production,
    dataDir,
    server: { port: e.PORT, host: e.HOST },
    l402: { secrets, secretSource, tokenTtlSeconds: e.L402_TOKEN_TTL_SECONDS },
    lightning: {
      provider,
      devNodePrivateKey: e.DEV_NODE_PRIVATE_KEY?.toLowerCase() ?? (production ? '' : localKey(dataDir, 'dev-node-key')),
      network: provider === 'dev' ? 'regtest' : 'bitcoin',
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
    cron: { secret: e.CRON_SECRET },
    // --- Lightning backends ---
    // --- Managed mode ---
    // --- Stats ---
    problems,
  };
}

/** One line per embedded default in use, for the start-up banner. */
export function describeEmbeddedDefaults(config: Config): string[] {
  const lines: string[] = [];
  if (!config.store.upstash) lines.push('key-value store: in memory (set UPSTASH_REDIS_REST_URL/TOKEN to share it)');
  if (config.lightning.provider === 'dev') lines.push('Lightning: embedded dev node, fake money (POST /api/dev/pay settles its invoices)');
  if (config.l402.secretSource === 'generated') lines.push(`L402_SECRET: generated, kept in ${join(config.dataDir, 'l402-secret')}`);
  if (config.demo.priceSources.length === 0) lines.push('BTC price: simulated (BTC_PRICE_SOURCES=none)');
  return lines;
}

// `FOO=` (as copied from .env.example) means "not set": the default applies,
// rather than an empty string failing validation or overriding the default.
function withoutEmptyValues(env: Record<string, string | undefined>): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value.trim() !== '') set[key] = value;
  return set;
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

function splitList(value: string | undefined): string[] {
  return (value ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}

// Kept on disk so tokens and invoices made before a restart still verify after it.
function localKey(dataDir: string, name: string): string {
  const file = join(dataDir, name);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(32).toString('hex');
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  return secret;
}
