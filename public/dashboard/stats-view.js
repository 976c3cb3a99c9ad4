// @ts-check
// The logged-in view: who is logged in, the totals, the chart, the tables.
// Everything the server sent goes in with textContent, checked first.
import { fields, isJsonObject } from '../json-answer.js';
import { api } from './api.js';
import { dailySeries, drawSatsPerDay } from './chart.js';
import { byId } from '../dom.js';
import { formatCount, formatSats, formatTime, formatApproximateUsd, formatWholeUsd, isCount, isPositiveNumber } from './format.js';
import { renderLinks } from './links.js';
import { describeScope } from './pro.js';
import { currentLogin } from './login-token.js';
import { showError, showStatus } from './status.js';

/** @typedef {import('../../lib/service/records/stats.js').Stats} Stats */
/** @typedef {import('../../lib/service/records/price.js').BtcPrice} BtcPrice */
/** @typedef {import('../../lib/service/records/stats-queries.js').PaymentRecord} PaymentRecord */
/** @typedef {import('../../lib/service/records/stats-queries.js').CountAndSats} CountAndSats */
/** @typedef {import('../../lib/service/records/stats-queries.js').SessionStats} SessionStats */
/**
 * @template T
 * @typedef {import('../json-answer.js').Unchecked<T>} Unchecked
 */
/** `GET /api/login`: the login (api/login.ts) with the linked addresses. */
/** @typedef {import('../../lib/service/accounts/auth.js').Login & { addresses: string[], expiresAt: string }} LoginAnswer */

/** Asks for the login and the stats again, and shows them. */
export async function refresh() {
  const button = byId('refresh', HTMLButtonElement);
  button.disabled = true;
  try {
    const [who, stats] = await Promise.all([api('/api/login', { auth: true }), api('/api/stats', { auth: true })]);
    if (!currentLogin()) return; // the login ended meanwhile
    if (who.ok) renderWho(who.data);
    else showError(who);
    if (stats.ok) renderStats(stats.data);
    else showError(stats);
  } catch (error) {
    showStatus(`This page could not show the answer: ${error instanceof Error ? error.message : String(error)}`, 'error', 'RENDER');
  } finally {
    button.disabled = false;
  }
}

/** @param {Unchecked<LoginAnswer>} who */
export function renderWho(who) {
  byId('who-pubkey').textContent = typeof who.pubkey === 'string' ? who.pubkey : '';
  byId('who-role').textContent = who.admin === true ? 'admin' : 'owner';
  const expires = typeof who.expiresAt === 'string' ? Date.parse(who.expiresAt) : Number.NaN;
  byId('who-expiry').textContent = Number.isNaN(expires) ? '' : `· logged in until ${new Date(expires).toLocaleString()}`;
  renderLinks(Array.isArray(who.addresses) ? who.addresses : []);
}

/** @param {Unchecked<Stats>} stats */
function renderStats(stats) {
  /** @type {Unchecked<Stats['scope']>} */
  const scope = fields(stats.scope);
  const admin = scope.tier === 'admin';
  document.body.dataset.tier = typeof scope.tier === 'string' ? scope.tier : '';
  byId('scope-note').textContent = describeScope(scope);
  byId('stat-payments').textContent = formatCount(stats.totalPayments);
  byId('stat-sats').textContent = formatSats(stats.totalSats);
  byId('stat-fee-label').textContent = admin ? 'Service fee earned' : 'Service fee on your payments';
  byId('stat-fee').textContent = formatSats(stats.serviceFee);
  byId('stat-wallet-label').textContent = admin ? 'Service wallet' : 'Owed to you (not paid out yet)';
  byId('stat-wallet').textContent = formatSats(stats.walletSats);
  byId('stat-wallet-usd').textContent = walletInUsd(stats.walletSats, stats.walletUsdCents, fields(stats.btcPrice));
  /** @type {Unchecked<Stats['trend']>} */
  const trend = fields(stats.trend);
  byId('stat-trend-payments').textContent = formatCount(trend.payments7d);
  byId('stat-trend-sats').textContent = formatSats(trend.sats7d);
  drawSatsPerDay(byId('by-day'), dailySeries(fields(stats.byDay), scope.generatedAt));
  renderSessions(stats.sessions, admin);
  renderByOwner(fields(stats.byOwner));
  renderRecent(Array.isArray(stats.recent) ? stats.recent : []);
}

