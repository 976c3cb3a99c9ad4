// route(): the one shape of every api/ function (a Vercel fetch export):
// method table, CORS and OPTIONS, 405 with Allow, JSON errors, no stack traces.
// The service's files use serviceRoute (lib/service/deployment.ts), built on routeWith.
import { ZodError } from 'zod';
import { PROVIDER_RETRY_AFTER_SECONDS } from 'l402-paywall';
import { DatabaseUnavailable } from '../db/types.js';
import { StoreUnavailable } from '../store/types.js';
import { HttpError, errorResponse, retryLater } from './errors.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type Handler<Arg = void> = (request: Request, arg: Arg) => Response | Promise<Response>;

const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'WWW-Authenticate, Retry-After, Payment-Receipt',
};

export function route(methods: Partial<Record<Method, Handler>>): { fetch(request: Request): Promise<Response> } {
  const routed = routeWith(methods);
  return { fetch: (request) => routed.fetch(request, undefined) };
}

/**
 * route() for handlers that take a second argument, passed with each call: the
 * service's api/ files get their deployment this way (lib/service/deployment.ts
 * serviceRoute), so lib/http knows nothing of the service.
 */
export function routeWith<Arg>(methods: Partial<Record<Method, Handler<Arg>>>): { fetch(request: Request, arg: Arg): Promise<Response> } {
  // HEAD is answered wherever GET is (uptime monitors use it): GET's answer without its body.
  const allow = [...Object.keys(methods).flatMap((method) => (method === 'GET' ? ['GET', 'HEAD'] : [method])), 'OPTIONS'].join(', ');
  const fn = {
    async fetch(request: Request, arg: Arg): Promise<Response> {
      if (request.method === 'OPTIONS') {
        return withCors(
          new Response(null, {
            status: 204,
            headers: {
              'Access-Control-Allow-Methods': allow,
              'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept-Authenticate, X-Split-Secret, traceparent, L402-Agent-Id, L402-Session-Id',
              'Access-Control-Max-Age': '86400',
              Allow: allow,
            },
          }),
        );
      }
      if (request.method === 'HEAD' && methods.GET) {
        const asGet = await fn.fetch(new Request(request, { method: 'GET' }), arg);
        await asGet.body?.cancel();
        return new Response(null, { status: asGet.status, statusText: asGet.statusText, headers: asGet.headers });
      }
      const handler = methods[request.method as Method];
      if (!handler) {
        const refused = withCors(errorResponse(405, 'METHOD_NOT_ALLOWED', `Method ${request.method} is not allowed here; use ${allow}`, {}, { Allow: allow }));
        // A HEAD answer never has a body, whatever it says.
        return request.method === 'HEAD' ? new Response(null, { status: 405, headers: refused.headers }) : refused;
      }
      try {
        return withCors(await handler(request, arg));
      } catch (error) {
        return withCors(toErrorResponse(error));
      }
    },
  };
  return fn;
}

/**
 * When a client may retry after a dependency failed: the library's paywall
 * says this for its backend and replay store, and every api/ function the
 * same for the database and the shared key-value store: one number.
 */
export const DATABASE_RETRY_AFTER_SECONDS = PROVIDER_RETRY_AFTER_SECONDS;
export const STORE_RETRY_AFTER_SECONDS = PROVIDER_RETRY_AFTER_SECONDS;

export function toErrorResponse(error: unknown): Response {
  if (error instanceof HttpError) return errorResponse(error.status, error.code, error.message, error.extra, error.headers);
  if (error instanceof ZodError) return validationError(error);
  if (error instanceof DatabaseUnavailable) {
    console.error('[db] unavailable:', error.message);
    return toErrorResponse(retryLater(503, 'DATABASE_UNAVAILABLE', 'Database temporarily unavailable; try again shortly', DATABASE_RETRY_AFTER_SECONDS));
  }
  if (error instanceof StoreUnavailable) {
    console.error('[store] unavailable:', error.message);
    return toErrorResponse(retryLater(503, 'STORE_UNAVAILABLE', 'Key-value store temporarily unavailable; try again shortly', STORE_RETRY_AFTER_SECONDS));
  }
  console.error('[api] unexpected error:', error instanceof Error ? (error.stack ?? error.message) : error);
  return errorResponse(500, 'INTERNAL', 'Internal error');
}

function validationError(error: ZodError): Response {
  const issues = error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  const first = issues[0]!;
  const where = first.path && !first.message.startsWith(first.path) ? `${first.path}: ` : '';
  return errorResponse(400, 'INVALID_REQUEST', `${where}${first.message}`, { issues });
}

/** What a 429 or 503 that named no time of its own tells the client (every one must name one). */
export const DEFAULT_RETRY_AFTER_SECONDS = PROVIDER_RETRY_AFTER_SECONDS;

// Responses from fetch() or Response.error() have immutable headers.
function withCors(response: Response): Response {
  const extra = { ...CORS_HEADERS };
  if ((response.status === 429 || response.status === 503) && !response.headers.has('Retry-After')) extra['Retry-After'] = String(DEFAULT_RETRY_AFTER_SECONDS);
  let target = response;
  try {
    for (const [k, v] of Object.entries(extra)) target.headers.set(k, v);
  } catch {
    target = new Response(response.body, response);
    for (const [k, v] of Object.entries(extra)) target.headers.set(k, v);
  }
  return target;
}
