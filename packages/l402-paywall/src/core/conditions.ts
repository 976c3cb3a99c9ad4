// The grammar of a route's conditions (Terms.exact: an owner, `uses`), written
// once for every scheme that binds them into what it issues: L402's caveats
// (`name=value`, schemes/l402/caveats.ts) and the Payment challenges' opaque
// fields (schemes/payment). A name is lower-case and cannot hold `=`; a value
// is printable ASCII.
import { reject, type Rejection } from './rejections.js';

const NAME = '[a-z][a-z0-9_]{0,31}';
const VALUE = '[\\x20-\\x7e]{0,512}';
/** A condition's name, whole (for schemas that check with a pattern, e.g. POST /api/verify's expectations). */
export const CONDITION_NAME = new RegExp(`^${NAME}$`);
/** A condition's value, whole. */
export const CONDITION_VALUE = new RegExp(`^${VALUE}$`);
/** `name=value`, whole: a caveat. */
export const CONDITION_PAIR = new RegExp(`^${NAME}=${VALUE}$`);

/** The most conditions one credential carries. */
export const MAX_CONDITIONS = 16;

/** A condition's name: a lower-case letter, then up to 31 lower-case letters, digits or `_`. */
export function isConditionName(name: string): boolean {
  return CONDITION_NAME.test(name);
}

/** A condition's value: up to 512 printable ASCII characters. */
export function isConditionValue(value: string): boolean {
  return CONDITION_VALUE.test(value);
}

export interface CaveatExpectations {
  /** The route being served; a token's `route` caveat must equal it. */
  route?: string;
  /** The price of this request; a token's `price_msat` must be at least this. */
  priceMsat?: number;
  /** Other caveats that must be present with exactly these values. */
  exact?: Record<string, string>;
}

/**
 * A credential's conditions as sorted `name=value` pairs (an L402 token's
 * caveats; a Payment challenge's bound fields and its amount as `price_msat`)
 * against what a request expects (Terms fit). Every pair must be understood and met, and every expectation
 * must be present in the token: an unknown condition fails closed.
 */
export function checkCaveats(caveats: readonly string[], expect: CaveatExpectations): { ok: true } | { ok: false; rejection: Rejection } {
  const { route, priceMsat, exact } = expect;
  // A route's tokens share one frozen list (the token readers share it), so the
  // answer for that list and these terms is kept: a frozen list cannot change,
  // and the terms are compared by value (`exact` by identity, and only frozen).
  const kept = passedTerms.get(caveats);
  if (kept && route === kept.route && priceMsat === kept.priceMsat && exact === kept.exact) return { ok: true };
  const answer = checkEach(caveats, expect);
  if (answer.ok && Object.isFrozen(caveats) && (exact === undefined || Object.isFrozen(exact))) passedTerms.set(caveats, { route, priceMsat, exact });
  return answer;
}

/**
 * The last terms each frozen list passed (checkCaveats): a cache keyed by the
 * list it answers for, which dies with the list; it holds nothing but what a
 * caller showed, and changes no answer.
 */
const passedTerms = new WeakMap<readonly string[], { route: string | undefined; priceMsat: number | undefined; exact: CaveatExpectations['exact'] }>();

function checkEach(caveats: readonly string[], expect: CaveatExpectations): { ok: true } | { ok: false; rejection: Rejection } {
  let sawRoute = expect.route === undefined;
  let sawPrice = expect.priceMsat === undefined;
  let exactSeen = 0;
  let previous = '';
  let previousKey = '';
  for (const caveat of caveats) {
    const eq = caveat.indexOf('=');
    const key = caveat.slice(0, eq);
    const value = caveat.slice(eq + 1);
    // Minted sorted with unique keys; sorted order puts equal keys side by side.
    if (caveat <= previous || key === previousKey) return reject('CAVEAT_NOT_SATISFIED');
    previous = caveat;
    previousKey = key;
    if (key === 'route') {
      if (expect.route !== undefined && value !== expect.route) return reject('WRONG_ROUTE');
      sawRoute = true;
    } else if (key === 'price_msat') {
      if (expect.priceMsat !== undefined && !(Number(value) >= expect.priceMsat)) return reject('INSUFFICIENT_PRICE');
      sawPrice = true;
    } else if (expect.exact && Object.hasOwn(expect.exact, key)) {
      if (expect.exact[key] !== value) return reject('CAVEAT_NOT_SATISFIED');
      exactSeen++;
    } else {
      return reject('CAVEAT_NOT_SATISFIED');
    }
  }
  if (!sawRoute) return reject('WRONG_ROUTE');
  if (!sawPrice) return reject('INSUFFICIENT_PRICE');
  if (expect.exact && exactSeen !== Object.keys(expect.exact).length) return reject('CAVEAT_NOT_SATISFIED');
  return { ok: true };
}
