// @ts-check
// The landing page: the live paid demo (402 -> pay -> retry with the proof),
// the prepaid session demo (landing-session.js), the directory, and what a
// fresh deployment still needs. Plain ES module, no
// build step; the QR code library (uqr, vendored in vendor/) is loaded only
// when an invoice is shown. Every text from the server goes in with
// textContent, checked first.
import { byId } from './dom.js';
import { fields, isJsonObject } from './json-answer.js';
import { invoiceBox } from './invoice.js';
import { prepaidSessionDemo } from './landing-session.js';
import { request } from './request.js';

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
const origin = window.location.origin;

for (const element of document.querySelectorAll('.origin')) element.textContent = origin;

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

/** What /api/demo says: the price, and whether the dev wallet is here (the prepaid session demo reads it too). */
const demoInfo = { priceSats: 1, devWallet: false };
const invoice = invoiceBox('demo', { onPaid: paid, onError: showError });

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

/** @type {Map<string, DemoChallenge>} the challenges shown, by payment hash */
const shown = new Map();

async function buy() {
  invoice.stop();
  byId('demo-error').hidden = true;
  byId('demo-result').hidden = true;
  const button = byId('demo-buy', HTMLButtonElement);
  button.disabled = true;
  // The 402 is the expected answer: it carries the invoice and the token.
  const answer = await request('/api/demo/btc-price');
  button.disabled = false;
  const challenge = answer.status === 402 ? readChallenge(answer.data) : null;
  if (!challenge) return showError(answer.status === 402 ? 'The server sent a challenge this page does not understand.' : answer.error);
  shown.clear();
  shown.set(challenge.paymentHash, challenge);
  const { invoice: bolt11, paymentHash, priceSats, expiresAt } = challenge;
  await invoice.show({ invoice: bolt11, paymentHash, amountSats: priceSats, expiresAt, devWallet: demoInfo.devWallet });
}

/**
 * Retries with the proof and shows the answer (the invoice box hands each invoice's preimage over once).
 * @param {string} preimage
 * @param {import('./invoice.js').InvoiceOffer} offer
 */
async function paid(preimage, offer) {
  const challenge = shown.get(offer.paymentHash);
  if (!challenge) return;
  invoice.say('Paid. Asking again with the proof…');
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
byId('directory-category').addEventListener('change', loadDirectory);
prepaidSessionDemo(demoInfo);
checkSetup();
loadDemoInfo();
loadDirectory();
