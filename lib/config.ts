// The only reader of process.env: environment -> typed, validated config.
//
// Each setting is declared once, in SETTINGS below: its environment variable,
// what it means, how it is read (validation, default, conversion) and, by where
// it stands in the tree, its place in the typed config. The Config type is
// derived from that tree (ValuesOf), with the few sections that are a rule over
// several settings (which Upstash names, which secret, which Lightning backend,
// which database) computed by the functions after it.
//
// Local runs get embedded defaults (memory store, dev Lightning node, a secret
// and a node key of their own); production refuses to guess (docs/architecture.md
// "Where it runs"). Reading the environment writes nothing: a local run's keys
// are read from DATA_DIR when an earlier `npm start` kept them there, else made
// for this load only (Config.unsavedKeys), and `npm start` keeps them
// (scripts/local-keys.ts) so that tokens and invoices survive a restart.
import { existsSync, readFileSync } from 'node:fs';
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
const optionalText = () => z.string().trim().min(1).optional();
const optionalUrl = () => z.string().url().optional();
/** A comma-separated list: its non-empty items, trimmed. */
const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** One environment variable: its name, what it means, and how its text is read (validation, default, conversion). */
interface Setting<S extends z.ZodType = z.ZodType> {
  readonly env: string;
  readonly description: string;
  readonly schema: S;
}

function setting<S extends z.ZodType>(env: string, description: string, schema: S): Setting<S> {
  return { env, description, schema };
}

/** Settings grouped as the config is: a setting's place in the tree is its place in Config. */
interface Declarations {
  readonly [key: string]: Setting | Declarations;
}

type Simplify<T> = { [K in keyof T]: T[K] } & {};
type ValueOf<D> = D extends Setting<infer S> ? z.output<S> : D extends Declarations ? ValuesOf<D> : never;
/** The values read from a declaration tree, each where its setting is declared; a setting that may be unset is an optional key. */
export type ValuesOf<D extends Declarations> = Simplify<
  { -readonly [K in keyof D as undefined extends ValueOf<D[K]> ? never : K]: ValueOf<D[K]> } & {
    -readonly [K in keyof D as undefined extends ValueOf<D[K]> ? K : never]?: Exclude<ValueOf<D[K]>, undefined>;
  }
>;

