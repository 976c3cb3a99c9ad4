// @ts-check
// How both pages (landing.js, the dashboard's api.js) read an answer's body:
// the JSON it says it carries, or null (no JSON, or JSON that does not parse).
// Never throws: the pages turn every answer into {ok, status, data, error}.
//
// That JSON is untrusted until checked (a proxy, an old server or someone on
// the path may send anything): `Unchecked<T>` has the keys of the server's
// own type T, taken from lib/, so a renamed field fails the type check, and
// every value `unknown`, so the page checks each before use.

/**
 * @template T
 * @typedef {{ readonly [K in (T extends unknown ? keyof T : never)]?: unknown }} Unchecked
 *   every key of every variant of T (a union's included), each value unknown
 */

/**
 * @param {Response} response
 * @returns {Promise<unknown>} the parsed JSON, not yet checked: the pages check every value they use
 */
export async function jsonBody(response) {
  if (!(response.headers.get('content-type') ?? '').includes('json')) return null;
  try {
    return await response.json();
  } catch {
    return null;
  }
}

/**
 * @param {unknown} value
 * @returns {value is Readonly<Record<string, unknown>>} whether it is a JSON object (not an array, not null)
 */
export function isJsonObject(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The fields of a JSON object, or none when the value is not one (an array, a string, null...).
 * @param {unknown} value
 * @returns {Readonly<Record<string, unknown>>}
 */
export function fields(value) {
  return isJsonObject(value) ? value : {};
}
