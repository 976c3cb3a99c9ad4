// The hosted service's wiring, built from a config object: store, rate
// limiters, keyring, replay marks, Lightning provider, database, audit events.
// Nothing here reads the environment (lib/config.ts does) or keeps a global:
// which context the api/ files run with is lib/service/deployment.ts's business.
import { join } from 'node:path';
import { missingSettings, type Config } from '../config.js';
import { Keyring } from 'l402-paywall';
import { createDevNode, type DevNode, type InvoiceSigner } from 'l402-paywall/backends';
import { createProvider, ProviderConfigError } from '../lightning/providers/index.js';
import { libsecp256k1NodeKey, libsecp256k1Signer } from '../lightning/invoice-signer.js';
import { memorySessionLedger, scriptedSessionLedger, type LightningProvider, type SessionLedger } from 'l402-paywall/lightning';
import { createBackend } from '../store/index.js';
import { createJournaledStore } from '../store/journal.js';
import { kvReplayStore, type KvReplayStore } from '../store/replay.js';
import type { KeyValueStore, RateLimiter } from '../store/types.js';
import { HttpError, notConfigured } from '../http/errors.js';
import { openMigratedDatabase, type Database } from '../db/index.js';
import { createServiceEvents, type ServiceEvents } from './events.js';

export interface ServiceContext {
  config: Config;
  store: KeyValueStore;
  keyring: Keyring;
  replay: KvReplayStore;
  /** Prepaid sessions (the demo's): in the shared store, each step one Lua script; in memory for one local process. */
  sessions: SessionLedger;
  provider: LightningProvider;
  /** Present only while the embedded dev node is the provider outside production. */
  devNode?: DevNode;
  invoiceLimiter: RateLimiter;
  /** POST /api/register, per client IP. */
  registerLimiter: RateLimiter;
  /** The database, opened on first use; throws HttpError 503 when none is configured. */
  database(): Promise<Database>;
  /** Audit events of the paid routes; absent unless EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET are set. */
  events?: ServiceEvents;
  /**
   * The Payment challenges' realm: the host name of the public origin (PUBLIC_URL,
   * else Vercel's domain, else where the local server listens), without the port,
   * as mppx's validator expects it; never a request's Host header. Undefined
   * (production without a public origin): the library's default, the host name
   * of each request's URL.
   */
  realm?: string;
  /**
   * `part` of this context (the payment log, the price feed, the demo's handlers, ...): built from the
   * context on its first use and kept with it, once per context object. A copy made with `{ ...ctx, ... }`
   * (as fault injection does) starts with none built, so its parts see what it replaced.
   */
  part<T>(part: ServicePart<T>): T;
}

/** A part of the service built from its context on first use: declared once, beside the code that uses it (ServiceContext.part). */
export interface ServicePart<T> {
  readonly name: string;
  build(ctx: ServiceContext): T;
}

export function servicePart<T>(name: string, build: (ctx: ServiceContext) => T): ServicePart<T> {
  return { name, build };
}

// Where a context keeps its built parts: a property of its own that spreading does not copy (not enumerable).
const BUILT_PARTS = Symbol('built service parts');
type WithBuiltParts = ServiceContext & { [BUILT_PARTS]?: Map<ServicePart<unknown>, unknown> };

/** ServiceContext.part, for whichever context object it is called on. */
function partOf<T>(this: ServiceContext, part: ServicePart<T>): T {
  const ctx = this as WithBuiltParts;
  let built = Object.hasOwn(ctx, BUILT_PARTS) ? ctx[BUILT_PARTS] : undefined;
  if (!built) {
    built = new Map();
    Object.defineProperty(ctx, BUILT_PARTS, { value: built, enumerable: false });
  }
  if (!built.has(part)) built.set(part, part.build(ctx));
  return built.get(part) as T;
}