const SETTINGS = {
  /** Which mode runs (runMode); not part of Config, which says `production` and why. */
  mode: {
    nodeEnv: setting('NODE_ENV', 'Unset, development or test: a local run; any other value: production (runMode).', z.string().optional()),
    vercel: setting('VERCEL', 'Set by Vercel: production, whatever NODE_ENV says.', z.string().optional()),
  },
  dataDir: setting(
    'DATA_DIR',
    'Where a local run keeps its files (generated keys, PGlite, the dev node ledger); an absolute path in Config.',
    z
      .string()
      .default('.data')
      .transform((dir) => resolve(dir)),
  ),
  server: {
    port: setting('PORT', 'The port `npm start` listens on.', wholeNumber({ max: 65535 }).default(3000)),
    host: setting('HOST', 'The address `npm start` listens on.', z.string().default('127.0.0.1')),
  },
  /** The service's public origin (rule: publicOrigin). */
  publicUrl: {
    url: setting(
      'PUBLIC_URL',
      "The service's public base URL, e.g. https://l402.example.com: where backends send webhooks. Never taken from a request's Host.",
      z
        .string()
        .url()
        .refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL')
        .optional(),
    ),
    vercelDomain: setting('VERCEL_PROJECT_PRODUCTION_URL', "Set by Vercel: the production domain (no scheme); PUBLIC_URL's fallback there.", optionalText()),
  },
  l402: {
    secret: setting('L402_SECRET', 'Signs and verifies the tokens (at least 32 characters); a local run makes one of its own when unset.', optionalText()),
    previous: setting(
      'L402_SECRET_PREVIOUS',
      'Comma-separated earlier secrets: tokens they signed still verify (rotation).',
      z.string().default('').transform(list),
    ),
    tokenTtlSeconds: setting('L402_TOKEN_TTL_SECONDS', 'Life of a token.', wholeNumber({ max: 30 * 24 * 3600 }).default(3600)),
  },
  lightning: {
    provider: setting(
      'LIGHTNING_PROVIDER',
      'The Lightning backend; unset = the embedded dev node (local runs only).',
      z.enum(['dev', 'lnbits', 'phoenixd', 'lnd', 'cln', 'nwc', 'blink']).default('dev'),
    ),
    devNodePrivateKey: setting(
      'DEV_NODE_PRIVATE_KEY',
      "The embedded dev node's key; a local run makes one of its own when unset.",
      z
        .string()
        .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
        .transform((key) => key.toLowerCase())
        .optional(),
    ),
    network: setting(
      'LIGHTNING_NETWORK',
      "The network our provider's invoices are on; payouts refuse invoices for any other (the dev node: regtest).",
      z.enum(['bitcoin', 'testnet', 'signet', 'regtest']).default('bitcoin'),
    ),
    timeoutMs: setting(
      'LIGHTNING_TIMEOUT_MS',
      'Every call to the Lightning backend gives up after this long (then 503, or "outcome unknown" for payments).',
      wholeNumber({ min: 100, max: 120_000 }).default(10_000),
    ),
    lnbits: {
      url: setting('LNBITS_URL', 'LNbits: the server.', optionalUrl()),
      apiKey: setting('LNBITS_API_KEY', 'LNbits: the invoice key.', optionalText()),
      adminKey: setting('LNBITS_ADMIN_KEY', 'LNbits: the admin key (payouts).', optionalText()),
    },
    phoenixd: {
      url: setting('PHOENIXD_URL', 'phoenixd: the server.', optionalUrl()),
      password: setting('PHOENIXD_PASSWORD', 'phoenixd: its http-password.', optionalText()),
      webhookSecret: setting('PHOENIXD_WEBHOOK_SECRET', 'phoenixd: the secret its webhooks are signed with.', optionalText()),
    },
    lnd: {
      url: setting('LND_REST_URL', 'LND: the REST server.', optionalUrl()),
      macaroon: setting(
        'LND_MACAROON',
        'LND: the macaroon, in hex.',
        z
          .string()
          .trim()
          .regex(/^[0-9a-fA-F]+$/, 'must be the macaroon in hex (xxd -p -c 10000 admin.macaroon)')
          .transform((hex) => hex.toLowerCase())
          .optional(),
      ),
      tlsCert: setting('LND_TLS_CERT', 'LND: its TLS certificate, when it is not signed by a known authority.', optionalText()),
    },
    cln: {
      url: setting('CLN_REST_URL', 'Core Lightning: the REST server.', optionalUrl()),
      rune: setting('CLN_RUNE', 'Core Lightning: the rune.', optionalText()),
    },
    nwc: {
      url: setting(
        'NWC_URL',
        'Nostr Wallet Connect: the connection URI.',
        z.string().trim().startsWith('nostr+walletconnect://', 'must be a nostr+walletconnect:// URI').optional(),
      ),
    },
    blink: {
      apiKey: setting('BLINK_API_KEY', 'Blink: the API key.', optionalText()),
      walletId: setting('BLINK_WALLET_ID', "Blink: the BTC wallet; unset = the account's default.", optionalText()),
      apiUrl: setting('BLINK_API_URL', 'Blink: the GraphQL endpoint.', z.string().url().default('https://api.blink.sv/graphql')),
      webhookSecret: setting('BLINK_WEBHOOK_SECRET', 'Blink: the secret its webhooks are signed with.', optionalText()),
    },
  },
  /** The shared key-value store (rule: storeConfig). */
  store: {
    upstash: {
      url: setting('UPSTASH_REDIS_REST_URL', 'Upstash Redis: the REST URL; unset = in memory (local runs only).', optionalUrl()),
      token: setting('UPSTASH_REDIS_REST_TOKEN', 'Upstash Redis: the REST token.', optionalText()),
    },
    vercelKv: {
      url: setting('KV_REST_API_URL', "The same, by the names Vercel's Upstash integration sets.", optionalUrl()),
      token: setting('KV_REST_API_TOKEN', "The same, by the names Vercel's Upstash integration sets.", optionalText()),
    },
  },
  /** rule: databaseConfig */
  database: {
    url: setting(
      'DATABASE_URL',
      'postgres:// URL (Neon hosts use the Neon driver); "pglite://memory" for an in-memory PGlite; unset = PGlite under DATA_DIR.',
      optionalText(),
    ),
  },
  invoices: {
    ratePerMinute: setting(
      'INVOICE_RATE_LIMIT_PER_MINUTE',
      'Requests that make invoices, per minute per client IP, every route together (lib/service/money/invoices.ts invoiceLimit); a demo 402 is one, with two invoices (the charge and the session deposit).',
      wholeNumber().default(20),
    ),
    maxSats: setting('MAX_INVOICE_SATS', 'The largest invoice POST /api/invoice makes.', wholeNumber().default(1_000_000)),
  },
  demo: {
    priceSats: setting(
      'DEMO_PRICE_SATS',
      'Price of one call of the demo, and of one unit of its prepaid sessions (a call, or a streamed chunk).',
      wholeNumber().default(1),
    ),
    sessionDepositUnits: setting(
      'DEMO_SESSION_DEPOSIT_UNITS',
      "The demo sessions' deposit, in units (calls or streamed chunks).",
      wholeNumber({ max: 10_000 }).default(20),
    ),
    streamIntervalMs: setting(
      'DEMO_STREAM_INTERVAL_MS',
      'The pause between two chunks of GET /api/demo/stream.',
      wholeNumber({ min: 0, max: 10_000 }).default(150),
    ),
    priceSources: setting(
      'BTC_PRICE_SOURCES',
      'Comma-separated price sources tried in order; "none" = offline (simulated price).',
      z
        .string()
        .default('coinbase,kraken,coingecko')
        .transform((text) => (text === 'none' ? [] : list(text))),
    ),
    priceTimeoutMs: setting('BTC_PRICE_TIMEOUT_MS', 'How long each price source is given.', wholeNumber().default(1500)),
  },
  pro: {
    priceSats: setting('PRO_PRICE_SATS', 'Price of 30 days of Pro (GET /api/dev-token).', wholeNumber({ max: 100_000_000 }).default(9000)),
  },
  directory: {
    registerRatePerMinute: setting('REGISTER_RATE_LIMIT_PER_MINUTE', 'POST /api/register calls per minute from one IP.', wholeNumber().default(10)),
  },
  /** GET /api/health, per client IP. */
  health: {
    ratePerMinute: setting(
      'HEALTH_RATE_LIMIT_PER_MINUTE',
      'GET /api/health calls per minute from one IP (an uptime monitor needs a few).',
      wholeNumber().default(60),
    ),
  },
  cron: {
    secret: setting(
      'CRON_SECRET',
      'Vercel sends it as `Authorization: Bearer <CRON_SECRET>` to scheduled functions (api/cron/*); unset = they refuse.',
      optionalText(),
    ),
  },
  /** Usernames the service's own Lightning Addresses answer for (rule: the default depends on the mode). */
  lnurlp: {
    usernames: setting(
      'LNURLP_USERNAMES',
      'Comma-separated usernames answered at /.well-known/lnurlp/; unset = any in development, none in production.',
      z
        .string()
        .regex(/^[a-z0-9\-_.]+(?:\s*,\s*[a-z0-9\-_.]+)*$/, 'must be comma-separated usernames (a-z 0-9 - _ .)')
        .transform(list)
        .optional(),
    ),
  },
  /** Fetches to user-supplied hosts (lib/http/outbound.ts). */
  outbound: {
    timeoutMs: setting(
      'OUTBOUND_TIMEOUT_MS',
      'Requests to hosts we do not control (Lightning Address servers): whole budget per fetch, ms.',
      wholeNumber({ max: 60_000 }).default(5000),
    ),
    maxBytes: setting('OUTBOUND_MAX_BYTES', 'Largest response body read from such hosts, bytes.', wholeNumber({ max: 10 * 1024 * 1024 }).default(64 * 1024)),
  },
  /** Signed audit events of the paid routes (rule: eventsConfig, both or neither). */
  events: {
    webhookUrl: setting(
      'EVENTS_WEBHOOK_URL',
      'Where the paid routes (demo, Pro) post signed audit events (CloudEvents); https, a public host (http to loopback in development).',
      optionalUrl(),
    ),
    webhookSecret: setting(
      'EVENTS_WEBHOOK_SECRET',
      "The Standard Webhooks secret the events are signed with: whsec_ + base64 of 24 to 64 bytes, checked by the signer's own rule.",
      z
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
    ),
  },
  /** The split and payouts to owners (lib/service/money/payouts.ts). */
  payouts: {
    splitSecret: setting(
      'SPLIT_SECRET',
      'Header x-split-secret of POST /api/split (manual recovery); unset = the endpoint answers 503 NOT_CONFIGURED.',
      optionalText(),
    ),
    minMsat: setting(
      'SPLIT_MIN_SATS',
      'Owner shares below this many sats accrue per owner and are paid together once their total reaches it (msat in Config).',
      wholeNumber({ max: 100_000_000 })
        .default(100)
        .transform((sats) => sats * 1000),
    ),
    maxFeePpm: setting(
      'PAYOUT_MAX_FEE_PPM',
      "Routing fee a payout may spend, in parts per million of its amount (paid from the service's 0.3%).",
      wholeNumber({ min: 0, max: 1_000_000 }).default(3000),
    ),
    minFeeMsat: setting(
      'PAYOUT_MIN_FEE_MSAT',
      'Routing fee a payout may always spend (msat), within the fee the service earned on its payments: shares accrue ' +
        'until that fee reaches this. 3000 is the 0.3% of 1,000 sats, so a 1,000-sat payment is paid out at once.',
      wholeNumber({ min: 0, max: 100_000_000 }).default(3000),
    ),
    maxAttempts: setting(
      'PAYOUT_MAX_ATTEMPTS',
      'Attempts after which a payout that definitely did not go through is marked failed (an operator decides).',
      wholeNumber({ max: 1000 }).default(10),
    ),
    retryBaseSeconds: setting(
      'PAYOUT_RETRY_BASE_SECONDS',
      'First retry delay; it doubles per attempt, up to 6 hours.',
      wholeNumber({ max: 86_400 }).default(60),
    ),
  },
  /** LNURL-auth dashboard logins, address links, admins. */
  auth: {
    adminPubkeys: setting(
      'ADMIN_PUBKEYS',
      'Comma-separated 33-byte compressed secp256k1 public keys (hex) whose dashboard logins see everything (lower case in Config).',
      z
        .string()
        .regex(
          /^\s*0[23][0-9a-fA-F]{64}(?:\s*,\s*0[23][0-9a-fA-F]{64})*\s*$/,
          'must be comma-separated 33-byte compressed public keys in hex (66 characters starting 02 or 03)',
        )
        .transform((text) => list(text).map((key) => key.toLowerCase()))
        .default([]),
    ),
    // The variable keeps its first name so that deployments keep their setting.
    loginTtlSeconds: setting(
      'SESSION_TTL_HOURS',
      'Dashboard login lifetime, in hours (seconds in Config); not a prepaid session.',
      wholeNumber({ max: 30 * 24 })
        .default(24)
        .transform((hours) => hours * 3600),
    ),
    challengeTtlSeconds: setting('LNURL_AUTH_TTL_SECONDS', 'Life of an LNURL-auth challenge (k1).', wholeNumber({ max: 3600 }).default(300)),
    ratePerMinute: setting(
      'AUTH_RATE_LIMIT_PER_MINUTE',
      'New LNURL-auth challenges (login or erasure) and wallet callbacks per minute per client IP.',
      wholeNumber().default(30),
    ),
    linkRatePerHour: setting('LINK_RATE_LIMIT_PER_HOUR', 'Address links started (each pays 1 sat) per hour per public key.', wholeNumber().default(5)),
    linkProofsPerDay: setting(
      'LINK_PROOFS_PER_DAY',
      '1-sat link proofs the service pays per UTC day, all keys together: keys are free, so this bounds what link abuse can cost.',
      wholeNumber().default(200),
    ),
    linkProofsPerIpPerDay: setting(
      'LINK_PROOFS_PER_IP_PER_DAY',
      "... of which links started from one client IP (an IPv6 /64) may use this many: one client cannot use up everyone's.",
      wholeNumber().default(10),
    ),
    linkProofsPerAddressPerDay: setting('LINK_PROOFS_PER_ADDRESS_PER_DAY', '... and one Lightning Address may be sent this many.', wholeNumber().default(3)),
    linkCodeTtlSeconds: setting(
      'LINK_CODE_TTL_MINUTES',
      "Life of a link code sent in the 1-sat payment's comment, in minutes (seconds in Config).",
      wholeNumber({ max: 24 * 60 })
        .default(15)
        .transform((minutes) => minutes * 60),
    ),
    linkCodeAttempts: setting('LINK_CODE_ATTEMPTS', 'Wrong entries allowed per link code before it is void.', wholeNumber({ max: 20 }).default(5)),
  },
} as const satisfies Declarations;

