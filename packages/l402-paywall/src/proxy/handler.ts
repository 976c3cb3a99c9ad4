// The proxy as one fetch-style handler, built from a checked configuration:
// `createProxy(config, services)(request)`. It runs wherever a Web handler
// runs: under `l402-paywall proxy` (node-server.ts), as a Vercel function, in
// Bun or Deno. Each route is one more adapter of the paywall's core (the same
// gate and serve step as withL402, adapters/serve.ts) whose handler forwards
// the request (forward.ts): an unpaid request is answered by the paywall and
// never reaches the upstream; a paid one reaches it once.
import { paywallGate, type PaywallGate } from '../adapters/serve.js';
import type { Decision } from '../core/decision.js';
import { refusalResponse } from '../core/refusals.js';
import type { ReplayStore } from '../core/replay.js';
import { memoryReplayStore } from '../core/replay.js';
import { loadServerAudit } from '../events/load-builder.js';
import type { L402Event, ServerEventOptions } from '../events/types.js';
import type { LightningProvider } from '../lightning/provider.js';
import { createDevPayHandler, createDevReceiveHandler } from '../lightning/providers/dev-pay.js';
import type { DevNode } from '../lightning/providers/dev.js';
import type { L402Options } from '../paywall/options.js';
import type { SessionLedger } from '../schemes/session/ledger.js';
import { memorySessionLedger } from '../schemes/session/memory-ledger.js';
import type { SessionObserver } from '../schemes/session/observer.js';
import { lightningSessions } from '../schemes/session/seller.js';
import { meterByUsage } from '../adapters/meter-by-usage.js';
import { openAiUsage, type UsageMeter } from '../schemes/session/usage-meter.js';
import { parseProxyConfig, type ProxyConfig, type ProxyConfigInput, type ProxyRoute } from './config.js';
import { forward } from './forward.js';
import { firstMatch, matchingRoute, type MatchingRoute } from './routes.js';

/** What the proxy sells with: its backend, secret and stores, given by the code that runs it (the CLI reads them from the environment). */
export interface ProxyServices {
  /** The Lightning backend. A session route needs one that pays invoices without an amount (refunds). */
  provider: LightningProvider;
  /** The signing secret(s), at least 32 bytes, newest first; as withL402's `secret`. */
  secret: L402Options['secret'];
  /** Where uses are counted; default in memory (one process). Shared (Redis, Upstash) when several instances sell. */
  replayStore?: ReplayStore;
  /** Where sessions live; default in memory (one process). */
  sessionLedger?: SessionLedger;
  /**
   * The embedded dev node whose wallet the proxy then answers at `POST
   * /api/dev/pay` and `/api/dev/receive` (before any route), so that
   * `l402-paywall --dev <proxy>` pays it. Those handlers refuse under a
   * production NODE_ENV, and so does the dev node.
   */
  devNode?: DevNode;
  onError?: (error: unknown, context: string) => void;
  onEvent?: (event: L402Event) => unknown;
  events?: ServerEventOptions;
  /** Told of each session's deposit, top-up, spend, close and refund. */
  onSession?: SessionObserver;
  /** Serverless platforms: keeps background work (a use given back) alive after the answer. */
  waitUntil?: (promise: Promise<unknown>) => void;
  /** The fetch the upstream is called with; default the global one. */
  fetch?: typeof fetch;
}

/** Where a request came from, when the server knows it (node-server.ts does): X-Forwarded-For gets it. */
export interface ProxyRequestContext {
  clientAddress?: string;
}

export type ProxyHandler = (request: Request, context?: ProxyRequestContext) => Promise<Response>;

/** A route's own handler, given the request and where it came from. */
type RouteHandler = (request: Request, context: ProxyRequestContext) => Promise<Response>;

/**
 * The proxy's fetch handler. `config` is checked here (a ProxyConfigError
 * names each bad field), so a JSON file's contents may be passed as they are; routes are tried in order and a request no route
 * matches is answered 404 NO_ROUTE, never forwarded.
 */
export function createProxy(config: ProxyConfigInput | ProxyConfig | Readonly<Record<string, unknown>>, services: ProxyServices): ProxyHandler {
  const checked = parseProxyConfig(config);
  const upstream = new URL(checked.upstream);
  const shared = {
    ...services,
    replayStore: services.replayStore ?? memoryReplayStore(),
    sessionLedger: services.sessionLedger ?? memorySessionLedger(),
  };
  const routes = checked.routes.map((route) => matchingRoute(route, routeHandler(route, checked, upstream, shared)));
  const devRoutes = services.devNode ? devWallet(services.devNode) : [];
  return async (request, context = {}) => {
    const url = new URL(request.url);
    const dev = firstMatch(devRoutes, request.method, url.pathname);
    if (dev) return dev.value(request, context);
    const matched: MatchingRoute<RouteHandler> | undefined = firstMatch(routes, request.method, url.pathname);
    if (!matched) return Response.json({ error: `No route of this proxy sells ${request.method} ${url.pathname}`, code: 'NO_ROUTE' }, { status: 404 });
    const declared = Number(request.headers.get('content-length') ?? '0');
    if (declared > checked.maxBodyBytes) return tooLarge(checked.maxBodyBytes);
    return matched.value(request, context);
  };
}

