// The operators' dashboard: LNURL-auth login, private stats, linked addresses,
// right to erasure. A plain ES module with no build step and no dependencies
// (but json-answer.js, shared with the landing page).
//
// Safety rules this file keeps: every text from the server goes in with
// textContent (never innerHTML); the QR code (our server's SVG) becomes a
// data: image, where an SVG cannot run scripts; the session token lives in
// sessionStorage (gone with the tab) and travels only as a Bearer header.

import { jsonBody } from '/json-answer.js';

const SESSION_KEY = 'l402.dashboard.session';
const POLL_MS = 1500;
const MAX_BACKOFF_MS = 10_000;
// Past a challenge's expiry the server says 404; this bounds the wait when it cannot be reached at all.
const EXPIRY_GRACE_MS = 30_000;
const CHART_DAYS = 60;
const DAY_MS = 86_400_000;

const $ = (id) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`dashboard.html has no #${id}`);
  return element;
};
const numberFormat = new Intl.NumberFormat('en-US');
const usdFormat = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' });

/** A count for display: integers get thousands separators; anything else is a dash. */
function formatCount(value) {
  return Number.isSafeInteger(value) ? numberFormat.format(value) : '–';
}

function formatSats(value) {
  return Number.isSafeInteger(value) ? `${numberFormat.format(value)} sat` : '–';
}

function formatTime(iso) {
  const time = Date.parse(iso);
  return Number.isNaN(time) ? String(iso ?? '') : new Date(time).toLocaleString();
}

// ---------------------------------------------------------------------------
// Status area

let statusTimer;

/** Shows a message for people at the top of the page; errors stay until replaced. */
function showStatus(message, kind = 'info', code = '') {
  const status = $('status');
  clearTimeout(statusTimer);
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
  if (kind === 'info') statusTimer = setTimeout(() => (status.hidden = true), 6000);
}

function showError(result) {
  showStatus(result.error, 'error', result.code);
}

function clearStatus() {
  clearTimeout(statusTimer);
  $('status').hidden = true;
}

// ---------------------------------------------------------------------------
// Session (sessionStorage: one tab, gone when it closes)

let session = readStoredSession();

function readStoredSession() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null');
    return stored && typeof stored.token === 'string' ? stored : null;
  } catch {
    return null;
  }
}

function storeSession(value) {
  session = value;
  try {
    if (value) sessionStorage.setItem(SESSION_KEY, JSON.stringify(value));
    else sessionStorage.removeItem(SESSION_KEY);
  } catch {
    // Storage refused (private mode): the session lasts as long as this page.
  }
}

// ---------------------------------------------------------------------------
// HTTP: never throws; every answer becomes {ok, status, data, error, code, retryAfter}

async function api(path, { method = 'GET', body, auth = false, expect = 'json' } = {}) {
  const headers = {};
  if (auth) {
    if (!session) return sessionEnded({ ok: false, status: 401, error: 'Log in first', code: 'SESSION_REQUIRED' });
    headers.authorization = `Bearer ${session.token}`;
  }
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
  } catch {
    return { ok: false, status: 0, error: 'The server cannot be reached; check your connection', code: 'NETWORK' };
  }
  const retryAfter = Number(response.headers.get('retry-after')) || 0;
  if (response.ok && expect === 'blob') {
    try {
      return { ok: true, status: response.status, blob: await response.blob(), headers: response.headers };
    } catch {
      return { ok: false, status: 0, error: 'The download was interrupted; try again', code: 'NETWORK' };
    }
  }
  const data = await jsonBody(response);
  if (response.ok && data !== null && typeof data === 'object') return { ok: true, status: response.status, data, headers: response.headers };
  const result = {
    ok: false,
    status: response.status,
    data,
    retryAfter,
    error:
      typeof data?.error === 'string'
        ? data.error
        : response.ok
          ? 'The server sent an answer this page does not understand'
          : `The server answered ${response.status} ${response.statusText}`.trim(),
    code: typeof data?.code === 'string' ? data.code : `HTTP_${response.status}`,
  };
  if (auth && response.status === 401) return sessionEnded(result);
  return result;
}