type Values = ValuesOf<typeof SETTINGS>;

/** Every setting, in declaration order. */
function settingsOf(declarations: Declarations): Setting[] {
  return Object.values(declarations).flatMap((entry) => (isSetting(entry) ? [entry] : settingsOf(entry)));
}

function isSetting(entry: Setting | Declarations): entry is Setting {
  return entry.schema instanceof z.ZodType;
}

/** The parsed values placed in the tree, each where its setting is declared. */
function place(declarations: Declarations, parsed: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(declarations).map(([key, entry]) => [key, isSetting(entry) ? parsed[entry.env] : place(entry, parsed)]));
}

const ALL_SETTINGS = settingsOf(SETTINGS);
/** The environment, one key per setting; issues are named by the variable (`PORT: must be at least 1`). */
const EnvSchema = z.object(Object.fromEntries(ALL_SETTINGS.map((s) => [s.env, s.schema])));

/** Every environment variable this module reads. */
export const ENV_KEYS: readonly string[] = ALL_SETTINGS.map((s) => s.env);

/** Every setting with what it means, in declaration order (for documentation and checks). */
export const SETTING_DESCRIPTIONS: ReadonlyArray<{ env: string; description: string }> = ALL_SETTINGS.map(({ env, description }) => ({ env, description }));

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** A setting production cannot run without (the paywall answers 503 naming it). */
export interface ConfigProblem {
  /** The setting to set, e.g. UPSTASH_REDIS_REST_URL: what HOW_TO_SET knows a recipe for. */
  setting: string;
  /** What is missing, in words, e.g. `LNBITS_URL, LNBITS_API_KEY (needed by LIGHTNING_PROVIDER=lnbits)`: the text of `missing` in a 503. */
  message: string;
}

