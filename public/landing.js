// @ts-check
// The landing page: the live paid demo (402 -> pay -> retry with the proof),
// the directory, and what a fresh deployment still needs. Plain ES module, no
// build step; the QR code library (uqr, vendored in vendor/) is loaded only
// when an invoice is shown. Every text from the server goes in with
// textContent, checked first.
import { byId } from './dom.js';
import { fields, isJsonObject, jsonBody } from './json-answer.js';

/**
 * @template T
 * @typedef {import('./json-answer.js').Unchecked<T>} Unchecked
 */
/** @typedef {import('../lib/service/health.js').HealthReport} HealthReport */
/** @typedef {import('../lib/service/records/price.js').BtcPrice} BtcPrice */
/** @typedef {import('../lib/service/directory/entry.js').DirectoryEntry} DirectoryEntry */
/**
 * The demo's 402 body (the library's challenge, l402-paywall's paywall.ts): what the page needs of it, checked.
 * @typedef {{ invoice: string, macaroon: string, paymentHash: string, priceSats: number, expiresAt: string }} DemoChallenge
 */
/** @typedef {{ ok: boolean, status: number, data: unknown, error: string }} Answer */
/** A browser wallet (WebLN), when the visitor has one. */
/** @typedef {{ enable(): Promise<unknown>, sendPayment(invoice: string): Promise<unknown> }} WebLN */

const POLL_MS = 1000;
const origin = window.location.origin;

for (const element of document.querySelectorAll('.origin')) element.textContent = origin;

// ---------------------------------------------------------------------------
// HTTP: never throws

/**
 * @param {string} path
 * @param {RequestInit} [init]
 * @returns {Promise<Answer>}
 */
async function request(path, init = {}) {
  let response;
  try {
    response = await fetch(path, { cache: 'no-store', ...init });
  } catch {
    return { ok: false, status: 0, data: null, error: 'The server cannot be reached; check your connection.' };
  }
  const data = await jsonBody(response);
  const { error } = fields(data);
  return { ok: response.ok, status: response.status, data, error: typeof error === 'string' ? error : `The server answered ${response.status}` };
}

/** @param {string} message */
function showError(message) {
  const box = byId('demo-error');
  box.textContent = message;
  box.hidden = false;
}

// ---------------------------------------------------------------------------
// What a fresh deployment is missing (GET /api/health lists it in words)

async function checkSetup() {
  const health = await request('/api/health');
  /** @type {Unchecked<HealthReport>} */
  const report = fields(health.data);
  const problems = Array.isArray(report.problems) ? report.problems.filter((problem) => typeof problem === 'string') : [];
  if (problems.length === 0) return;
  byId('setup-missing').replaceChildren(...problems.map((problem) => Object.assign(document.createElement('li'), { textContent: problem })));
  byId('setup').hidden = false;
}

// ---------------------------------------------------------------------------
// The demo

const demoInfo = { priceSats: 1, devWallet: false };
/** @type {DemoChallenge | undefined} the invoice on screen */
let current;
let stopWaiting = () => {};

async function loadDemoInfo() {
  const demo = await request('/api/demo');
  if (!demo.ok) return;
  const { endpoints, devWallet } = fields(demo.data);
  const { priceSats } = fields(Array.isArray(endpoints) ? endpoints[0] : undefined);
  if (Number.isSafeInteger(priceSats)) demoInfo.priceSats = Number(priceSats);
  demoInfo.devWallet = isJsonObject(devWallet);
  byId('demo-price').textContent = String(demoInfo.priceSats);
}

/**
 * @param {unknown} body the 402's JSON
 * @returns {DemoChallenge | null}
 */
function readChallenge(body) {
  const { invoice, macaroon, paymentHash, priceSats, expiresAt } = fields(body);
  if (typeof invoice !== 'string' || typeof macaroon !== 'string' || typeof paymentHash !== 'string' || !/^[0-9a-f]{64}$/.test(paymentHash)) return null;
  return {
    invoice,
    macaroon,
    paymentHash,
    priceSats: Number.isSafeInteger(priceSats) ? Number(priceSats) : demoInfo.priceSats,
    expiresAt: typeof expiresAt === 'string' ? expiresAt : '',
  };
}

