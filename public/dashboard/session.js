// @ts-check
// The login session, kept in sessionStorage: it belongs to this tab and is
// gone when the tab closes; never in localStorage, a cookie or a URL. The
// token travels only as a Bearer header (api.js).

/** @typedef {import('../../lib/service/accounts/auth.js').IssuedSession} IssuedSession */

const SESSION_KEY = 'l402.dashboard.session';

/** @type {IssuedSession | null} */
let session = readStoredSession();

/** @returns {IssuedSession | null} */
function readStoredSession() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null');
    return asSession(stored);
  } catch {
    return null;
  }
}

/**
 * A session as the login poll answers it (`{status: "ok", token, pubkey, admin, expiresAt}`), or null when it is not one.
 * @param {unknown} value
 * @returns {IssuedSession | null}
 */
export function asSession(value) {
  if (typeof value !== 'object' || value === null) return null;
  const { token, pubkey, admin, expiresAt } = /** @type {Record<string, unknown>} */ (value);
  if (typeof token !== 'string' || token === '' || typeof pubkey !== 'string') return null;
  return { token, pubkey, admin: admin === true, expiresAt: typeof expiresAt === 'string' ? expiresAt : '' };
}

export function currentSession() {
  return session;
}

/** @param {IssuedSession | null} value null logs this tab out */
export function storeSession(value) {
  session = value;
  try {
    if (value) sessionStorage.setItem(SESSION_KEY, JSON.stringify(value));
    else sessionStorage.removeItem(SESSION_KEY);
  } catch {
    // Storage refused (private mode): the session lasts as long as this page.
  }
}