/** The files under DATA_DIR a local run keeps its generated keys in. */
export const LOCAL_KEY_FILES = { secret: 'l402-secret', devNode: 'dev-node-key' } as const;

/** A key made for a local run by this load and kept nowhere yet: `npm start` keeps it (scripts/local-keys.ts). */
export interface UnsavedKey {
  /** Where it is to be kept: a file under DATA_DIR. */
  file: string;
  key: string;
}

export type Config = ReturnType<typeof assemble>;
export type LightningConfig = Config['lightning'];
export type LightningProviderName = Values['lightning']['provider'];
type BackendName = Exclude<LightningProviderName, 'dev'>;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const parsed = EnvSchema.safeParse(withoutEmptyValues(env));
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`Invalid environment: ${detail}`);
  }
  return assemble(place(SETTINGS, parsed.data) as Values);
}

/** Config from the values read: the settings where they stand, and the sections that are a rule over several. */
function assemble({ mode, publicUrl, store, l402, lightning, database, lnurlp, events, ...plain }: Values) {
  const { production, reason: modeReason } = runMode(mode);
  const problems: ConfigProblem[] = [];
  const unsavedKeys: UnsavedKey[] = [];
  // In this order, the order the problems are named in.
  const storeSection = storeConfig(store, production, problems);
  const l402Section = l402Config(l402, { production, dataDir: plain.dataDir, problems, unsavedKeys });
  const lightningSection = lightningConfig(lightning, { production, dataDir: plain.dataDir, problems, unsavedKeys });
  const databaseSection = databaseConfig(database.url, production, plain.dataDir);
  const eventsSection = eventsConfig(events, production);
  return {
    ...plain,
    /** Production unless NODE_ENV is unset, development or test and VERCEL is unset (runMode). */
    production,
    /** Which setting decided `production`, in words, for the start-up banner. */
    modeReason,
    /**
     * The service's public origin (PUBLIC_URL, else https://VERCEL_PROJECT_PRODUCTION_URL);
     * unset: `npm start` uses the address it listens on, production sends no webhook URL.
     */
    publicUrl: publicOrigin(publicUrl),
    store: storeSection,
    l402: l402Section,
    lightning: lightningSection,
    /** Unset in production = no database: the paywall still works, database features answer 503. */
    database: databaseSection,
    /** Usernames the service's own Lightning Addresses answer for; null = any (development only). */
    lnurlp: { usernames: lnurlp.usernames ?? (production ? [] : null) },
    /** Signed audit events of the paid routes, posted here; unset = none produced. */
    events: eventsSection,
    /** Settings production cannot run without; the paywall answers 503 naming them. */
    problems,
    /** Keys made for this local run and kept nowhere yet (`npm start` keeps them under DATA_DIR). */
    unsavedKeys,
  };
}

