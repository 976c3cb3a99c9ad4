// GET /api/health: which Lightning provider, key-value store and database the
// service uses and whether each answers right now, plus the production
// settings that are missing. Names and kinds only: no secret, no credentials.
import { ConfigError, describeProblem, type Config } from '../config.js';
import { DatabaseUnavailable, describeDatabase } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import { ProviderUnavailable } from 'l402-paywall/lightning';
import { ProviderConfigError } from '../lightning/providers/index.js';
import type { ServiceContext } from './context.js';
import type { Deployment } from './deployment.js';
import type { EventSinkStats } from 'l402-paywall/events';

export interface CheckResult {
  ok: boolean;
  latencyMs?: number;
  error?: string;
}

export interface HealthReport {
  ok: boolean;
  provider: { name: string; network?: string } & CheckResult;
  store: { kind: string } & CheckResult;
  database: { kind: string; configured: boolean } & CheckResult;
  /**
   * Audit events (EVENTS_WEBHOOK_URL): whether they are sent, to which host,
   * and this instance's delivery counts. Not part of `ok`: a receiver that is
   * down does not stop the paywall.
   */
  events: { configured: false } | ({ configured: true; host: string } & Partial<EventSinkStats>);
  /** What to fix: `set <setting>` for each missing one (as a 503 NOT_CONFIGURED's `error` says it), or why the configuration does not load. */
  problems: string[];
  /** The settings production cannot run without: the same list a 503 NOT_CONFIGURED answer carries in `missing`. */
  missing: string[];
  checkedAt: string;
}

export const HEALTH_RETRY_AFTER_SECONDS = 30;
// A database opened for the first time also runs migrations; give it at least this long.
const MIN_DATABASE_TIMEOUT_MS = 10_000;

export async function checkHealth(deployment: Deployment): Promise<HealthReport> {
  const checkedAt = new Date().toISOString();
  const notChecked = { ok: false, error: 'not checked: the service is not configured' };
  let config: Config;
  try {
    config = deployment.config();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return {
      ok: false,
      provider: { name: 'unknown', ...notChecked },
      store: { kind: 'unknown', ...notChecked },
      database: { kind: 'unknown', configured: false, ...notChecked },
      events: { configured: false },
      problems: [error.message],
      missing: [],
      checkedAt,
    };
  }
  const names = {
    provider: { name: config.lightning.provider, network: config.lightning.network },
    store: { kind: config.store.upstash ? 'upstash' : 'memory' },
    database: { kind: config.database ? describeDatabase(config.database) : 'none', configured: Boolean(config.database) },
    events: config.events ? { configured: true as const, host: new URL(config.events.webhookUrl).host } : { configured: false as const },
  };
  let ctx: ServiceContext;
  try {
    ctx = deployment.context();
  } catch (error) {
    if (!(error instanceof HttpError)) throw error;
    // In words, with how to set each: the landing page of a fresh deployment shows these.
    const problems = config.problems.length > 0 ? config.problems.map((p) => `missing ${describeProblem(p)}`) : [error.message];
    return {
      ok: false,
      provider: { ...names.provider, ...notChecked },
      store: { ...names.store, ...notChecked },
      database: { ...names.database, ...notChecked },
      events: names.events,
      problems,
      missing: config.problems,
      checkedAt,
    };
  }

  const timeoutMs = config.lightning.timeoutMs;
  const [provider, store, database] = await Promise.all([
    timed(() => ctx.provider.balance(), timeoutMs),
    timed(() => ctx.store.get('health:probe'), timeoutMs),
    config.database
      ? timed(async () => (await ctx.database()).query('SELECT 1'), Math.max(timeoutMs, MIN_DATABASE_TIMEOUT_MS))
      : Promise.resolve<CheckResult>({ ok: true }), // no database is a supported setup: the paywall works without one
  ]);
  return {
    ok: provider.ok && store.ok && database.ok,
    provider: { ...names.provider, ...provider },
    store: { ...names.store, ...store },
    database: { ...names.database, ...database },
    events: ctx.events?.describe() ?? names.events,
    problems: [],
    missing: [],
    checkedAt,
  };
}

async function timed(check: () => Promise<unknown>, timeoutMs: number): Promise<CheckResult> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new ProviderUnavailable(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { ok: true, latencyMs: Math.round(performance.now() - started) };
  } catch (error) {
    return { ok: false, latencyMs: Math.round(performance.now() - started), error: describeFailure(error) };
  } finally {
    clearTimeout(timer);
  }
}

// Our own errors are written to be shown; anything else may carry details (hosts, users), so it is named only.
function describeFailure(error: unknown): string {
  if (error instanceof ProviderUnavailable || error instanceof ProviderConfigError || error instanceof HttpError || error instanceof DatabaseUnavailable) {
    return withoutCredentials(error.message);
  }
  return error instanceof Error ? `${error.name}` : 'failed';
}

function withoutCredentials(text: string): string {
  return text.replace(/\/\/[^/@\s]+@/g, '//');
}
