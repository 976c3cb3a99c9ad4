// Which configuration and service context the api/ handlers run with.
//
// On Vercel each api/ file's `fetch` runs with this instance's deployment
// (defaultDeployment(): loadConfig() from the environment, the context built
// on first use), one per instance and shared by every api/ file in it. The
// local server (scripts/dev-server.ts) and tests run the same handlers with a
// deployment of their own: startDevServer({ deployment }) passes it to every
// function through `fetchWith`, and a test calling a function directly does
// `fn.fetchWith(request, deployment)`. Tests build theirs from a config object
// (createDeployment(loadConfig({...}))) and inject faults by handing the
// handlers a modified context (tests/support/server.ts `use`); nothing writes
// the environment.
import { ConfigError, loadConfig, type Config } from '../config.js';
import { retryLater } from '../http/errors.js';
import { routeWith, type Handler, type Method } from '../http/route.js';
import { createServiceContext, type ServiceContext } from './context.js';

export interface Deployment {
  /** The configuration; throws ConfigError when it does not load (GET /api/health says why). */
  config(): Config;
  /** The service context built from it, on first use; throws HttpError 503 while production settings are missing. */
  context(): ServiceContext;
  /**
   * Where the local server listens (set by startDevServer): the public base URL
   * of a local run without PUBLIC_URL, where the dev node sends its webhooks.
   */
  localUrl?: string;
}

/**
 * A deployment of `config` (or of what the function returns, asked on first
 * use and kept once it loads). Its context is built on first use and kept; a
 * build that fails (missing production settings) is tried again next time.
 */
export function createDeployment(config: Config | (() => Config)): Deployment {
  let loaded = typeof config === 'function' ? undefined : config;
  const load = typeof config === 'function' ? config : () => config;
  let built: ServiceContext | undefined;
  const deployment: Deployment = {
    config: () => (loaded ??= load()),
    context: () => (built ??= createServiceContext(deployment.config(), { publicUrl: publicBaseUrl(deployment) })),
  };
  return deployment;
}

/** A deployment that runs with `ctx` as it is (fault injection: a context with parts replaced). */
export function deploymentOf(ctx: ServiceContext): Deployment {
  return { config: () => ctx.config, context: () => ctx };
}

// Made at import but lazy (createDeployment reads the environment on first use): its state is its own members.
const processDeployment = createDeployment(() => loadConfig());

/** This instance's deployment, configured from the environment: what every api/ file's `fetch` runs with. */
export function defaultDeployment(): Deployment {
  return processDeployment;
}

/**
 * The service's public origin, from configuration only (never a request's Host
 * header, which the client chooses): PUBLIC_URL, else where the local server
 * listens; undefined in production without PUBLIC_URL.
 */
export function publicBaseUrl(deployment: Deployment): string | undefined {
  const config = deployment.config();
  return config.publicUrl ?? (config.production ? undefined : deployment.localUrl);
}

/** The default export of an api/ file of the service. */
export interface ServiceFunction {
  /** What Vercel calls: runs with this instance's deployment. */
  fetch(request: Request): Promise<Response>;
  /** What the local server and tests call: runs with the deployment given. */
  fetchWith(request: Request, deployment: Deployment): Promise<Response>;
}

/** route() (lib/http/route.ts) whose handlers get the deployment they run in: `GET(request, deployment)`. */
export function serviceRoute(methods: Partial<Record<Method, Handler<Deployment>>>): ServiceFunction {
  const guarded: Partial<Record<Method, Handler<Deployment>>> = {};
  for (const [method, handler] of Object.entries(methods) as [Method, Handler<Deployment>][]) guarded[method] = answerConfigErrors(handler);
  const routed = routeWith(guarded);
  return {
    fetch: (request) => routed.fetch(request, defaultDeployment()),
    fetchWith: (request, deployment) => routed.fetch(request, deployment),
  };
}

/** Seconds a client waits before asking again while the configuration does not load (an operator must redeploy). */
const CONFIGURATION_RETRY_AFTER_SECONDS = 30;

/**
 * An environment that does not load (a malformed value) answers 503
 * INVALID_CONFIGURATION naming the setting, as GET /api/health does, instead
 * of a 500: it is the operator's to fix, and the client's to retry later.
 */
function answerConfigErrors(handler: Handler<Deployment>): Handler<Deployment> {
  return async (request, deployment) => {
    try {
      return await handler(request, deployment);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      throw retryLater(503, 'INVALID_CONFIGURATION', `The service is misconfigured: ${error.message}`, CONFIGURATION_RETRY_AFTER_SECONDS);
    }
  };
}