interface RuleContext {
  production: boolean;
  dataDir: string;
  problems: ConfigProblem[];
  unsavedKeys: UnsavedKey[];
}

function publicOrigin({ url, vercelDomain }: Values['publicUrl']): string | undefined {
  const publicUrl = url ?? (vercelDomain ? `https://${vercelDomain.replace(/^https?:\/\//, '')}` : undefined);
  return publicUrl === undefined ? undefined : new URL(publicUrl).origin;
}

function storeConfig({ upstash, vercelKv }: Values['store'], production: boolean, problems: ConfigProblem[]): { upstash?: { url: string; token: string } } {
  const url = upstash.url ?? vercelKv.url;
  const token = upstash.token ?? vercelKv.token;
  if (url && token) return { upstash: { url, token } };
  if (production) {
    const { upstash: names, vercelKv: kv } = SETTINGS.store;
    problems.push({ setting: names.url.env, message: `${names.url.env} and ${names.token.env} (or ${kv.url.env} and ${kv.token.env})` });
  }
  return {};
}

function l402Config(
  { secret, previous, tokenTtlSeconds }: Values['l402'],
  ctx: RuleContext,
): {
  /** Newest first: index 0 signs, all verify. */
  secrets: string[];
  /** L402_SECRET; generated at this start (this load); or generated at an earlier one and read from DATA_DIR. */
  secretSource: 'env' | 'generated' | 'saved';
  tokenTtlSeconds: number;
} {
  let secrets: string[];
  let secretSource: 'env' | 'generated' | 'saved' = 'env';
  if (secret) {
    secrets = [secret, ...previous];
  } else if (ctx.production) {
    ctx.problems.push({ setting: SETTINGS.l402.secret.env, message: SETTINGS.l402.secret.env });
    secrets = [];
  } else {
    const local = localKey(ctx, LOCAL_KEY_FILES.secret);
    secrets = [local.key];
    secretSource = local.saved ? 'saved' : 'generated';
  }
  for (const s of secrets) {
    if (s.length < 32) throw new ConfigError('L402_SECRET and L402_SECRET_PREVIOUS must be at least 32 characters (e.g. `openssl rand -hex 32`)');
  }
  return { secrets, secretSource, tokenTtlSeconds };
}