async function buy() {
  stopWaiting();
  byId('demo-error').hidden = true;
  byId('demo-result').hidden = true;
  const button = byId('demo-buy', HTMLButtonElement);
  button.disabled = true;
  // The 402 is the expected answer: it carries the invoice and the token.
  const answer = await request('/api/demo/btc-price');
  button.disabled = false;
  const challenge = answer.status === 402 ? readChallenge(answer.data) : null;
  if (!challenge) return showError(answer.status === 402 ? 'The server sent a challenge this page does not understand.' : answer.error);
  current = challenge;
  await showInvoice(challenge);
  waitForPayment(challenge);
}

/** @returns {WebLN | undefined} */
function browserWallet() {
  const { webln } = fields(/** @type {unknown} */ (window));
  const wallet = fields(webln);
  return typeof wallet.enable === 'function' && typeof wallet.sendPayment === 'function' ? /** @type {WebLN} */ (webln) : undefined;
}

/** @param {DemoChallenge} challenge */
async function showInvoice(challenge) {
  const { renderSVG } = await import('./vendor/uqr-0.1.3.mjs');
  // Upper case lets the QR code use its compact alphanumeric mode (BOLT11 is case-insensitive).
  const svg = renderSVG(`lightning:${challenge.invoice}`.toUpperCase(), { ecc: 'M', border: 2 });
  byId('demo-qr', HTMLImageElement).src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  byId('demo-open', HTMLAnchorElement).href = `lightning:${challenge.invoice}`;
  byId('demo-bolt11', HTMLTextAreaElement).value = challenge.invoice;
  byId('demo-amount').textContent = String(challenge.priceSats);
  const expires = Date.parse(challenge.expiresAt);
  byId('demo-expiry').textContent = Number.isNaN(expires) ? '–' : new Date(expires).toLocaleTimeString();
  const devPay = byId('demo-devpay', HTMLButtonElement);
  devPay.hidden = !demoInfo.devWallet;
  devPay.disabled = false;
  byId('demo-webln').hidden = browserWallet() === undefined;
  byId('demo-waiting').textContent = 'Waiting for the payment…';
  byId('demo-invoice').hidden = false;
}

/**
 * Polls /api/demo/preimage until the invoice is paid (the proof for wallets that do not show it).
 * @param {DemoChallenge} challenge
 */
function waitForPayment(challenge) {
  let stopped = false;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  stopWaiting = () => {
    stopped = true;
    clearTimeout(timer);
  };
  const poll = async () => {
    if (stopped) return;
    const answer = await request(`/api/demo/preimage?hash=${challenge.paymentHash}`);
    if (stopped) return;
    const { preimage } = fields(answer.data);
    if (answer.status === 200 && typeof preimage === 'string') return paid(challenge, preimage);
    if (answer.status === 202 || answer.status === 0 || answer.status >= 500) {
      timer = setTimeout(poll, POLL_MS);
      return;
    }
    stopWaiting();
    showError(answer.error);
  };
  timer = setTimeout(poll, POLL_MS);
}

async function payWithDevWallet() {
  const challenge = current;
  if (!challenge) return;
  const button = byId('demo-devpay', HTMLButtonElement);
  button.disabled = true;
  const answer = await request('/api/dev/pay', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice: challenge.invoice }),
  });
  const { preimage } = fields(answer.data);
  if (answer.ok && typeof preimage === 'string') return paid(challenge, preimage);
  button.disabled = false;
  showError(answer.error);
}

