// The landing page: the live paid demo (402 -> pay -> retry with the proof),
// the directory, and what a fresh deployment still needs. Plain ES module, no
// build step; the QR code library (uqr, vendored in /vendor/) is loaded only
// when an invoice is shown.

import { jsonBody } from '/json-answer.js';

const $ = (id) => document.getElementById(id);
const POLL_MS = 1000;
const origin = window.location.origin;

for (const element of document.querySelectorAll('.origin')) element.textContent = origin;

// ---------------------------------------------------------------------------
// HTTP: never throws; {ok, status, data, error}

async function request(path, init = {}) {
  let response;
  try {
    response = await fetch(path, { cache: 'no-store', ...init });
  } catch {
    return { ok: false, status: 0, data: null, error: 'The server cannot be reached; check your connection.' };
  }
  const data = await jsonBody(response);
  const error = typeof data?.error === 'string' ? data.error : `The server answered ${response.status}`;
  return { ok: response.ok, status: response.status, data, error };
}

function showError(message) {
  const box = $('demo-error');
  box.textContent = message;
  box.hidden = false;
}

// ---------------------------------------------------------------------------
// What a fresh deployment is missing (GET /api/health lists it in words)

async function checkSetup() {
  const health = await request('/api/health');
  const problems = Array.isArray(health.data?.problems) ? health.data.problems.filter((p) => typeof p === 'string') : [];
  if (problems.length === 0) return;
  const list = $('setup-missing');
  list.replaceChildren(...problems.map((problem) => Object.assign(document.createElement('li'), { textContent: problem })));
  $('setup').hidden = false;
}

// ---------------------------------------------------------------------------
// The demo

const demoInfo = { priceSats: 1, devWallet: false };
let current; // {macaroon, invoice, paymentHash, priceSats, expiresAt}
let stopWaiting = () => {};

async function loadDemoInfo() {
  const demo = await request('/api/demo');
  if (!demo.ok) return;
  const paid = Array.isArray(demo.data.endpoints) ? demo.data.endpoints[0] : undefined;
  if (Number.isSafeInteger(paid?.priceSats)) demoInfo.priceSats = paid.priceSats;
  demoInfo.devWallet = demo.data.devWallet !== null && typeof demo.data.devWallet === 'object';
  $('demo-price').textContent = String(demoInfo.priceSats);
}

async function buy() {
  stopWaiting();
  $('demo-error').hidden = true;
  $('demo-result').hidden = true;
  const button = $('demo-buy');
  button.disabled = true;
  // The 402 is the expected answer: it carries the invoice and the token.
  const challenge = await request('/api/demo/btc-price');
  button.disabled = false;
  if (challenge.status !== 402 || typeof challenge.data?.invoice !== 'string' || typeof challenge.data?.macaroon !== 'string') {
    return showError(challenge.status === 402 ? 'The server sent a challenge this page does not understand.' : challenge.error);
  }
  current = challenge.data;
  await showInvoice(current);
  waitForPayment(current);
}

async function showInvoice(challenge) {
  const { renderSVG } = await import('/vendor/uqr-0.1.3.mjs');
  // Upper case lets the QR code use its compact alphanumeric mode (BOLT11 is case-insensitive).
  const svg = renderSVG(`lightning:${challenge.invoice}`.toUpperCase(), { ecc: 'M', border: 2 });
  $('demo-qr').src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
  $('demo-open').href = `lightning:${challenge.invoice}`;
  $('demo-bolt11').value = challenge.invoice;
  $('demo-amount').textContent = String(challenge.priceSats);
  $('demo-expiry').textContent = new Date(challenge.expiresAt).toLocaleTimeString();
  $('demo-devpay').hidden = !demoInfo.devWallet;
  $('demo-devpay').disabled = false;
  $('demo-webln').hidden = typeof window.webln?.sendPayment !== 'function';
  $('demo-waiting').textContent = 'Waiting for the payment…';
  $('demo-invoice').hidden = false;
}

/** Polls /api/demo/preimage until the invoice is paid (the proof for wallets that do not show it). */
function waitForPayment(challenge) {
  let stopped = false;
  let timer;
  stopWaiting = () => {
    stopped = true;
    clearTimeout(timer);
  };
  const poll = async () => {
    if (stopped) return;
    const answer = await request(`/api/demo/preimage?hash=${challenge.paymentHash}`);
    if (stopped) return;
    if (answer.status === 200 && typeof answer.data?.preimage === 'string') return paid(challenge, answer.data.preimage);
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
  const button = $('demo-devpay');
  button.disabled = true;
  const answer = await request('/api/dev/pay', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ invoice: current.invoice }),
  });
  if (answer.ok && typeof answer.data.preimage === 'string') return paid(current, answer.data.preimage);
  button.disabled = false;
  showError(answer.error);
}