type LightningValues = Values['lightning'];
/** Each backend's settings it cannot run without. */
const REQUIRED_BACKEND_SETTINGS = {
  lnbits: ['url', 'apiKey'],
  phoenixd: ['url', 'password'],
  lnd: ['url', 'macaroon'],
  cln: ['url', 'rune'],
  nwc: ['url'],
  blink: ['apiKey'],
} as const satisfies { [B in BackendName]: ReadonlyArray<keyof LightningValues[B]> };
type Required_<B extends BackendName> = (typeof REQUIRED_BACKEND_SETTINGS)[B][number];
/** A backend's settings with the ones it needs set. */
type BackendConfig<B extends BackendName> = Simplify<
  Omit<LightningValues[B], Required_<B>> & Required<Pick<LightningValues[B], Extract<Required_<B>, keyof LightningValues[B]>>>
>;

function lightningConfig(
  { provider, devNodePrivateKey, network, timeoutMs, ...backends }: LightningValues,
  ctx: RuleContext,
): Simplify<
  {
    provider: LightningProviderName;
    /** The dev node's key ('' in production, where it never runs). */
    devNodePrivateKey: string;
    /** The network our provider's invoices are on; payouts refuse invoices for any other. */
    network: Network;
    /** Upper bound of every call to the backend, in ms. */
    timeoutMs: number;
  } & {
    /** Only the chosen backend's settings are filled in. */
    [B in BackendName]?: BackendConfig<B>;
  }