/**
 * Everything the service needs, from `config` and the service's public origin
 * as its deployment knows it (publicBaseUrl in deployment.ts: PUBLIC_URL, or
 * where the local server listens), never a request's. Throws HttpError 503
 * (NOT_CONFIGURED, PROVIDER_MISCONFIGURED) when production settings are missing
 * or the Lightning backend's settings are unusable, so an api/ file that asks for
 * it answers that. Fault injection in tests builds one and replaces parts of it.
 */
export function createServiceContext(config: Config, { publicUrl }: { publicUrl?: string } = {}): ServiceContext {
  // Fail closed in production (docs/architecture.md "Where it runs"): name what is missing.
  if (config.problems.length > 0) {
    const missing = missingSettings(config);
    throw notConfigured(`Service is not configured: set ${missing.join('; ')}`, missing, 60);
  }
  const backend = createBackend(config.store);
  // Without a shared store the dev node keeps its ledger (invoices, paid marks, balances) in a file under
  // DATA_DIR, next to its key, so its invoices can still be paid and looked up after a restart. It still
  // writes to the service's store, so other dev nodes on it (a local owner's) form one fake network with it.
  const devNode =
    config.lightning.provider === 'dev' && !config.production
      ? createDevNode({
          store: config.store.upstash ? backend.store : createJournaledStore(join(config.dataDir, 'dev-node-ledger.jsonl'), backend.store),
          privateKey: config.lightning.devNodePrivateKey,
          ...devNodeKeys(config.lightning.devNodePrivateKey),
        })
      : undefined;
  if (config.lightning.provider === 'dev' && !devNode)
    throw new HttpError(503, 'NOT_CONFIGURED', 'No Lightning provider is configured; set LIGHTNING_PROVIDER');
  const provider = devNode ?? configuredProvider(config, backend.store);
  let database: Promise<Database> | undefined;
  return {
    config,
    database() {
      if (!config.database) return Promise.reject(notConfigured('No database is configured; set DATABASE_URL', ['DATABASE_URL'], 60));
      database ??= openMigratedDatabase(config.database).catch((error) => {
        database = undefined; // try again on the next request
        throw error;
      });
      return database;
    },
    store: backend.store,
    keyring: new Keyring(config.l402.secrets),
    // In memory the marks would die with the process while the secret lives on: journal them under
    // DATA_DIR, so a used token stays used after a restart until it expires (its mark's expiry).
    replay: kvReplayStore(
      config.store.upstash || config.production ? backend.store : createJournaledStore(join(config.dataDir, 'replay-marks.jsonl'), backend.store),
    ),
    // In memory, open sessions die with the process (local development only: production needs the shared store).
    sessions: backend.runScript ? scriptedSessionLedger(backend.runScript) : memorySessionLedger(),
    provider,
    devNode,
    invoiceLimiter: backend.rateLimiter({ limit: config.invoices.ratePerMinute, windowMs: 60_000, prefix: 'ratelimit:invoice' }),
    registerLimiter: backend.rateLimiter({ limit: config.directory.registerRatePerMinute, windowMs: 60_000, prefix: 'ratelimit:register' }),
    events: createServiceEvents(config, publicUrl),
    realm: publicUrl === undefined ? undefined : new URL(publicUrl).hostname,
    part: partOf,
  };
}

/** The dev node signs with libsecp256k1, which also derives its public key (in pure JS that first builds a table: tens of ms of a cold start). */
function devNodeKeys(privateKey: string): { signInvoice: InvoiceSigner; nodeKey?: string } {
  const nodeKey = libsecp256k1NodeKey(privateKey);
  return { signInvoice: libsecp256k1Signer(), ...(nodeKey ? { nodeKey } : {}) };
}

function configuredProvider(config: Config, store: KeyValueStore): LightningProvider {
  try {
    return createProvider(config.lightning, store);
  } catch (error) {
    if (!(error instanceof ProviderConfigError)) throw error;
    throw new HttpError(503, 'PROVIDER_MISCONFIGURED', error.message, { setting: error.setting }, { 'Retry-After': '60' });
  }
}