/** A 401 on a session call: the session is over (expired, revoked, erased); back to the login. */
function sessionEnded(result) {
  if (session) {
    storeSession(null);
    showLogin();
    showStatus(`${result.error}`, 'error', result.code);
  }
  return result;
}

// ---------------------------------------------------------------------------
// LNURL-auth challenges (login and erasure share the shape and the polling)

/**
 * Shows a challenge's QR code, link and countdown in the elements named
 * `${prefix}-qr`, `-link`, `-copy`, `-expiry`, and polls `pollPath` until it
 * is signed, expires or is refused. Returns a function that stops it.
 */
function runChallenge(prefix, challenge, serverOffsetMs, pollPath, handlers) {
  const expiresAt = Date.parse(challenge.expiresAt) - serverOffsetMs;
  let stopped = false;
  let timer;
  showChallenge(prefix, challenge);

  const tick = () => {
    const left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
    $(`${prefix}-expiry`).textContent = left > 0 ? `Code valid for ${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` : 'Code expired';
  };
  tick();
  const clock = setInterval(tick, 1000);
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    clearInterval(clock);
  };
  const finish = (handler, ...args) => {
    stop();
    handler(...args);
  };

  const poll = async (delay) => {
    if (stopped) return;
    const query = new URLSearchParams({ k1: challenge.k1, pollToken: challenge.pollToken });
    const result = await api(`${pollPath}?${query}`);
    if (stopped) return;
    if (result.ok && result.status === 200 && result.data.status === 'ok') return finish(handlers.signed, result.data);
    if (result.ok && result.status === 202) return schedule(POLL_MS);
    if (result.status === 404 || result.status === 410 || result.status === 401) {
      const reason =
        result.status === 404
          ? 'This code has expired.'
          : result.status === 410
            ? 'This code was already used (in another tab?).'
            : 'This page lost its claim to the code.';
      return finish(handlers.expired, `${reason} Get a new one to continue.`);
    }
    if (Date.now() > expiresAt + EXPIRY_GRACE_MS) return finish(handlers.expired, 'This code has expired. Get a new one to continue.');
    if (result.status === 0 || result.status === 429 || result.status >= 500) {
      // Transient: say so, and keep trying at a gentler pace.
      showError(result);
      return schedule(Math.max(result.retryAfter * 1000, Math.min(delay * 2, MAX_BACKOFF_MS)));
    }
    finish(handlers.failed, result);
  };
  const schedule = (delay) => {
    timer = setTimeout(() => poll(delay), delay);
  };
  schedule(POLL_MS);
  return stop;
}