type Shared = ProxyServices & { replayStore: ReplayStore; sessionLedger: SessionLedger };

/** The handler of one route: free (forwarded as it is), or behind its own paywall gate. */
function routeHandler(route: ProxyRoute, config: ProxyConfig, upstream: URL, services: Shared): RouteHandler {
  const timeoutMs = config.timeoutSeconds * 1000;
  const send = (request: Request, context: ProxyRequestContext, dropCredential: boolean) =>
    forward(limitedBody(request, config.maxBodyBytes), {
      upstream,
      timeoutMs,
      dropCredential,
      clientAddress: context.clientAddress,
      ...(services.fetch && { fetch: services.fetch }),
    });
  if (route.free) return (request, context) => send(request, context, false);
  const gate = paywallGate(paywallOptions(route, config, services), loadServerAudit);
  const meter = route.meter ? METERS[route.meter]() : undefined;
  if (meter) {
    // Charged by the usage the upstream reports: reserved before forwarding, settled to the report (docs/sessions.md).
    const metered = { meter, maxRequestBytes: config.maxBodyBytes };
    return (request, context) => sold(gate, request, (paid) => meterByUsage(paid, (prepared) => send(prepared, context, true), metered));
  }
  return (request, context) => sold(gate, request, (paid) => send(paid, context, true));
}

/** A paid route: the paywall decides; a paid request is forwarded once and its answer goes through the serve step (a 5xx gives the use back). */
async function sold(gate: PaywallGate, request: Request, send: (request: Request) => Promise<Response>): Promise<Response> {
  const startedAt = gate.start();
  const admitted = gate.admit(request, startedAt);
  const decision: Decision = admitted instanceof Promise ? await admitted : admitted;
  // The body of a refused request is never read: the server discards it.
  if (decision.kind === 'refused') return refusalResponse(decision);
  let response: Response;
  try {
    response = await send(request);
  } catch (error) {
    await gate.serve.failed(decision);
    throw error;
  }
  return gate.serve.answer(request, decision, response, startedAt);
}

/** The configuration's meter names, each to the meter it makes. */
const METERS: Record<NonNullable<ProxyRoute['meter']>, () => UsageMeter> = {
  'openai-usage': () => openAiUsage(),
};

/** withL402's options for a route: its price or session, and the per-route options the configuration mirrors. */
function paywallOptions(route: ProxyRoute, config: ProxyConfig, services: Shared): L402Options {
  const tokenTtlSeconds = route.tokenTtlSeconds ?? config.tokenTtlSeconds;
  const common: L402Options = {
    priceSats: route.priceSats ?? route.session!.unitSats,
    provider: services.provider,
    secret: services.secret,
    replayStore: services.replayStore,
    ...(tokenTtlSeconds !== undefined && { tokenTtlSeconds }),
    ...(config.realm !== undefined && { realm: config.realm }),
    ...(route.memo !== undefined && { memo: () => route.memo! }),
    ...(services.onError && { onError: services.onError }),
    ...(services.onEvent && { onEvent: services.onEvent }),
    ...(services.events && { events: services.events }),
    ...(services.waitUntil && { waitUntil: services.waitUntil }),
  };
  if (route.session) {
    const { unitSats, depositUnits, idleTimeoutSeconds, unitType } = route.session;
    return {
      ...common,
      // Sold by the session alone: a route that meters by usage has no price per request.
      schemes: { l402: false, payment: false },
      session: lightningSessions({
        unitPriceSats: unitSats,
        ledger: services.sessionLedger,
        ...(depositUnits !== undefined && { depositUnits }),
        ...(idleTimeoutSeconds !== undefined && { idleTimeoutSeconds }),
        unitType: unitType ?? (route.meter ? 'token' : 'request'),
        ...(services.onSession && { onSession: services.onSession }),
      }),
    };
  }
  return {
    ...common,
    ...(route.uses !== undefined && { uses: route.uses }),
    ...(route.schemes !== undefined && { schemes: route.schemes }),
    ...(route.keepPaymentOnFailure !== undefined && { keepPaymentOnFailure: route.keepPaymentOnFailure }),
  };
}

/** The dev wallet's pay and receive routes, answered by the proxy itself. */
function devWallet(devNode: DevNode): MatchingRoute<RouteHandler>[] {
  const pay = createDevPayHandler(devNode);
  const receive = createDevReceiveHandler(devNode);
  return [matchingRoute({ path: '/api/dev/pay' }, pay), matchingRoute({ path: '/api/dev/receive/*' }, receive)];
}

/** A body past `maxBytes` (sent without a Content-Length, or longer than it said) errors the stream: the upstream sees an aborted request. */
function limitedBody(request: Request, maxBytes: number): Request {
  if (request.body === null) return request;
  let seen = 0;
  const counted = request.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > maxBytes) controller.error(new RangeError(`request body over ${maxBytes} bytes`));
        else controller.enqueue(chunk);
      },
    }),
  );
  return new Request(request, { body: counted, duplex: 'half' } as RequestInit);
}

function tooLarge(maxBytes: number): Response {
  return Response.json({ error: `Request body must be at most ${maxBytes} bytes`, code: 'BODY_TOO_LARGE', limit: maxBytes }, { status: 413 });
}
