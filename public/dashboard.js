// @ts-check
// The operators' dashboard (dashboard.html): LNURL-auth login, private stats,
// linked addresses, right to erasure. Plain ES modules, no build step: this
// one switches between the login and the logged-in view and wires the
// buttons; each concern has its module in dashboard/ (api, login-token,
// challenge, login, stats-view, chart, pro, links, erase).
//
// Safety rules the modules keep: every text from the server goes in with
// textContent (never innerHTML), checked first; the QR codes (our server's
// SVG) become data: images, where an SVG cannot run scripts; the login
// token lives in sessionStorage (gone with the tab) and travels only as a
// Bearer header.
import { onLoginEnd } from './dashboard/api.js';
import { byId } from './dom.js';
import { cancelErase, startErase, stopErase } from './dashboard/erase.js';
import { initLinks } from './dashboard/links.js';
import { logOut, startLogin, stopLogin } from './dashboard/login.js';
import { downloadCsv } from './dashboard/pro.js';
import { currentLogin, storeLogin } from './dashboard/login-token.js';
import { refresh, renderWho } from './dashboard/stats-view.js';
import { showError, showStatus } from './dashboard/status.js';

function showLogin() {
  stopErase();
  byId('app').hidden = true;
  byId('login').hidden = false;
  startLogin(showApp);
}

function showApp() {
  const login = currentLogin();
  if (!login) return showLogin();
  stopLogin();
  byId('login').hidden = true;
  byId('app').hidden = false;
  byId('erased').hidden = true;
  renderWho({ ...login, addresses: [] });
  refresh();
}

/** @param {string} message what was deleted, in words */
function erased(message) {
  // The deletion ended every login of the key, this one included.
  storeLogin(null);
  showLogin();
  const notice = byId('erased');
  notice.textContent = message;
  notice.hidden = false;
  showStatus(message, 'ok');
}

onLoginEnd((failure) => {
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
if (currentLogin()) showApp();
else showLogin();
