// @ts-check
// Linking the Lightning Addresses one receives payments at: the service pays
// the address 1 sat with a code in the payment comment, and the owner types
// the code back. Also the list of linked addresses, with Remove.
import { fields } from '../json-answer.js';
import { api } from './api.js';
import { byId } from '../dom.js';
import { clearStatus, showError, showStatus } from './status.js';

/** The address whose code is awaited, as the server normalised it. */
let pendingAddress = '';
/** What to do after a link or an unlink went through (show the new stats). */
let linksChanged = () => {};

/** @param {() => void} changed called after an address was linked or removed */
export function initLinks(changed) {
  linksChanged = changed;
  byId('link-start').addEventListener('submit', startLink);
  byId('link-confirm').addEventListener('submit', confirmLink);
  byId('link-cancel').addEventListener('click', () => resetLinkForm(false));
}

/** @param {unknown[]} addresses as `GET /api/login` lists them */
export function renderLinks(addresses) {
  const list = byId('link-list');
  if (addresses.length === 0) {
    const item = document.createElement('li');
    item.className = 'muted';
    item.textContent = 'No address linked yet.';
    return list.replaceChildren(item);
  }
  list.replaceChildren(
    ...addresses.map((value) => {
      const address = String(value);
      const item = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = address;
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.textContent = 'Remove';
      remove.onclick = () => unlinkAddress(address, remove);
      item.append(name, remove);
      return item;
    }),
  );
}

/** @param {'link-start' | 'link-confirm'} formId */
function submitButtonOf(formId) {
  const button = byId(formId).querySelector('button[type=submit]');
  if (!(button instanceof HTMLButtonElement)) throw new Error(`dashboard.html has no submit button in #${formId}`);
  return button;
}

/** @param {SubmitEvent} event */
async function startLink(event) {
  event.preventDefault();
  const input = byId('link-address', HTMLInputElement);
  const address = input.value.trim();
  if (!address) return showStatus('Enter a Lightning Address, like name@your-wallet.com', 'error', 'ADDRESS_REQUIRED');
  const button = submitButtonOf('link-start');
  button.disabled = true;
  showStatus(`Paying 1 sat to ${address}…`, 'info');
  const answer = await api('/api/links', { method: 'POST', body: { address }, auth: true });
  button.disabled = false;
  if (!answer.ok) return showError(answer);
  /** @type {import('../json-answer.js').Unchecked<import('../../lib/service/accounts/links.js').LinkStarted>} */
  const started = answer.data;
  if (started.status === 'linked') {
    showStatus(`${String(started.address ?? address)} is linked`, 'ok');
    input.value = '';
    return linksChanged();
  }
  pendingAddress = typeof started.address === 'string' ? started.address : address;
  const expires = typeof started.expiresAt === 'string' ? Date.parse(started.expiresAt) : Number.NaN;
  byId('link-sent').textContent =
    `We sent 1 sat to ${pendingAddress} with a code in the payment comment (like "L402 link code 7KQ2-M9XD"). ` +
    `Find it in that wallet's payment list and enter it below` +
    (Number.isNaN(expires) ? '.' : ` before ${new Date(expires).toLocaleTimeString()}.`);
  byId('link-start').hidden = true;
  byId('link-confirm').hidden = false;
  const code = byId('link-code', HTMLInputElement);
  code.value = '';
  code.focus();
  clearStatus();
}

/** @param {SubmitEvent} event */
async function confirmLink(event) {
  event.preventDefault();
  const code = byId('link-code', HTMLInputElement).value.trim();
  if (!code) return showStatus('Enter the code from the payment comment', 'error', 'CODE_REQUIRED');
  const button = submitButtonOf('link-confirm');
  button.disabled = true;
  const answer = await api('/api/links', { method: 'POST', body: { address: pendingAddress, code }, auth: true });
  button.disabled = false;
  if (!answer.ok) {
    showError(answer);
    // These mean the code is gone: a new one has to be sent.
    const { attemptsLeft } = fields(answer.data);
    if (['LINK_CODE_NOT_FOUND', 'TOO_MANY_ATTEMPTS'].includes(answer.code) || attemptsLeft === 0) resetLinkForm(false);
    return;
  }
  showStatus(`${pendingAddress} is linked`, 'ok');
  resetLinkForm(true);
  linksChanged();
}

/** @param {boolean} clearAddress */
function resetLinkForm(clearAddress) {
  byId('link-confirm').hidden = true;
  byId('link-start').hidden = false;
  if (clearAddress) byId('link-address', HTMLInputElement).value = '';
  pendingAddress = '';
}

/**
 * @param {string} address
 * @param {HTMLButtonElement} button
 */
async function unlinkAddress(address, button) {
  if (!window.confirm(`Remove ${address}? Linking it again costs another 1-sat proof.`)) return;
  button.disabled = true;
  const answer = await api('/api/links', { method: 'DELETE', body: { address }, auth: true });
  button.disabled = false;
  if (!answer.ok) return showError(answer);
  showStatus(`${address} removed`, 'info');
  linksChanged();
}
