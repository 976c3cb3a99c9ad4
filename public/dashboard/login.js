// @ts-check
// Logging in with a Lightning wallet (LNURL-auth): the login code, its
// polling, the development login of local runs, and logging out.
import { fields } from '../json-answer.js';
import { api } from './api.js';
import { readChallenge, runChallenge } from './challenge.js';
import { byId } from '../dom.js';
import { asLogin, storeLogin } from './login-token.js';
import { clearStatus, showError, showStatus } from './status.js';

let stopPolling = () => {};
/** Counts the login codes asked for: only the latest one asked for is shown and polled. */
let codesAskedFor = 0;

export function stopLogin() {
  codesAskedFor++;
  stopPolling();
}

/**
 * Shows a new login code and waits for a wallet to sign it.
 * @param {() => void} loggedIn called once the login is stored
 */
export async function startLogin(loggedIn) {
  stopLogin();
  const thisCode = codesAskedFor;
  byId('login-expired').hidden = true;
  byId('login-challenge').hidden = true;
  const answer = await api('/api/lnurl-auth');
  // Asked again meanwhile (a log-out whose answer also ended the login asks twice), or logged in: that one wins.
  if (thisCode !== codesAskedFor) return;
  const challenge = answer.ok ? readChallenge(answer) : null;
  if (!answer.ok || !challenge) {
    showError(answer.ok ? { error: 'The server sent a login code this page does not understand', code: 'UNEXPECTED_ANSWER' } : answer);
    return showExpired('No login code right now.');
  }
  offerDevLogin(challenge.k1);
  stopPolling = runChallenge('login', challenge, answer.headers, '/api/lnurl-auth', {
    signed: (signed) => {
      const login = asLogin(signed);
      if (!login) {
        showError({ error: 'The server sent a login this page does not understand', code: 'UNEXPECTED_ANSWER' });
        return showExpired('The login did not go through.');
      }
      storeLogin(login);
      clearStatus();
      loggedIn();
    },
    expired: showExpired,
    failed: (failure) => {
      showError(failure);
      showExpired('The login did not go through.');
    },
  });
}

/** @type {Promise<boolean> | undefined} */
let devLoginOffered;

/**
 * Local runs with the embedded dev node (GET /api/demo says so): the server
 * signs this challenge with its development key, as a wallet would; the poll
 * then logs in.
 * @param {string} k1
 */
async function offerDevLogin(k1) {
  const button = byId('login-dev', HTMLButtonElement);
  devLoginOffered ??= api('/api/demo').then((answer) => answer.ok && typeof answer.data.devLogin === 'object' && answer.data.devLogin !== null);
  button.hidden = !(await devLoginOffered);
  button.disabled = false;
  button.onclick = async () => {
    button.disabled = true;
    const signed = await api('/api/dev/login', { method: 'POST', body: { k1 } });
    if (!signed.ok) {
      button.disabled = false;
      const { reason } = fields(signed.data);
      showStatus(typeof reason === 'string' ? reason : signed.error, 'error', signed.code);
    }
  };
}

/** @param {string} message why there is no code to scan */
function showExpired(message) {
  byId('login-challenge').hidden = true;
  byId('login-expired-text').textContent = message;
  byId('login-expired').hidden = false;
}

/** Revokes this login on the server and forgets it here, whatever the server answers. */
export async function logOut() {
  const button = byId('logout', HTMLButtonElement);
  button.disabled = true;
  const answer = await api('/api/login', { method: 'DELETE', auth: true });
  button.disabled = false;
  // Logged out either way from this page's point of view; a failure is still worth saying.
  if (!answer.ok && answer.status !== 401) showError(answer);
  else showStatus('Logged out', 'info');
  storeLogin(null);
}