/**
 * The wallet in dollars, with the price it is reckoned at. Offline the
 * server has only its simulated price (btcPrice.source "simulated") and
 * gives no dollar figure of its own; the page reckons one at that price and
 * says so beside it, as the landing page's demo does, rather than showing a
 * price in one place and denying it in another.
 * @param {unknown} walletSats
 * @param {unknown} walletUsdCents
 * @param {Unchecked<BtcPrice>} price
 */
export function walletInUsd(walletSats, walletUsdCents, price) {
  const perBitcoin = isPositiveNumber(price.usd) ? `${formatWholeUsd(price.usd)} per BTC` : 'the BTC price';
  if (price.source === 'simulated' && isCount(walletSats) && isPositiveNumber(price.usd)) {
    return `${formatApproximateUsd((walletSats / 1e8) * price.usd)} at a simulated price of ${perBitcoin}`;
  }
  if (isCount(walletUsdCents) && typeof price.source === 'string') return `${formatApproximateUsd(walletUsdCents / 100)} at ${perBitcoin} (${price.source})`;
  return 'No BTC price to show it in USD';
}

/**
 * @param {string} text
 * @param {string} [className]
 */
function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

/**
 * @param {number} columns
 * @param {string} text
 */
function emptyRow(columns, text) {
  const row = document.createElement('tr');
  const td = cell(text, 'empty');
  td.colSpan = columns;
  row.append(td);
  return row;
}

/**
 * The prepaid sessions: what they spent and what became of their refunds.
 * Hidden when the answer has no `sessions` (a server from before them).
 * @param {unknown} value the answer's `sessions`
 * @param {boolean} admin
 */
function renderSessions(value, admin) {
  byId('sessions').hidden = !isJsonObject(value);
  /** @type {Unchecked<SessionStats>} */
  const sessions = fields(value);
  const none = sessions.count === 0;
  byId('sessions-none').hidden = !none;
  byId('sessions-detail').hidden = none;
  byId('sessions-count').textContent = formatCount(sessions.count);
  byId('sessions-units').textContent = formatCount(sessions.units);
  byId('sessions-spent').textContent = formatSats(sessions.spentSats);
  refundRow('refunds-paid', sessions.refunded);
  refundRow('refunds-owed', sessions.owed);
  /** @type {Unchecked<CountAndSats>} */
  const givenUp = fields(sessions.givenUp);
  const owing = isPositiveNumber(givenUp.count);
  refundRow('refunds-given-up', givenUp).classList.toggle('attention', owing);
  const note = byId('refunds-given-up-note');
  note.hidden = !owing;
  note.textContent = owing ? givenUpWarning(givenUp.count, givenUp.sats, admin) : '';
  /** @type {Unchecked<SessionStats['topUpsRefused']>} */
  const refused = fields(sessions.topUpsRefused);
  const turnedAway = isPositiveNumber(refused.count);
  const refusedNote = byId('topups-refused-note');
  refusedNote.hidden = !turnedAway;
  refusedNote.textContent = turnedAway ? refusedTopUpsWarning(refused.count, refused.sats, fields(refused.unused), admin) : '';
}

/**
 * Top-ups paid after their session's refund had started: not taken, so the
 * client may open a session with the payment; one nobody has used since was
 * received with nothing given for it.
 * @param {number} count
 * @param {unknown} sats
 * @param {Unchecked<CountAndSats>} unused
 * @param {boolean} admin
 */