function showChallenge(prefix, challenge) {
  const img = $(`${prefix}-qr`);
  // Our server's SVG, shown as an image: scripts in an <img> SVG never run, and nothing is parsed into this page.
  if (typeof challenge.qr === 'string' && challenge.qr.trimStart().startsWith('<svg')) {
    img.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(challenge.qr)}`;
    img.hidden = false;
  } else {
    img.removeAttribute('src');
    img.hidden = true;
  }
  const link = $(`${prefix}-link`);
  link.href = `lightning:${challenge.lnurl}`;
  link.dataset.lnurl = challenge.lnurl;
  $(`${prefix}-copy`).onclick = () => copyText(challenge.lnurl);
  $(`${prefix}-challenge`).hidden = false;
}

async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    showStatus('Copied: paste it into your wallet', 'info');
  } catch {
    // No clipboard permission: let the person copy it by hand.
    window.prompt('Copy this code into your wallet:', text);
  }
}

/** How far the server's clock is ahead of ours (from its Date header), so countdowns match its expiry. */
function serverOffset(headers) {
  const serverNow = Date.parse(headers?.get('date') ?? '');
  if (Number.isNaN(serverNow)) return 0;
  const offset = serverNow - Date.now();
  // The header has one-second precision: smaller differences are noise.
  return Math.abs(offset) > 2000 ? offset : 0;
}

// ---------------------------------------------------------------------------
// Login

let stopLogin = () => {};

async function startLogin() {
  stopLogin();
  $('login-expired').hidden = true;
  $('login-challenge').hidden = true;
  const result = await api('/api/lnurl-auth');
  if (!result.ok || typeof result.data.k1 !== 'string' || typeof result.data.lnurl !== 'string') {
    if (result.ok) result.error = 'The server sent a login code this page does not understand';
    showError(result);
    return showExpired('No login code right now.');
  }
  offerDevLogin(result.data.k1);
  stopLogin = runChallenge('login', result.data, serverOffset(result.headers), '/api/lnurl-auth', {
    signed: (body) => {
      storeSession({ token: body.token, pubkey: body.pubkey, admin: body.admin === true, expiresAt: body.expiresAt });
      clearStatus();
      showApp();
    },
    expired: showExpired,
    failed: (failure) => {
      showError(failure);
      showExpired('The login did not go through.');
    },
  });
}

// Local runs with the embedded dev node (GET /api/demo says so): the server signs this
// challenge with its development key, as a wallet would; the poll above then logs in.
let devLoginOffered;

async function offerDevLogin(k1) {
  const button = $('login-dev');
  devLoginOffered ??= api('/api/demo').then((result) => result.ok && result.data.devLogin !== null && typeof result.data.devLogin === 'object');
  button.hidden = !(await devLoginOffered);
  button.disabled = false;
  button.onclick = async () => {
    button.disabled = true;
    const signed = await api('/api/dev/login', { method: 'POST', body: { k1 } });
    if (!signed.ok) {
      button.disabled = false;
      showStatus(signed.data?.reason ?? signed.error, 'error', signed.code);
    }
  };
}

function showExpired(message) {
  $('login-challenge').hidden = true;
  $('login-expired-text').textContent = message;
  $('login-expired').hidden = false;
}

function showLogin() {
  stopErase();
  $('app').hidden = true;
  $('login').hidden = false;
  startLogin();
}

async function logout() {
  const button = $('logout');
  button.disabled = true;
  const result = await api('/api/session', { method: 'DELETE', auth: true });
  button.disabled = false;
  // Logged out either way from this page's point of view; a failure is still worth saying.
  if (!result.ok && result.status !== 401) showError(result);
  else showStatus('Logged out', 'info');
  storeSession(null);
  showLogin();
}

// ---------------------------------------------------------------------------
// The logged-in view

function showApp() {
  stopLogin();
  $('login').hidden = true;
  $('app').hidden = false;
  $('erased').hidden = true;
  renderWho({ ...session, addresses: [] });
  refresh();
}

async function refresh() {
  const button = $('refresh');
  button.disabled = true;
  try {
    const [who, stats] = await Promise.all([api('/api/session', { auth: true }), api('/api/stats', { auth: true })]);
    if (!session) return; // the session ended meanwhile
    if (who.ok) renderWho(who.data);
    else showError(who);
    if (stats.ok) renderStats(stats.data);
    else showError(stats);
  } catch (error) {
    showStatus(`This page could not show the answer: ${error.message}`, 'error', 'RENDER');
  } finally {
    button.disabled = false;
  }
}

function renderWho(who) {
  $('who-pubkey').textContent = String(who.pubkey ?? '');
  $('who-role').textContent = who.admin ? 'admin' : 'owner';
  const expires = Date.parse(who.expiresAt);
  $('who-expiry').textContent = Number.isNaN(expires) ? '' : `· session until ${new Date(expires).toLocaleString()}`;
  renderLinks(Array.isArray(who.addresses) ? who.addresses : []);
}

function renderStats(stats) {
  const tier = stats.scope?.tier;
  const admin = tier === 'admin';
  document.body.dataset.tier = String(tier ?? '');
  $('scope-note').textContent =
    tier === 'admin'
      ? 'Full history of every owner (admin).'
      : tier === 'pro'
        ? 'Full history of your linked addresses (Pro).'
        : 'The last 7 days of your linked addresses (free). Full history and CSV export come with Pro.';
  if (tier !== 'admin' && Array.isArray(stats.scope?.addresses) && stats.scope.addresses.length === 0) {
    $('scope-note').textContent = 'No Lightning Address linked yet: link the ones you receive payments at (below) to see their statistics.';
  }
  $('stat-payments').textContent = formatCount(stats.totalPayments);
  $('stat-sats').textContent = formatSats(stats.totalSats);
  $('stat-fee-label').textContent = admin ? 'Service fee earned' : 'Service fee on your payments';
  $('stat-fee').textContent = formatSats(stats.serviceFee);
  $('stat-wallet-label').textContent = admin ? 'Service wallet' : 'Owed to you (not paid out yet)';
  $('stat-wallet').textContent = formatSats(stats.walletSats);
  $('stat-wallet-usd').textContent = Number.isSafeInteger(stats.walletUsdCents)
    ? `≈ ${usdFormat.format(stats.walletUsdCents / 100)}${typeof stats.btcPrice?.source === 'string' ? ` (BTC price: ${stats.btcPrice.source})` : ''}`
    : 'USD: no live BTC price';
  $('stat-trend-payments').textContent = formatCount(stats.trend?.payments7d);
  $('stat-trend-sats').textContent = formatSats(stats.trend?.sats7d);
  renderByDay(isRecord(stats.byDay) ? stats.byDay : {}, stats.scope?.generatedAt);
  renderByOwner(isRecord(stats.byOwner) ? stats.byOwner : {});
  renderRecent(Array.isArray(stats.recent) ? stats.recent : []);
}

function isRecord(value) {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** CSS bars, one per UTC day (days without payments included), the last CHART_DAYS of them. */
function renderByDay(byDay, generatedAt) {
  const chart = $('by-day');
  const days = Object.keys(byDay)
    .filter((day) => /^\d{4}-\d{2}-\d{2}$/.test(day))
    .sort();
  const endTime = Math.max(Date.parse(String(generatedAt ?? '').slice(0, 10)) || 0, days.length ? Date.parse(days.at(-1)) : 0);
  if (days.length === 0 || !endTime) {
    const empty = document.createElement('p');
    empty.className = 'empty';
    empty.textContent = 'No payments in this period.';
    chart.replaceChildren(empty);
    $('by-day-first').textContent = '';
    $('by-day-last').textContent = '';
    return;
  }
  const startTime = Math.max(Date.parse(days[0]), endTime - (CHART_DAYS - 1) * DAY_MS);
  const series = [];
  for (let time = startTime; time <= endTime; time += DAY_MS) {
    const day = new Date(time).toISOString().slice(0, 10);
    const entry = byDay[day];
    series.push({ day, count: Number(entry?.count) || 0, sats: Number(entry?.sats) || 0 });
  }
  const max = Math.max(1, ...series.map((point) => point.sats));
  chart.replaceChildren(
    ...series.map((point) => {
      const bar = document.createElement('div');
      bar.className = point.sats > 0 ? 'bar' : 'bar zero';
      // CSSOM, not a style attribute: allowed by the page's CSP.
      bar.style.height = point.sats > 0 ? `${Math.max(2, (point.sats / max) * 100)}%` : '1px';
      bar.title = `${point.day}: ${formatCount(point.count)} payments, ${formatSats(point.sats)}`;
      bar.dataset.day = point.day;
      bar.dataset.sats = String(point.sats);
      return bar;
    }),
  );
  chart.setAttribute('aria-label', `Sats per day from ${series[0].day} to ${series.at(-1).day}; most in a day: ${formatSats(max)}`);
  $('by-day-first').textContent = series[0].day;
  $('by-day-last').textContent = series.at(-1).day;
}

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

function emptyRow(columns, text) {
  const row = document.createElement('tr');
  const td = cell(text, 'empty');
  td.colSpan = columns;
  row.append(td);
  return row;
}

function renderByOwner(byOwner) {
  const body = $('by-owner').tBodies[0];
  const rows = Object.entries(byOwner)
    .filter(([, value]) => isRecord(value))
    .sort(([a, x], [b, y]) => (Number(y.sats) || 0) - (Number(x.sats) || 0) || a.localeCompare(b))
    .map(([address, value]) => {
      const row = document.createElement('tr');
      row.append(cell(address), cell(formatCount(value.count), 'num'), cell(formatCount(value.sats), 'num'));
      return row;
    });
  body.replaceChildren(...(rows.length ? rows : [emptyRow(3, 'No payments to a Lightning Address in this period.')]));
}

function renderRecent(recent) {
  const body = $('recent').tBodies[0];
  const rows = recent.filter(isRecord).map((payment) => {
    const row = document.createElement('tr');
    const hash = cell('');
    const code = document.createElement('span');
    code.className = 'hash';
    const full = String(payment.payment_hash ?? '');
    code.textContent = full.length > 16 ? `${full.slice(0, 16)}…` : full;
    code.title = full;
    hash.append(code);
    row.append(
      cell(formatTime(payment.paid_at)),
      cell(payment.endpoint == null ? '–' : String(payment.endpoint)),
      cell(formatCount(payment.amount_sats), 'num'),
      cell(payment.owner_address == null ? '–' : String(payment.owner_address)),
      hash,
    );
    return row;
  });
  body.replaceChildren(...(rows.length ? rows : [emptyRow(5, 'No payments in this period.')]));
}

async function downloadCsv() {
  const button = $('csv');
  button.disabled = true;
  const result = await api('/api/stats?format=csv', { auth: true, expect: 'blob' });
  button.disabled = false;
  if (!result.ok) return showError(result);
  const disposition = result.headers.get('content-disposition') ?? '';
  const filename = /filename="([^"]+)"/.exec(disposition)?.[1] ?? 'payments.csv';
  const url = URL.createObjectURL(result.blob);
  const anchor = document.createElement('a');
  anchor.href = url;
  anchor.download = filename;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
  showStatus(`Downloaded ${filename}`, 'info');
}

// ---------------------------------------------------------------------------
// Linked addresses

function renderLinks(addresses) {
  const list = $('link-list');
  if (addresses.length === 0) {
    const item = document.createElement('li');
    item.className = 'muted';
    item.textContent = 'No address linked yet.';
    return list.replaceChildren(item);
  }
  list.replaceChildren(
    ...addresses.map((address) => {
      const item = document.createElement('li');
      const name = document.createElement('span');
      name.textContent = String(address);
      const remove = document.createElement('button');
      remove.type = 'button';
      remove.className = 'secondary';
      remove.textContent = 'Remove';
      remove.onclick = () => unlinkAddress(String(address), remove);
      item.append(name, remove);
      return item;
    }),
  );
}

let pendingAddress = '';

async function startLink(event) {
  event.preventDefault();
  const address = $('link-address').value.trim();
  if (!address) return showStatus('Enter a Lightning Address, like name@your-wallet.com', 'error', 'ADDRESS_REQUIRED');
  const button = event.submitter ?? $('link-start').querySelector('button');
  button.disabled = true;
  showStatus(`Paying 1 sat to ${address}…`, 'info');
  const result = await api('/api/links', { method: 'POST', body: { address }, auth: true });
  button.disabled = false;
  if (!result.ok) return showError(result);
  if (result.data.status === 'linked') {
    showStatus(`${result.data.address} is linked`, 'ok');
    $('link-address').value = '';
    return refresh();
  }
  pendingAddress = String(result.data.address ?? address);
  const expires = Date.parse(result.data.expiresAt);
  $('link-sent').textContent =
    `We sent 1 sat to ${pendingAddress} with a code in the payment comment (like "L402 link code 7KQ2-M9XD"). ` +
    `Find it in that wallet's payment list and enter it below` +
    (Number.isNaN(expires) ? '.' : ` before ${new Date(expires).toLocaleTimeString()}.`);
  $('link-start').hidden = true;
  $('link-confirm').hidden = false;
  $('link-code').value = '';
  $('link-code').focus();
  clearStatus();
}