async function payWithWebln() {
  const [challenge, wallet] = [current, browserWallet()];
  if (!challenge || !wallet) return;
  try {
    await wallet.enable();
    const { preimage } = fields(await wallet.sendPayment(challenge.invoice));
    if (typeof preimage === 'string') return paid(challenge, preimage);
    showError('The browser wallet paid but did not hand over the proof (the preimage).');
  } catch (error) {
    showError(`The browser wallet did not pay: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** @type {string | undefined} the payment hash whose answer is being fetched */
let finishing;

/**
 * Retries with the proof and shows the answer; once per invoice whoever noticed the payment first.
 * @param {DemoChallenge} challenge
 * @param {string} preimage
 */
async function paid(challenge, preimage) {
  if (finishing === challenge.paymentHash) return;
  finishing = challenge.paymentHash;
  stopWaiting();
  byId('demo-waiting').textContent = 'Paid. Asking again with the proof…';
  const authorization = `L402 ${challenge.macaroon}:${preimage}`;
  const answer = await request('/api/demo/btc-price', { headers: { authorization } });
  /** @type {Unchecked<BtcPrice>} */
  const price = fields(answer.data);
  if (!answer.ok || typeof price.usd !== 'number') return showError(answer.error);
  byId('demo-invoice').hidden = true;
  byId('demo-usd').textContent = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(price.usd);
  byId('demo-source').textContent = price.source === 'simulated' ? 'simulated (no live price source answered)' : String(price.source);
  const fetched = typeof price.fetchedAt === 'string' ? new Date(price.fetchedAt) : new Date(Number.NaN);
  const time = byId('demo-time', HTMLTimeElement);
  time.dateTime = Number.isNaN(fetched.getTime()) ? '' : fetched.toISOString();
  time.textContent = Number.isNaN(fetched.getTime()) ? '–' : fetched.toLocaleString();
  const url = `${origin}/api/demo/btc-price`;
  byId('demo-step-ask').textContent = `curl -i ${url}\n# 402 Payment Required\n# invoice: ${challenge.invoice}\n# token:   ${challenge.macaroon}`;
  byId('demo-step-pay').textContent = demoInfo.devWallet
    ? `curl -X POST ${origin}/api/dev/pay -H 'content-type: application/json' -d '{"invoice":"${challenge.invoice}"}'\n# preimage: ${preimage}`
    : `# pay ${challenge.invoice} with any Lightning wallet\n# preimage: ${preimage}`;
  byId('demo-step-retry').textContent = `curl ${url} -H "Authorization: ${authorization}"\n# ${JSON.stringify(answer.data)}`;
  byId('demo-result').hidden = false;
  byId('demo-usd').focus();
}

async function copyInvoice() {
  if (!current) return;
  try {
    await navigator.clipboard.writeText(current.invoice);
    byId('demo-waiting').textContent = 'Invoice copied. Waiting for the payment…';
  } catch {
    // No clipboard permission: the invoice is selected in its box for copying by hand.
    byId('demo-bolt11', HTMLTextAreaElement).select();
  }
}

// ---------------------------------------------------------------------------
// The directory

async function loadDirectory() {
  const category = byId('directory-category', HTMLSelectElement).value;
  const answer = await request(`/api/apis.json${category ? `?category=${encodeURIComponent(category)}` : ''}`);
  const list = byId('directory-list');
  const empty = byId('directory-empty');
  const { apis } = fields(answer.data);
  if (!answer.ok || !Array.isArray(apis)) {
    list.replaceChildren();
    empty.textContent =
      answer.status === 503
        ? 'The directory is not available on this deployment yet (it needs a database).'
        : `The directory could not be loaded: ${answer.error}`;
    empty.hidden = false;
    return;
  }
  const entries = apis.filter(isJsonObject);
  list.replaceChildren(...entries.map(directoryItem));
  empty.textContent = category ? `No API is listed in ${category} yet.` : 'No API is listed yet.';
  empty.hidden = entries.length > 0;
}

/** @param {Unchecked<DirectoryEntry>} api */
function directoryItem(api) {
  const item = document.createElement('li');
  const head = document.createElement('div');
  head.className = 'api-head';
  const name = document.createElement('a');
  name.className = 'api-name';
  name.textContent = String(api.name);
  // Only web links: a listed URL is someone else's text.
  if (typeof api.url === 'string' && /^https?:\/\//i.test(api.url)) name.href = api.url;
  name.rel = 'noopener nofollow';
  const category = Object.assign(document.createElement('span'), { className: 'badge', textContent: String(api.category) });
  const price = Object.assign(document.createElement('span'), { className: 'api-price', textContent: `${Number(api.price_sats).toLocaleString('en-US')} sat` });
  head.append(name, category, price);
  item.append(head);
  if (api.description) item.append(Object.assign(document.createElement('p'), { className: 'muted small', textContent: String(api.description) }));
  item.append(Object.assign(document.createElement('code'), { className: 'api-url', textContent: String(api.url) }));
  return item;
}

// ---------------------------------------------------------------------------

byId('demo-buy').addEventListener('click', buy);
byId('demo-again').addEventListener('click', buy);
byId('demo-devpay').addEventListener('click', payWithDevWallet);
byId('demo-webln').addEventListener('click', payWithWebln);
byId('demo-copy').addEventListener('click', copyInvoice);
byId('directory-category').addEventListener('change', loadDirectory);
checkSetup();
loadDemoInfo();
loadDirectory();
