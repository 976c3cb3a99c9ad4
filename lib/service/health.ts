// GET /api/health. Anyone may ask whether the service is up: the answer says
// up or down per dependency (Lightning backend, key-value store, database) and,
// on a deployment that lacks settings, which ones (what every 503
// NOT_CONFIGURED says anyway). Which backend, store and database, how fast
// they answered and why one did not are for an admin's dashboard login (Authorization:
// Bearer of an ADMIN_PUBKEYS key) and the logs. The probes are kept briefly, so
// a flood of requests costs no more backend calls, and requests are limited per
// client IP (docs/lightning-backends.md "GET /api/health").
import { ConfigError, describeProblem, missingSettings, type Config } from '../config.js';
import { DatabaseUnavailable, describeDatabase } from '../db/index.js';
import { HttpError } from '../http/errors.js';
import { ProviderUnavailable } from 'l402-paywall/lightning';
import { ProviderConfigError } from '../lightning/providers/index.js';
import { StoreUnavailable } from '../store/types.js';
import { enforceWindowLimit, requireLogin } from './accounts/auth.js';
import { servicePart, type ServiceContext } from './context.js';
import type { Deployment } from './deployment.js';
import type { EventSinkStats } from 'l402-paywall/events';

export interface CheckResult {
  ok: boolean;
  latencyMs?: number;
  error?: string;
}

/** Everything health knows: for an admin's login, the start-up banner and the logs. */
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
  /** When the dependencies were asked (the probes are kept for HEALTH_PROBE_TTL_MS). */
  checkedAt: string;
}

/** What anyone may see: up or down per dependency, and what a deployment that is not configured lacks. */
export interface PublicHealth {
  ok: boolean;
  provider: { ok: boolean };
  store: { ok: boolean };
  database: { ok: boolean };
  problems: string[];
  missing: string[];
  checkedAt: string;
}

export const HEALTH_RETRY_AFTER_SECONDS = 30;
/** How long one round of probes answers every request of an instance: an uptime monitor needs no fresher answer. */
export const HEALTH_PROBE_TTL_MS = 10_000;
// A database opened for the first time also runs migrations; give it at least this long.
const MIN_DATABASE_TIMEOUT_MS = 10_000;

/**
 * GET /api/health for `request`: the details for an admin's login
 * (Authorization: Bearer), else the public view. 429 past
 * HEALTH_RATE_LIMIT_PER_MINUTE from one client IP; 401 for a login that is
 * not valid, 403 ADMIN_REQUIRED for one of a key that is not an admin.
 */
export async function answerHealth(deployment: Deployment, request: Request, clientIp: string): Promise<HealthReport | PublicHealth> {
  const ctx = contextIfConfigured(deployment);
  if (!ctx) return publicView(await checkHealth(deployment)); // no store to count in, no login to check, nothing probed
  await limitHealthChecks(ctx, clientIp);
  if (!request.headers.has('authorization')) return publicView(await checkHealth(deployment));
  const login = await requireLogin(ctx, request);
  if (!login.admin) {
    throw new HttpError(
      403,
      'ADMIN_REQUIRED',
      'Health details are for admin keys (ADMIN_PUBKEYS); without Authorization this answers up or down per dependency',
    );
  }
  return checkHealth(deployment);
}

/** Up or down per dependency: no names, kinds, hosts, latencies or error texts. */
function publicView(report: HealthReport): PublicHealth {
  return {
    ok: report.ok,
    provider: { ok: report.provider.ok },
    store: { ok: report.store.ok },
    database: { ok: report.database.ok },
    problems: report.problems,
    missing: report.missing,
    checkedAt: report.checkedAt,
  };
}

function contextIfConfigured(deployment: Deployment): ServiceContext | undefined {
  try {
    return deployment.context();
  } catch (error) {
    if (error instanceof ConfigError || error instanceof HttpError) return undefined;
    throw error;
  }
}

async function limitHealthChecks(ctx: ServiceContext, clientIp: string): Promise<void> {
  const perMinute = ctx.config.health.ratePerMinute;
  try {
    await enforceWindowLimit(ctx, 'health', clientIp, perMinute, 60_000, `Too many health checks from this address: at most ${perMinute} per minute`);
  } catch (error) {
    // With the store down the answer must still say so; the probes being kept bounds what it costs.
    if (!(error instanceof StoreUnavailable)) throw error;
  }
}

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
      missing: missingSettings(config),
      checkedAt,
    };
  }

  const { provider, store, database, checkedAt: probedAt } = await probes(ctx);
  return {
    ok: provider.ok && store.ok && database.ok,
    provider: { ...names.provider, ...provider },
    store: { ...names.store, ...store },
    database: { ...names.database, ...database },
    events: ctx.events?.describe() ?? names.events,
    problems: [],
    missing: [],
    checkedAt: probedAt,
  };
}

interface Probes {
  provider: CheckResult;
  store: CheckResult;
  database: CheckResult;
  checkedAt: string;
}

// Per service context (a test's fault injection hands the handlers a new one): one round at a time, kept HEALTH_PROBE_TTL_MS.
const recentProbes = servicePart('recent health probes', (): { kept?: { until: number; probes: Promise<Probes> } } => ({}));

function probes(ctx: ServiceContext): Promise<Probes> {
  const recent = ctx.part(recentProbes);
  if (recent.kept && recent.kept.until > Date.now()) return recent.kept.probes;
  const round = probeAll(ctx);
  recent.kept = { until: Date.now() + HEALTH_PROBE_TTL_MS, probes: round };
  return round;
}

async function probeAll(ctx: ServiceContext): Promise<Probes> {
  const { config } = ctx;
  const checkedAt = new Date().toISOString();
  const timeoutMs = config.lightning.timeoutMs;
  const [provider, store, database] = await Promise.all([
    timed(() => ctx.provider.balance(), timeoutMs),
    timed(() => ctx.store.get('health:probe'), timeoutMs),
    config.database
      ? timed(async () => (await ctx.database()).query('SELECT 1'), Math.max(timeoutMs, MIN_DATABASE_TIMEOUT_MS))
      : Promise.resolve<CheckResult>({ ok: true }), // no database is a supported setup: the paywall works without one
  ]);
  for (const [part, result] of Object.entries({ provider, store, database })) {
    if (!result.ok) console.error(`[health] the ${part} does not answer: ${result.error}`);
  }
  return { provider, store, database, checkedAt };
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
