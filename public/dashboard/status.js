// @ts-check
// The status bar under the header: what just happened, in words, with the
// API's error code when there is one. Errors stay until replaced; news fades.
import { byId } from '../dom.js';

const INFO_MS = 6000;
/** @type {ReturnType<typeof setTimeout> | undefined} */
let fadeTimer;

/**
 * @param {string} message
 * @param {'info' | 'ok' | 'error'} [kind]
 * @param {string} [code] the API's error code, shown beside the message
 */
export function showStatus(message, kind = 'info', code = '') {
  const status = byId('status');
  clearTimeout(fadeTimer);
  status.replaceChildren(document.createTextNode(message));
  if (code) {
    const tag = document.createElement('span');
    tag.className = 'code';
    tag.textContent = `(${code})`;
    status.append(tag);
  }
  status.className = `status ${kind}`;
  status.dataset.kind = kind;
  status.hidden = false;
  if (kind === 'info') fadeTimer = setTimeout(() => (status.hidden = true), INFO_MS);
}

/** @param {{ error: string, code: string }} failure */
export function showError(failure) {
  showStatus(failure.error, 'error', failure.code);
}

export function clearStatus() {
  clearTimeout(fadeTimer);
  byId('status').hidden = true;
}