async function payWithWebln() {
  try {
    await window.webln.enable();
    const { preimage } = await window.webln.sendPayment(current.invoice);
    if (typeof preimage === 'string') return paid(current, preimage);
  } catch (error) {
    showError(`The browser wallet did not pay: ${error?.message ?? error}`);
  }
}

let finishing;

/** Retries with the proof and shows the answer; once per invoice whoever noticed the payment first. */
async function paid(challenge, preimage) {
  if (finishing === challenge.paymentHash) return;
  finishing = challenge.paymentHash;
  stopWaiting();
  $('demo-waiting').textContent = 'Paid. Asking again with the proof…';
  const authorization = `L402 ${challenge.macaroon}:${preimage}`;
  const answer = await request('/api/demo/btc-price', { headers: { authorization } });
  if (!answer.ok || typeof answer.data?.usd !== 'number') return showError(answer.error);
  $('demo-invoice').hidden = true;
  $('demo-usd').textContent = new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD' }).format(answer.data.usd);
  $('demo-source').textContent = answer.data.source === 'simulated' ? 'simulated (no live price source answered)' : answer.data.source;
  const fetched = new Date(answer.data.fetchedAt);
  $('demo-time').dateTime = fetched.toISOString();
  $('demo-time').textContent = fetched.toLocaleString();
  const url = `${origin}/api/demo/btc-price`;
  $('demo-step-ask').textContent = `curl -i ${url}\n# 402 Payment Required\n# invoice: ${challenge.invoice}\n# token:   ${challenge.macaroon}`;
  $('demo-step-pay').textContent = demoInfo.devWallet
    ? `curl -X POST ${origin}/api/dev/pay -H 'content-type: application/json' -d '{"invoice":"${challenge.invoice}"}'\n# preimage: ${preimage}`
    : `# pay ${challenge.invoice} with any Lightning wallet\n# preimage: ${preimage}`;
  $('demo-step-retry').textContent = `curl ${url} -H "Authorization: ${authorization}"\n# ${JSON.stringify(answer.data)}`;
  $('demo-result').hidden = false;
  $('demo-usd').focus?.();
}

async function copyInvoice() {
  try {
    await navigator.clipboard.writeText(current.invoice);
    $('demo-waiting').textContent = 'Invoice copied. Waiting for the payment…';
  } catch {
    // No clipboard permission: the invoice is selected in its box for copying by hand.
    $('demo-bolt11').select();
  }
}

// ---------------------------------------------------------------------------
// The directory

async function loadDirectory() {
  const category = $('directory-category').value;
  const answer = await request(`/api/apis.json${category ? `?category=${encodeURIComponent(category)}` : ''}`);
  const list = $('directory-list');
  if (!answer.ok || !Array.isArray(answer.data?.apis)) {
    list.replaceChildren();
    $('directory-empty').textContent =
      answer.status === 503
        ? 'The directory is not available on this deployment yet (it needs a database).'
        : `The directory could not be loaded: ${answer.error}`;
    $('directory-empty').hidden = false;
    return;
  }
  list.replaceChildren(...answer.data.apis.map(directoryItem));
  $('directory-empty').textContent = category ? `No API is listed in ${category} yet.` : 'No API is listed yet.';
  $('directory-empty').hidden = answer.data.apis.length > 0;
}

function directoryItem(api) {
  const item = document.createElement('li');
  const head = document.createElement('div');
  head.className = 'api-head';
  const name = document.createElement('a');
  name.className = 'api-name';
  name.textContent = String(api.name);
  // Only web links: a listed URL is someone else's text.
  if (/^https?:\/\//i.test(String(api.url))) name.href = api.url;
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

$('demo-buy').addEventListener('click', buy);
$('demo-again').addEventListener('click', buy);
$('demo-devpay').addEventListener('click', payWithDevWallet);
$('demo-webln').addEventListener('click', payWithWebln);
$('demo-copy').addEventListener('click', copyInvoice);
$('directory-category').addEventListener('change', loadDirectory);
checkSetup();
loadDemoInfo();
loadDirectory();
