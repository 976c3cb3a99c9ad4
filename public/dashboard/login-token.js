// @ts-check
// The dashboard login (its bearer token and whose it is), kept in
// sessionStorage: it belongs to this tab and is gone when the tab closes;
// never in localStorage, a cookie or a URL. The token travels only as a
// Bearer header (api.js). Called a login, not a session: a session on this
// dashboard is a client's prepaid Lightning session.

/** @typedef {import('../../lib/service/accounts/auth.js').IssuedLogin} IssuedLogin */

// Renamed from 'l402.dashboard.session': a tab open across that deploy logs in again, once.
const STORAGE_KEY = 'l402.dashboard.login';

/** @type {IssuedLogin | null} */
let login = readStoredLogin();

/** @returns {IssuedLogin | null} */
function readStoredLogin() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(STORAGE_KEY) ?? 'null');
    return asLogin(stored);
  } catch {
    return null;
  }
}

/**
 * A login as the login poll answers it (`{status: "ok", token, pubkey, admin, expiresAt}`), or null when it is not one.
 * @param {unknown} value
 * @returns {IssuedLogin | null}
 */
export function asLogin(value) {
  if (typeof value !== 'object' || value === null) return null;
  const { token, pubkey, admin, expiresAt } = /** @type {Record<string, unknown>} */ (value);
  if (typeof token !== 'string' || token === '' || typeof pubkey !== 'string') return null;
  return { token, pubkey, admin: admin === true, expiresAt: typeof expiresAt === 'string' ? expiresAt : '' };
}

export function currentLogin() {
  return login;
}

/** @param {IssuedLogin | null} value null logs this tab out */
export function storeLogin(value) {
  login = value;
  try {
    if (value) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(value));
    else sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Storage refused (private mode): the login lasts as long as this page.
  }
}
