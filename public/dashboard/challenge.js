// @ts-check
// LNURL-auth challenges: the login and the erasure show one the same way (a
// QR code, a lightning: link, a copy button, a countdown) and poll for the
// wallet's signature the same way.
import { api, failure } from './api.js';
import { byId } from '../dom.js';
import { showError, showStatus } from './status.js';

/** @typedef {import('../../lib/service/accounts/lnurl-auth.js').Challenge} Challenge */
/** @typedef {import('./api.js').ApiSuccess} ApiSuccess */
/** @typedef {import('./api.js').ApiFailure} ApiFailure */

const POLL_MS = 1500;
const MAX_BACKOFF_MS = 10_000;
// Past a challenge's expiry the server says 404; this bounds the wait when it cannot be reached at all.
const EXPIRY_GRACE_MS = 30_000;

/**
 * The challenge in a `GET /api/lnurl-auth` or `POST /api/delete-data` answer, or null when it is not one.
 * @param {ApiSuccess} answer
 * @returns {Challenge | null}
 */
export function readChallenge(answer) {
  const { k1, lnurl, expiresAt, pollToken, qr } = answer.data;
  if (typeof k1 !== 'string' || typeof lnurl !== 'string' || typeof pollToken !== 'string' || typeof expiresAt !== 'string') return null;
  return { k1, lnurl, expiresAt, pollToken, qr: typeof qr === 'string' ? qr : '' };
}

/**
 * @typedef {object} ChallengeHandlers
 * @property {(answer: Readonly<Record<string, unknown>>) => void} signed the wallet signed: the poll's 200 answer
 * @property {(message: string) => void} expired the code can no longer be signed; `message` says why
 * @property {(failure: ApiFailure) => void} failed the server refused the poll for another reason
 */

/**
 * Shows `challenge` in the elements named `${prefix}-challenge`, `-qr`,
 * `-link`, `-copy` and `-expiry`, and polls `pollPath` until it is signed,
 * expires or is refused. Returns a function that stops it.
 * @param {'login' | 'erase'} prefix
 * @param {Challenge} challenge
 * @param {Headers} headers the answer's, for the server's clock
 * @param {string} pollPath
 * @param {ChallengeHandlers} handlers
 * @returns {() => void}
 */
export function runChallenge(prefix, challenge, headers, pollPath, handlers) {
  const expiresAt = Date.parse(challenge.expiresAt) - serverOffset(headers);
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  showChallenge(prefix, challenge);

  const countdown = byId(`${prefix}-expiry`);
  const tick = () => {
    const left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
    countdown.textContent = left > 0 ? `Code valid for ${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` : 'Code expired';
  };
  tick();
  const clock = setInterval(tick, 1000);
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    clearInterval(clock);
  };

  /** @param {number} delay */
  const poll = async (delay) => {
    if (stopped) return;
    const query = new URLSearchParams({ k1: challenge.k1, pollToken: challenge.pollToken });
    const result = await api(`${pollPath}?${query}`);
    if (stopped) return;
    if (result.ok && result.status === 200 && result.data.status === 'ok') {
      stop();
      return handlers.signed(result.data);
    }
    if (result.ok && result.status === 202) return schedule(POLL_MS);
    if (!result.ok && [401, 404, 410].includes(result.status)) {
      const reason =
        result.status === 404
          ? 'This code has expired.'
          : result.status === 410
            ? 'This code was already used (in another tab?).'
            : 'This page lost its claim to the code.';
      stop();
      return handlers.expired(`${reason} Get a new one to continue.`);
    }
    if (Date.now() > expiresAt + EXPIRY_GRACE_MS) {
      stop();
      return handlers.expired('This code has expired. Get a new one to continue.');
    }
    if (!result.ok && (result.status === 0 || result.status === 429 || result.status >= 500)) {
      // Transient: say so, and keep trying at a gentler pace.
      showError(result);
      return schedule(Math.max(result.retryAfter * 1000, Math.min(delay * 2, MAX_BACKOFF_MS)));
    }
    stop();
    handlers.failed(result.ok ? unexpected(result) : result);
  };
  /** @param {number} delay */
  const schedule = (delay) => {
    timer = setTimeout(() => poll(delay), delay);
  };
  schedule(POLL_MS);
  return stop;
}

/**
 * A 2xx poll answer that is neither "pending" nor "ok".
 * @param {ApiSuccess} answer
 * @returns {ApiFailure}
 */
function unexpected(answer) {
  const refusal = failure(answer.status, `The server answered "${String(answer.data.status)}", which this page does not understand`, 'UNEXPECTED_ANSWER');
  refusal.data = answer.data;
  return refusal;
}

/**
 * @param {'login' | 'erase'} prefix
 * @param {Challenge} challenge
 */
function showChallenge(prefix, challenge) {
  const image = byId(`${prefix}-qr`, HTMLImageElement);
  // Our server's SVG, shown as an image: scripts in an <img> SVG never run, and nothing is parsed into this page.
  if (challenge.qr.trimStart().startsWith('<svg')) {
    image.src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(challenge.qr)}`;
    image.hidden = false;
  } else {
    image.removeAttribute('src');
    image.hidden = true;
  }
  const link = byId(`${prefix}-link`, HTMLAnchorElement);
  link.href = `lightning:${challenge.lnurl}`;
  link.dataset.lnurl = challenge.lnurl;
  byId(`${prefix}-copy`).onclick = () => copyText(challenge.lnurl);
  byId(`${prefix}-challenge`).hidden = false;
}

/** @param {string} text */
async function copyText(text) {
  try {
    await navigator.clipboard.writeText(text);
    showStatus('Copied: paste it into your wallet', 'info');
  } catch {
    // No clipboard permission: let the person copy it by hand.
    window.prompt('Copy this code into your wallet:', text);
  }
}

/**
 * How far the server's clock is ahead of ours (from its Date header), so countdowns match its expiry.
 * @param {Headers} headers
 */
function serverOffset(headers) {
  const serverNow = Date.parse(headers.get('date') ?? '');
  if (Number.isNaN(serverNow)) return 0;
  const offset = serverNow - Date.now();
  // The header has one-second precision: smaller differences are noise.
  return Math.abs(offset) > 2000 ? offset : 0;
}