> {
  if (provider === 'dev' && ctx.production)
    ctx.problems.push({ setting: SETTINGS.lightning.provider.env, message: 'LIGHTNING_PROVIDER (the embedded dev node never runs in production)' });
  const base = {
    provider,
    devNodePrivateKey: devNodePrivateKey ?? (ctx.production ? '' : localKey(ctx, LOCAL_KEY_FILES.devNode).key),
    network: provider === 'dev' ? 'regtest' : network,
    timeoutMs,
  };
  if (provider === 'dev') return base;
  const settings = backends[provider] as Record<string, unknown>;
  const declared = SETTINGS.lightning[provider] as Declarations;
  const missing = REQUIRED_BACKEND_SETTINGS[provider].filter((key) => settings[key] === undefined).map((key) => (declared[key] as Setting).env);
  if (missing.length === 0) return { ...base, [provider]: settings };
  const what = `${missing.join(', ')} (needed by LIGHTNING_PROVIDER=${provider})`;
  if (!ctx.production) throw new ConfigError(`Set ${what}`);
  ctx.problems.push({ setting: missing[0]!, message: what });
  return base;
}

function eventsConfig(
  { webhookUrl: url, webhookSecret: secret }: Values['events'],
  production: boolean,
): { webhookUrl: string; webhookSecret: string } | undefined {
  if (!url && !secret) return undefined;
  if (!url || !secret) throw new ConfigError('Set both EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET (or neither: no audit events)');
  const protocol = new URL(url).protocol;
  // The outbound policy checks every address at send time; the scheme can be refused now.
  if (protocol !== 'https:' && (production || protocol !== 'http:'))
    throw new ConfigError('EVENTS_WEBHOOK_URL must be an https URL (http only to loopback, in development)');
  return { webhookUrl: url, webhookSecret: secret };
}