async function confirmLink(event) {
  event.preventDefault();
  const code = $('link-code').value.trim();
  if (!code) return showStatus('Enter the code from the payment comment', 'error', 'CODE_REQUIRED');
  const button = event.submitter ?? $('link-confirm').querySelector('button[type=submit]');
  button.disabled = true;
  const result = await api('/api/links', { method: 'POST', body: { address: pendingAddress, code }, auth: true });
  button.disabled = false;
  if (!result.ok) {
    showError(result);
    // These codes mean this code is gone: a new one has to be sent.
    if (['LINK_CODE_NOT_FOUND', 'TOO_MANY_ATTEMPTS'].includes(result.code) || result.data?.attemptsLeft === 0) resetLinkForm(false);
    return;
  }
  showStatus(`${pendingAddress} is linked`, 'ok');
  resetLinkForm(true);
  refresh();
}

function resetLinkForm(clearAddress) {
  $('link-confirm').hidden = true;
  $('link-start').hidden = false;
  if (clearAddress) $('link-address').value = '';
  pendingAddress = '';
}

async function unlinkAddress(address, button) {
  if (!window.confirm(`Remove ${address}? Linking it again costs another 1-sat proof.`)) return;
  button.disabled = true;
  const result = await api('/api/links', { method: 'DELETE', body: { address }, auth: true });
  button.disabled = false;
  if (!result.ok) return showError(result);
  showStatus(`${address} removed`, 'info');
  refresh();
}

