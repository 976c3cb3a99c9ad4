/// <reference types="node" />
// What `l402-paywall proxy` sells with, read from the environment by the same
// names as the hosted service and the paying command line: the Lightning
// backend (LIGHTNING_PROVIDER and its settings, LIGHTNING_NETWORK,
// LIGHTNING_TIMEOUT_MS), the signing secret (L402_SECRET, L402_SECRET_PREVIOUS),
// and where uses and sessions are kept: Redis (REDIS_URL, with ioredis or redis
// installed), Upstash (UPSTASH_REDIS_REST_URL and _TOKEN, or Vercel's
// KV_REST_API_URL and _TOKEN), else this process's memory. `--dev` embeds the
// dev node instead of a backend, and makes a secret for the run when none is set.
import { randomBytes } from 'node:crypto';
import type { Network } from '../lightning/bolt11.js';
import type { LightningProvider } from '../lightning/provider.js';
import { createBlinkProvider } from '../lightning/providers/blink.js';
import { createClnProvider } from '../lightning/providers/cln.js';
import { productionNodeEnv } from '../lightning/providers/dev-environment.js';
import { createDevNode, memoryDevNodeStore, type DevNode } from '../lightning/providers/dev.js';
import { createLnbitsProvider } from '../lightning/providers/lnbits.js';
import { createLndProvider } from '../lightning/providers/lnd.js';
import { createPhoenixdProvider } from '../lightning/providers/phoenixd.js';
import type { ReplayStore } from '../core/replay.js';
import type { SessionLedger } from '../schemes/session/ledger.js';
import { scriptedSessionLedger, type ScriptRunner } from '../schemes/session/ledger-scripts.js';
import { DEFAULT_PREFIX, scriptedReplayStore } from '../stores/replay-scripts.js';
import { UsageError } from './settings.js';

type Env = Record<string, string | undefined>;

export interface ProxyEnvironment {
  provider: LightningProvider;
  devNode?: DevNode;
  secret: string[];
  replayStore?: ReplayStore;
  sessionLedger?: SessionLedger;
  /** For the start-up lines (never a secret). */
  described: string[];
  /** Closes what was opened (a Redis connection). */
  close(): Promise<void>;
}

const PROVIDERS = ['lnbits', 'phoenixd', 'lnd', 'cln', 'nwc', 'blink'] as const;
const NETWORKS = ['bitcoin', 'testnet', 'signet', 'regtest'] as const;

/** The backend, secret and stores from `env`; a UsageError (exit 2) names what is missing or wrong. */
export async function proxyEnvironment(env: Env, dev: boolean): Promise<ProxyEnvironment> {
  const set = (name: string) => (env[name]?.trim() ? env[name]!.trim() : undefined);
  const described: string[] = [];
  let provider: LightningProvider;
  let devNode: DevNode | undefined;
  if (dev) {
    const production = productionNodeEnv();
    if (production !== undefined)
      throw new UsageError(
        `--dev embeds the dev node (fake money), which never runs in production, and NODE_ENV is "${production}": set LIGHTNING_PROVIDER instead`,
      );
    devNode = createDevNode({ store: memoryDevNodeStore() });
    provider = devNode;
    described.push('Lightning: the embedded dev node, fake money (POST /api/dev/pay settles its invoices)');
  } else {
    provider = await backendFromEnvironment(set);
    described.push(`Lightning: ${provider.name} (${set('LIGHTNING_NETWORK') ?? 'bitcoin'})`);
  }
  const secret = secretFromEnvironment(set, dev, described);
  const stores = await storesFromEnvironment(set, described);
  return { provider, ...(devNode && { devNode }), secret, ...stores, described };
}