function databaseConfig(url: string | undefined, production: boolean, dataDir: string): { url: string } | { pgliteDir: string | null } | undefined {
  if (url === 'pglite://memory') return { pgliteDir: null };
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) throw new ConfigError('DATABASE_URL must be a postgres:// URL (or pglite://memory)');
    return { url };
  }
  // Vercel's file system is read-only and per instance: no embedded database there.
  return production ? undefined : { pgliteDir: join(dataDir, 'pglite') };
}

/**
 * A local run's key: the one an earlier `npm start` kept under DATA_DIR, else
 * a new one for this load, listed in `unsavedKeys` (reading the environment
 * writes nothing; npm start keeps it, scripts/local-keys.ts).
 */
function localKey(ctx: RuleContext, name: string): { key: string; saved: boolean } {
  const file = join(ctx.dataDir, name);
  if (existsSync(file)) return { key: readFileSync(file, 'utf8').trim(), saved: true };
  const key = randomBytes(32).toString('hex');
  ctx.unsavedKeys.push({ file, key });
  return { key, saved: false };
}

/** One line per embedded default in use, for the start-up banner. */
export function describeEmbeddedDefaults(config: Config): string[] {
  const lines: string[] = [];
  // Production never falls back to these: what is missing there is named by describeMissingSettings.
  if (!config.store.upstash && !config.production) lines.push('key-value store: in memory (set UPSTASH_REDIS_REST_URL/TOKEN to share it)');
  if (config.lightning.provider === 'dev' && !config.production)
    lines.push('Lightning: embedded dev node, fake money (POST /api/dev/pay settles its invoices)');
  const secretFile = join(config.dataDir, LOCAL_KEY_FILES.secret);
  const secretKept = !config.unsavedKeys.some((unsaved) => unsaved.file === secretFile);
  if (config.l402.secretSource === 'generated')
    lines.push(secretKept ? `L402_SECRET: generated now, kept in ${secretFile} for the next starts` : 'L402_SECRET: generated now, kept only in memory');
  if (config.l402.secretSource === 'saved') lines.push(`L402_SECRET: the one generated at an earlier start, read from ${secretFile}`);
  if (config.demo.priceSources.length === 0) lines.push('BTC price: simulated (BTC_PRICE_SOURCES=none)');
  return lines;
}

/** How to set each setting production refuses to run without, keyed by ConfigProblem.setting. */
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

/** One missing production setting and, where there is one recipe, how to set it. */
export function describeProblem(problem: ConfigProblem): string {
  const how = HOW_TO_SET[problem.setting];
  return how ? `${problem.message}: ${how}` : problem.message;
}

/** What is missing, one entry per problem: the `missing` list of a 503 NOT_CONFIGURED. */
export function missingSettings(config: Config): string[] {
  return config.problems.map((problem) => problem.message);
}

// `FOO=` (as copied from .env.example) means "not set": the default applies,
// rather than an empty string failing validation or overriding the default.
function withoutEmptyValues(env: Record<string, string | undefined>): Record<string, string> {
  const set: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (value !== undefined && value.trim() !== '') set[key] = value;
  return set;
}

/** NODE_ENV values that run locally. */
const LOCAL_NODE_ENVS = ['development', 'test'];

/**
 * Production unless we are told otherwise, exactly: a misspelt or unusual
 * NODE_ENV (`Production`, `prod`, `staging`, `production `) must not run the dev
 * node, the dev wallet's admin login and a generated secret (docs/architecture.md "Where it runs").
 */
function runMode({ nodeEnv, vercel }: Values['mode']): { production: boolean; reason: string } {
  const rule = 'only an unset NODE_ENV, development or test runs locally';
  if (vercel) return { production: true, reason: 'VERCEL is set' };
  if (nodeEnv === undefined) return { production: false, reason: `NODE_ENV is unset; ${rule}` };
  if (LOCAL_NODE_ENVS.includes(nodeEnv)) return { production: false, reason: `NODE_ENV=${nodeEnv}; ${rule}` };
  return { production: true, reason: `NODE_ENV=${JSON.stringify(nodeEnv)}; ${rule}` };
}