// ---------------------------------------------------------------------------
// Right to erasure

let stopErase = () => {};

async function startErase() {
  stopErase();
  const button = $('erase-start');
  button.disabled = true;
  const result = await api('/api/delete-data', { method: 'POST' });
  button.disabled = false;
  if (!result.ok || typeof result.data.k1 !== 'string') {
    if (result.ok) result.error = 'The server sent a code this page does not understand';
    return showError(result);
  }
  button.hidden = true;
  showStatus('Scan the code with your wallet to confirm the deletion', 'info');
  stopErase = runChallenge('erase', result.data, serverOffset(result.headers), '/api/delete-data', {
    signed: (body) => {
      endErase();
      const deleted = isRecord(body.deleted) ? body.deleted : {};
      const message = `Deleted ${formatCount(deleted.payments)} payment records, ${formatCount(deleted.links)} linked addresses and ${formatCount(deleted.sessions)} sessions.`;
      // The deletion ended every session of the key, this one included.
      storeSession(null);
      showLogin();
      $('erased').textContent = message;
      $('erased').hidden = false;
      showStatus(message, 'ok');
    },
    expired: (message) => {
      endErase();
      showStatus(message, 'error', 'CHALLENGE_ENDED');
    },
    failed: (failure) => {
      endErase();
      showError(failure);
    },
  });
}

function endErase() {
  stopErase();
  stopErase = () => {};
  $('erase-challenge').hidden = true;
  $('erase-start').hidden = false;
}

// ---------------------------------------------------------------------------

function main() {
  $('login-new').addEventListener('click', () => startLogin());
  $('logout').addEventListener('click', logout);
  $('refresh').addEventListener('click', refresh);
  $('csv').addEventListener('click', downloadCsv);
  $('link-start').addEventListener('submit', startLink);
  $('link-confirm').addEventListener('submit', confirmLink);
  $('link-cancel').addEventListener('click', () => resetLinkForm(false));
  $('erase-start').addEventListener('click', startErase);
  $('erase-cancel').addEventListener('click', () => {
    endErase();
    // Only the page stops waiting: a wallet that already has the code can still sign it, and that signature is the consent.
    showStatus('Stopped waiting for the wallet', 'info');
  });
  if (session) showApp();
  else showLogin();
}

main();
