// @ts-check
// The dashboard's calls to this service. None throws: every answer becomes an
// ApiSuccess or an ApiFailure ({error, code} in words, for the status bar).
// A success's data is a JSON object not yet checked (json-answer.js).
import { fields, isJsonObject, jsonBody } from '../json-answer.js';
import { currentLogin, storeLogin } from './login-token.js';

/** @typedef {{ ok: true, status: number, data: Readonly<Record<string, unknown>>, headers: Headers }} ApiSuccess */
/** @typedef {{ ok: false, status: number, data: unknown, error: string, code: string, retryAfter: number }} ApiFailure */
/** @typedef {{ ok: true, status: number, blob: Blob, headers: Headers }} ApiDownload */

/** @type {(failure: ApiFailure) => void} */
let loginEnded = () => {};

/**
 * What to do when the server says the login is over (expired, revoked,
 * erased): a 401 to a call made with the login's token. The login is already
 * forgotten when `listener` runs.
 * @param {(failure: ApiFailure) => void} listener
 */
export function onLoginEnd(listener) {
  loginEnded = listener;
}

/**
 * @typedef {object} CallOptions
 * @property {'GET' | 'POST' | 'DELETE'} [method]
 * @property {unknown} [body] sent as JSON
 * @property {boolean} [auth] with the login's Bearer token
 */

/**
 * A JSON call: success is a 2xx with a JSON object.
 * @param {string} path
 * @param {CallOptions} [options]
 * @returns {Promise<ApiSuccess | ApiFailure>}
 */
export async function api(path, options = {}) {
  const sent = await send(path, options);
  if ('failure' in sent) return sent.failure;
  const { response } = sent;
  const data = await jsonBody(response);
  if (response.ok && isJsonObject(data)) return { ok: true, status: response.status, data, headers: response.headers };
  return refused(response, data, options);
}

/**
 * A file to save (the CSV export): success is a 2xx with its body.
 * @param {string} path
 * @param {CallOptions} [options]
 * @returns {Promise<ApiDownload | ApiFailure>}
 */
export async function download(path, options = {}) {
  const sent = await send(path, options);
  if ('failure' in sent) return sent.failure;
  const { response } = sent;
  if (!response.ok) return refused(response, await jsonBody(response), options);
  try {
    return { ok: true, status: response.status, blob: await response.blob(), headers: response.headers };
  } catch {
    return failure(0, 'The download was interrupted; try again', 'NETWORK');
  }
}

/**
 * @param {string} path
 * @param {CallOptions} options
 * @returns {Promise<{ response: Response } | { failure: ApiFailure }>}
 */
async function send(path, { method = 'GET', body, auth = false }) {
  /** @type {Record<string, string>} */
  const headers = {};
  if (auth) {
    const login = currentLogin();
    if (!login) return { failure: failure(401, 'Log in first', 'SESSION_REQUIRED') };
    headers.authorization = `Bearer ${login.token}`;
  }
  if (body !== undefined) headers['content-type'] = 'application/json';
  try {
    return { response: await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' }) };
  } catch {
    return { failure: failure(0, 'The server cannot be reached; check your connection', 'NETWORK') };
  }
}

/**
 * @param {Response} response
 * @param {unknown} data its JSON, when it had some
 * @param {CallOptions} options
 * @returns {ApiFailure}
 */
function refused(response, data, { auth = false }) {
  const { error, code } = fields(data);
  const result = failure(
    response.status,
    typeof error === 'string'
      ? error
      : response.ok
        ? 'The server sent an answer this page does not understand'
        : `The server answered ${response.status} ${response.statusText}`.trim(),
    typeof code === 'string' ? code : `HTTP_${response.status}`,
  );
  result.data = data;
  result.retryAfter = Number(response.headers.get('retry-after')) || 0;
  if (auth && response.status === 401 && currentLogin()) {
    storeLogin(null);
    loginEnded(result);
  }
  return result;
}

/**
 * @param {number} status
 * @param {string} error
 * @param {string} code
 * @returns {ApiFailure}
 */
export function failure(status, error, code) {
  return { ok: false, status, data: null, error, code, retryAfter: 0 };
}