function refusedTopUpsWarning(count, sats, unused, admin) {
  const one = count === 1;
  const refused = `${formatCount(count)} ${one ? 'top-up' : 'top-ups'} (${formatSats(sats)}) came after ${one ? "its session's refund" : "their sessions' refunds"} had started and ${one ? 'was' : 'were'} not taken: the client can open a new session with ${one ? 'its payment' : 'each payment'}.`;
  if (!isPositiveNumber(unused.count)) return `${refused} ${one ? 'It has' : 'Each has'} been used since.`;
  const left = unused.count === 1;
  const who = admin
    ? `Refund ${left ? 'it' : 'them'} by hand if the client asks: the session_refused_topups table lists each one with its payment hash and session.`
    : `The service's operator refunds ${left ? 'it' : 'them'} by hand if the client asks.`;
  return `${refused} ${formatCount(unused.count)} (${formatSats(unused.sats)}) ${left ? 'has' : 'have'} not been used since: received, with nothing given for ${left ? 'it' : 'them'}. ${who}`;
}

/**
 * What refunds given up mean, and who settles them: nothing retries them, so
 * unless someone pays them by hand the clients are never refunded.
 * @param {number} count
 * @param {unknown} sats
 * @param {boolean} admin
 */
function givenUpWarning(count, sats, admin) {
  const what = `${formatCount(count)} ${count === 1 ? 'refund' : 'refunds'} (${formatSats(sats)})`;
  const who = admin
    ? "Settle them by hand: the payment_sessions table lists each one (refund_state 'given-up') with its amount and the reason."
    : "The service's operator settles them by hand.";
  return `${what} could not be paid: every retry failed or the client's return invoice expired, and the service has stopped trying. The money is still owed to the clients. ${who}`;
}

/**
 * Fills a row of the refunds table: its count and its sats.
 * @param {string} id the row's
 * @param {unknown} value a CountAndSats from the answer
 * @returns {HTMLTableRowElement} the row
 */
function refundRow(id, value) {
  const row = byId(id, HTMLTableRowElement);
  /** @type {Unchecked<CountAndSats>} */
  const refunds = fields(value);
  const [, count, sats] = row.cells;
  if (!count || !sats) throw new Error(`dashboard.html's #${id} has no count and sats cells`);
  count.textContent = formatCount(refunds.count);
  // Plain numbers under the "Sats" heading, as in the table by address.
  sats.textContent = formatCount(refunds.sats);
  return row;
}

/** @param {Readonly<Record<string, unknown>>} byOwner */
function renderByOwner(byOwner) {
  const body = byId('by-owner', HTMLTableElement).tBodies[0];
  if (!body) throw new Error('dashboard.html has no body in #by-owner');
  const owners = Object.entries(byOwner)
    .filter(([, value]) => isJsonObject(value))
    .map(([address, value]) => {
      /** @type {Unchecked<CountAndSats>} */
      const totals = fields(value);
      return { address, count: totals.count, sats: isCount(totals.sats) ? totals.sats : 0 };
    });
  owners.sort((a, b) => b.sats - a.sats || a.address.localeCompare(b.address));
  const rows = owners.map(({ address, count, sats }) => {
    const row = document.createElement('tr');
    row.append(cell(address), cell(formatCount(count), 'num'), cell(formatCount(sats), 'num'));
    return row;
  });
  body.replaceChildren(...(rows.length ? rows : [emptyRow(3, 'No payments to a Lightning Address in this period.')]));
}

/** @param {unknown[]} recent */
function renderRecent(recent) {
  const body = byId('recent', HTMLTableElement).tBodies[0];
  if (!body) throw new Error('dashboard.html has no body in #recent');
  const rows = recent.filter(isJsonObject).map((value) => {
    /** @type {Unchecked<PaymentRecord>} */
    const payment = fields(value);
    const row = document.createElement('tr');
    const hash = cell('');
    const code = document.createElement('span');
    code.className = 'hash';
    const full = typeof payment.payment_hash === 'string' ? payment.payment_hash : '';
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
