// @ts-check
// The operators' dashboard (dashboard.html): LNURL-auth login, private stats,
// linked addresses, right to erasure. Plain ES modules, no build step: this
// one switches between the login and the logged-in view and wires the
// buttons; each concern has its module in dashboard/ (api, session,
// challenge, login, stats-view, chart, pro, links, erase).
//
// Safety rules the modules keep: every text from the server goes in with
// textContent (never innerHTML), checked first; the QR codes (our server's
// SVG) become data: images, where an SVG cannot run scripts; the session
// token lives in sessionStorage (gone with the tab) and travels only as a
// Bearer header.
import { onSessionEnd } from './dashboard/api.js';
import { byId } from './dom.js';
import { cancelErase, startErase, stopErase } from './dashboard/erase.js';
import { initLinks } from './dashboard/links.js';
import { logOut, startLogin, stopLogin } from './dashboard/login.js';
import { downloadCsv } from './dashboard/pro.js';
import { currentSession, storeSession } from './dashboard/session.js';
import { refresh, renderWho } from './dashboard/stats-view.js';
import { showError, showStatus } from './dashboard/status.js';

function showLogin() {
  stopErase();
  byId('app').hidden = true;
  byId('login').hidden = false;
  startLogin(showApp);
}

function showApp() {
  const session = currentSession();
  if (!session) return showLogin();
  stopLogin();
  byId('login').hidden = true;
  byId('app').hidden = false;
  byId('erased').hidden = true;
  renderWho({ ...session, addresses: [] });
  refresh();
}

/** @param {string} message what was deleted, in words */
function erased(message) {
  // The deletion ended every session of the key, this one included.
  storeSession(null);
  showLogin();
  const notice = byId('erased');
  notice.textContent = message;
  notice.hidden = false;
  showStatus(message, 'ok');
}

onSessionEnd((failure) => {
  showLogin();
  showError(failure);
});
byId('login-new').addEventListener('click', () => startLogin(showApp));
byId('logout').addEventListener('click', async () => {
  await logOut();
  showLogin();
});
byId('refresh').addEventListener('click', refresh);
byId('csv').addEventListener('click', downloadCsv);
initLinks(refresh);
byId('erase-start').addEventListener('click', () => startErase(erased));
byId('erase-cancel').addEventListener('click', cancelErase);
if (currentSession()) showApp();
else showLogin();
