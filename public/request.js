// @ts-check
// The landing page's requests to its own server (both demos, the directory):
// every answer, or no answer at all, as {ok, status, data, error, code}, so a
// caller shows what went wrong instead of throwing.
import { fields, jsonBody } from './json-answer.js';

/** @typedef {{ ok: boolean, status: number, data: unknown, error: string, code: string }} Answer */

/**
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<Answer>}
 */
export async function request(path, init = {}) {
  let response;
  try {
    response = await fetch(path, { cache: 'no-store', ...init });
  } catch {
    return { ok: false, status: 0, data: null, error: 'The server cannot be reached; check your connection.', code: '' };
  }
  return answerOf(response, await jsonBody(response));
}

/**
 * An answer already read: its JSON's `error` and `code` (a refusal says both), or what its status says.
 * @param {Response} response
 * @param {unknown} data
 * @returns {Answer}
 */
export function answerOf(response, data) {
  const { error, code } = fields(data);
  return {
    ok: response.ok,
    status: response.status,
    data,
    error: typeof error === 'string' ? error : `The server answered ${response.status}`,
    code: typeof code === 'string' ? code : '',
  };
}

/**
 * A POST of JSON.
 * @param {string} path
 * @param {unknown} body
 * @returns {Promise<Answer>}
 */
export function postJson(path, body) {
  return request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}
