// Which route of the configuration sells a request: the first whose path
// pattern and methods match. A pattern is a path exactly, or a prefix ending
// in "/*" that matches on whole segments ("/v1/*" matches "/v1" and "/v1/x",
// never "/v10").
import type { ProxyRoute } from './config.js';

/** What a route is matched by. */
export type RoutePattern = Pick<ProxyRoute, 'path' | 'methods'>;

/** A route with its path pattern read once. */
export interface MatchingRoute<T> {
  readonly route: RoutePattern;
  readonly value: T;
  matches(method: string, path: string): boolean;
}

/** `route`'s matcher, carrying what was built for it (its handler). */
export function matchingRoute<T>(route: RoutePattern, value: T): MatchingRoute<T> {
  const prefix = route.path.endsWith('/*') ? route.path.slice(0, -2) : undefined;
  const methods = route.methods ? new Set<string>(route.methods) : undefined;
  const pathMatches =
    prefix === undefined ? (path: string) => path === route.path : (path: string) => path === prefix || path.startsWith(`${prefix}/`) || prefix === '';
  return {
    route,
    value,
    matches: (method, path) => (methods === undefined || methods.has(method)) && pathMatches(path),
  };
}

/** The first route matching the request's method and path, or undefined. */
export function firstMatch<T>(routes: readonly MatchingRoute<T>[], method: string, path: string): MatchingRoute<T> | undefined {
  return routes.find((route) => route.matches(method, path));
}