function secretFromEnvironment(set: (name: string) => string | undefined, dev: boolean, described: string[]): string[] {
  const secret = set('L402_SECRET');
  const previous = (set('L402_SECRET_PREVIOUS') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!secret) {
    if (!dev) throw new UsageError('Set L402_SECRET (at least 32 characters: openssl rand -hex 32), or pass --dev to try the proxy with the dev node');
    described.push('L402_SECRET: generated for this run (tokens die with it)');
    return [randomBytes(32).toString('hex')];
  }
  for (const s of [secret, ...previous])
    if (s.length < 32) throw new UsageError('L402_SECRET and L402_SECRET_PREVIOUS must be at least 32 characters (openssl rand -hex 32)');
  return [secret, ...previous];
}

async function backendFromEnvironment(set: (name: string) => string | undefined): Promise<LightningProvider> {
  const name = set('LIGHTNING_PROVIDER');
  if (!name || name === 'dev')
    throw new UsageError(
      `Set LIGHTNING_PROVIDER (${PROVIDERS.join(', ')}) and its settings (docs/lightning-backends.md), or pass --dev to try the proxy with the dev node`,
    );
  if (!(PROVIDERS as readonly string[]).includes(name)) throw new UsageError(`LIGHTNING_PROVIDER must be one of ${PROVIDERS.join(', ')}, got "${name}"`);
  const networkName = set('LIGHTNING_NETWORK') ?? 'bitcoin';
  if (!(NETWORKS as readonly string[]).includes(networkName))
    throw new UsageError(`LIGHTNING_NETWORK must be one of ${NETWORKS.join(', ')}, got "${networkName}"`);
  const network = networkName as Network;
  const timeoutText = set('LIGHTNING_TIMEOUT_MS') ?? '10000';
  if (!/^\d{3,6}$/.test(timeoutText) || Number(timeoutText) < 100 || Number(timeoutText) > 120_000)
    throw new UsageError(`LIGHTNING_TIMEOUT_MS must be a whole number of milliseconds from 100 to 120000, got "${timeoutText}"`);
  const timeoutMs = Number(timeoutText);
  const need = (...names: string[]): string[] => {
    const missing = names.filter((setting) => !set(setting));
    if (missing.length > 0) throw new UsageError(`LIGHTNING_PROVIDER=${name} needs ${missing.join(', ')}`);
    return names.map((setting) => set(setting)!);
  };
  try {
    switch (name) {
      case 'lnbits': {
        const [url, apiKey] = need('LNBITS_URL', 'LNBITS_API_KEY');
        const adminKey = set('LNBITS_ADMIN_KEY');
        return createLnbitsProvider({ url: url!, apiKey: apiKey!, ...(adminKey && { adminKey }), network, timeoutMs });
      }
      case 'phoenixd': {
        const [url, password] = need('PHOENIXD_URL', 'PHOENIXD_PASSWORD');
        return createPhoenixdProvider({ url: url!, password: password!, network, timeoutMs });
      }
      case 'lnd': {
        const [url, macaroon] = need('LND_REST_URL', 'LND_MACAROON');
        const tlsCert = set('LND_TLS_CERT');
        const fetch = tlsCert ? (await import('../http/node-trust.js')).fetchTrustingCa(tlsCert) : undefined;
        return createLndProvider({ url: url!, macaroon: macaroon!, network, timeoutMs, ...(fetch && { fetch }) });
      }
      case 'cln': {
        const [url, rune] = need('CLN_REST_URL', 'CLN_RUNE');
        return createClnProvider({ url: url!, rune: rune!, network, timeoutMs });
      }
      case 'nwc': {
        const [url] = need('NWC_URL');
        let nwc: typeof import('../lightning/providers/nwc.js');
        try {
          nwc = await import('../lightning/providers/nwc.js');
        } catch {
          throw new UsageError('LIGHTNING_PROVIDER=nwc needs @getalby/sdk: npm install @getalby/sdk (and ws on Node 20)');
        }
        return nwc.createNwcProvider({ url: url!, network, timeoutMs });
      }
      default: {
        const [apiKey] = need('BLINK_API_KEY');
        const walletId = set('BLINK_WALLET_ID');
        return createBlinkProvider({
          apiKey: apiKey!,
          apiUrl: set('BLINK_API_URL') ?? 'https://api.blink.sv/graphql',
          network,
          timeoutMs,
          ...(walletId && { walletId }),
        });
      }
    }
  } catch (error) {
    if (error instanceof UsageError) throw error;
    // A provider refusing its options (a URL it cannot use): said as a setting to fix, not a crash.
    throw new UsageError(`LIGHTNING_PROVIDER=${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

interface Stores {
  replayStore?: ReplayStore;
  sessionLedger?: SessionLedger;
  close(): Promise<void>;
}

/** Uses and sessions on Redis or Upstash when the environment names one, else in memory (said so). */
async function storesFromEnvironment(set: (name: string) => string | undefined, described: string[]): Promise<Stores> {
  const redisUrl = set('REDIS_URL');
  const upstashUrl = set('UPSTASH_REDIS_REST_URL') ?? set('KV_REST_API_URL');
  const upstashToken = set('UPSTASH_REDIS_REST_TOKEN') ?? set('KV_REST_API_TOKEN');
  let run: ScriptRunner;
  let close = async () => {};
  if (redisUrl) {
    ({ run, close } = await redisRunner(redisUrl));
    described.push(`uses and sessions: Redis at ${safeHost(redisUrl)}`);
  } else if (upstashUrl && upstashToken) {
    let upstash: typeof import('@upstash/redis');
    try {
      upstash = await import('@upstash/redis');
    } catch {
      throw new UsageError('UPSTASH_REDIS_REST_URL is set, but the Upstash client is not installed: npm install @upstash/redis');
    }
    const redis = new upstash.Redis({ url: upstashUrl, token: upstashToken });
    run = (script, keys, args) => redis.eval(script, keys, args);
    described.push(`uses and sessions: Upstash at ${safeHost(upstashUrl)}`);
  } else {
    described.push('uses and sessions: in memory, this process only (set REDIS_URL or UPSTASH_REDIS_REST_URL/TOKEN to share them)');
    return { close };
  }
  return {
    replayStore: scriptedReplayStore((script, key, args) => run(script, [key], args), DEFAULT_PREFIX),
    sessionLedger: scriptedSessionLedger(run),
    close,
  };
}

/** A script runner on ioredis or node-redis, whichever is installed. */
async function redisRunner(url: string): Promise<{ run: ScriptRunner; close(): Promise<void> }> {
  try {
    const { Redis } = (await import('ioredis' as string)) as { Redis: new (url: string, options: object) => IoRedis };
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 2 });
    await client.connect();
    return { run: (script, keys, args) => client.eval(script, keys.length, ...keys, ...args), close: async () => void (await client.quit()) };
  } catch (error) {
    if (!isMissingModule(error)) throw new UsageError(`REDIS_URL: cannot connect: ${(error as Error).message}`);
  }
  try {
    const { createClient } = (await import('redis' as string)) as { createClient(options: { url: string }): NodeRedis };
    const client = await createClient({ url }).connect();
    return { run: (script, keys, args) => client.eval(script, { keys, arguments: args }), close: async () => void (await client.quit()) };
  } catch (error) {
    if (isMissingModule(error)) throw new UsageError('REDIS_URL is set, but no Redis client is installed: npm install ioredis (or redis)');
    throw new UsageError(`REDIS_URL: cannot connect: ${(error as Error).message}`);
  }
}

interface IoRedis {
  connect(): Promise<void>;
  eval(script: string, numKeys: number, ...keysAndArgs: string[]): Promise<unknown>;
  quit(): Promise<unknown>;
}

interface NodeRedis {
  connect(): Promise<NodeRedis>;
  eval(script: string, options: { keys: string[]; arguments: string[] }): Promise<unknown>;
  quit(): Promise<unknown>;
}

function isMissingModule(error: unknown): boolean {
  return (error as { code?: string })?.code === 'ERR_MODULE_NOT_FOUND' || (error as { code?: string })?.code === 'MODULE_NOT_FOUND';
}

/** The host of a URL, without its credentials. */
function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return '(unreadable URL)';
  }
}
