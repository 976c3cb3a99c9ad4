// @ts-check
// The landing page's prepaid session demo (#session), step by step: the 402's
// session challenge on GET /api/demo/stream, its deposit paid, the session
// opened with the preimage and a return invoice, the stream read chunk by
// chunk as the balance ticks down, the pause for a top-up (a fresh 402's
// deposit, paid, sent as topUp; the held stream resumes by itself), and the
// close with its refund. The wire format is prepaid-session.js's; the
// invoices are shown by invoice.js, as the pay-per-request demo's.
import { byId } from './dom.js';
import { invoiceBox } from './invoice.js';
import { fields, jsonBody } from './json-answer.js';
import { readSessionOffer, returnInvoiceProblem, serverSentEvents, sessionCredential } from './prepaid-session.js';
import { answerOf, postJson, request } from './request.js';

/** @typedef {import('./prepaid-session.js').SessionOffer} SessionOffer */
/** @typedef {import('./request.js').Answer} Answer */
/**
 * The session on screen. Amounts in sats, as the server states them (its unit price is whole sats).
 * @typedef {object} Session
 * @property {string} url the stream's URL, with the chunks asked for
 * @property {SessionOffer} offer the challenge it was opened with (echoed in bearer and close)
 * @property {string} preimage the deposit's preimage: the session's key, never shown
 * @property {string} returnHash the dev wallet's return invoice's payment hash ('' for another wallet's)
 * @property {number} depositedSats
 * @property {number} spentSats
 * @property {boolean} open
 */

const STREAM_ROUTE = '/api/demo/stream';
const sats = (/** @type {number} */ amount) => `${amount.toLocaleString('en-US', { maximumFractionDigits: 3 })} sat${amount === 1 ? '' : 's'}`;

/** @param {{ readonly devWallet: boolean }} demo what /api/demo said (read when an invoice is shown: it loads meanwhile) */
export function prepaidSessionDemo(demo) {
  const step = (/** @type {string} */ name) => byId(`session-step-${name}`);
  const text = (/** @type {string} */ id, /** @type {string} */ value) => {
    byId(id).textContent = value;
  };
  const returnField = byId('session-return', HTMLTextAreaElement);

  /** @type {SessionOffer | undefined} the offer being paid to open a session */
  let opening;
  /** @type {string} the opening deposit's preimage, once paid */
  let depositPreimage = '';
  let openingUrl = '';
  /** The return invoice the dev wallet made, and its payment hash, to see it paid after the close. */
  let devReturn = '';
  let devReturnHash = '';
  /** @type {Session | undefined} */
  let session;
  /** @type {SessionOffer | undefined} the fresh 402's deposit being paid to top up */
  let topUpOffer;
  let topUpsPaid = 0;

  // A deposit's preimage (and a top-up's) is never handed out by the server: the dev wallet, a browser wallet or the visitor gives it.
  const deposit = invoiceBox('deposit', { onPaid: depositPaid, onError: showError, pastePreimage: true });
  const topUp = invoiceBox('topup', { onPaid: topUpPaid, onError: showError, pastePreimage: true });

  /** @param {string} message @param {string} [code] */
  function showError(message, code = '') {
    text('session-error', code ? `${message} (${code})` : message);
    byId('session-error').hidden = false;
  }

  /** @param {Answer} answer */
  const showRefusal = (answer) => showError(answer.error, answer.code);

  function render() {
    const [depositedSats, spentSats] = [session?.depositedSats ?? 0, session?.spentSats ?? 0];
    text('session-deposited', String(depositedSats));
    text('session-spent', String(spentSats));
    text('session-balance', String(depositedSats - spentSats));
  }

  function reset() {
    deposit.stop();
    topUp.stop();
    opening = topUpOffer = session = undefined;
    depositPreimage = devReturn = devReturnHash = '';
    topUpsPaid = 0;
    for (const name of ['offer', 'deposit', 'open', 'stream', 'topup', 'close']) step(name).hidden = true;
    for (const id of [
      'session-error',
      'session-closed',
      'session-deposit-paid',
      'session-topup-done',
      'session-return-problem',
      'session-more',
      'session-opened',
    ])
      byId(id).hidden = true;
    byId('session-open-form').hidden = false;
    byId('deposit-invoice').hidden = byId('topup-invoice').hidden = true;
    text('session-words', '');
    text('session-refunded', '–');
    byId('session-open', HTMLButtonElement).disabled = false;
    byId('session-close', HTMLButtonElement).disabled = false;
    byId('session-close').hidden = false;
    render();
  }

  /** Asks for the stream without a credential: the 402 offers a session. @param {string} url @returns {Promise<SessionOffer | undefined>} */
  async function askForOffer(url) {
    let response;
    try {
      response = await fetch(url, { cache: 'no-store' });
    } catch {
      showError('The server cannot be reached; check your connection.');
      return undefined;
    }
    const answer = answerOf(response, await jsonBody(response));
    if (response.status !== 402) {
      showRefusal(answer);
      return undefined;
    }
    const offer = readSessionOffer(response.headers.get('www-authenticate'));
    if (!offer) showError('The server offered no prepaid session this page understands.');
    return offer;
  }

  /** @param {SubmitEvent} event */
  async function begin(event) {
    event.preventDefault();
    const chunksField = byId('session-chunks', HTMLInputElement);
    const chunks = Number(chunksField.value);
    reset();
    if (!Number.isInteger(chunks) || chunks < 1 || chunks > 200) {
      showError('Choose a whole number of chunks from 1 to 200.');
      chunksField.focus();
      return;
    }
    const button = byId('session-begin', HTMLButtonElement);
    button.disabled = true;
    const url = `${STREAM_ROUTE}?chunks=${chunks}`;
    const offer = await askForOffer(url);
    button.disabled = false;
    if (!offer) return;
    opening = offer;
    openingUrl = url;
    text(
      'session-offer-summary',
      `402 Payment Required, with a session: a deposit of ${sats(offer.depositSats)}, then ${sats(offer.unitPriceSats)} per chunk; ` +
        `a session left idle for ${offer.idleTimeoutSeconds} s is closed and refunded. Streaming ${chunks} chunks needs ${sats(chunks * offer.unitPriceSats)}.`,
    );
    text('session-offer-request', offer.request);
    byId('session-meter').hidden = false;
    step('offer').hidden = false;
    step('deposit').hidden = false;
    await deposit.show({
      invoice: offer.depositInvoice,
      paymentHash: offer.paymentHash,
      amountSats: offer.depositSats,
      expiresAt: offer.expiresAt,
      devWallet: demo.devWallet,
    });
  }
  /** @param {string} preimage @param {import('./invoice.js').InvoiceOffer} paidOffer */
  async function depositPaid(preimage, paidOffer) {
    if (!opening || paidOffer.paymentHash !== opening.paymentHash) return;
    depositPreimage = preimage;
    byId('deposit-invoice').hidden = true;
    text('session-deposit-paid', `Paid ${sats(opening.depositSats)}. The preimage (the proof of payment) is the session's key.`);
    byId('session-deposit-paid').hidden = false;
    step('open').hidden = false;
    if (demo.devWallet) {
      text('session-return-note', "Made by the dev wallet (POST /api/dev/receive, without an amount). Another wallet's invoice without an amount works too.");
      const made = await postJson('/api/dev/receive', {});
      const { invoice, paymentHash } = fields(made.data);
      if (made.ok && typeof invoice === 'string' && typeof paymentHash === 'string') {
        devReturn = returnField.value = invoice;
        devReturnHash = paymentHash;
      } else showRefusal(made);
    } else {
      text('session-return-note', 'From your wallet: its “receive” screen, with the amount left empty. The page checks it before sending it.');
    }
    returnField.focus();
  }

  async function openSession() {
    const offer = opening;
    if (!offer || !depositPreimage) return;
    const returnInvoice = returnField.value.trim().replace(/^lightning:/i, '');
    const problem = returnInvoiceProblem(returnInvoice, offer.depositInvoice);
    const problemBox = byId('session-return-problem');
    problemBox.textContent = problem;
    problemBox.hidden = problem === '';
    returnField.setAttribute('aria-invalid', String(problem !== ''));
    if (problem) {
      returnField.focus();
      return;
    }
    byId('session-error').hidden = true;
    byId('session-open', HTMLButtonElement).disabled = true;
    session = {
      url: openingUrl,
      offer,
      preimage: depositPreimage,
      returnHash: returnInvoice === devReturn ? devReturnHash : '',
      depositedSats: 0,
      spentSats: 0,
      open: false,
    };
    const credential = sessionCredential(offer.challenge, { action: 'open', preimage: depositPreimage, returnInvoice: returnInvoice.toLowerCase() });
    await stream(session, credential, 'open');
  }

  /**
   * Sends a request that runs the stream (open, or bearer on an open session) and reads it to its end.
   * @param {Session} current
   * @param {string} authorization
   * @param {'open' | 'bearer'} action
   */
  async function stream(current, authorization, action) {
    const retry = byId(action === 'open' ? 'session-open' : 'session-more', HTMLButtonElement);
    retry.disabled = true;
    let response;
    try {
      response = await fetch(current.url, { cache: 'no-store', headers: { authorization } });
    } catch {
      retry.disabled = false;
      return showError('The server cannot be reached; check your connection.');
    }
    if (!response.ok || !response.body) {
      retry.disabled = false;
      return showRefusal(answerOf(response, await jsonBody(response)));
    }
    retry.disabled = false;
    byId('session-more').hidden = true;
    byId('session-error').hidden = true;
    if (action === 'open') {
      current.open = true;
      current.depositedSats = current.offer.depositSats;
      byId('session-begin', HTMLButtonElement).disabled = true;
      byId('session-open-form').hidden = true;
      text(
        'session-opened',
        `Opened. The session's id is the deposit's payment hash (${current.offer.paymentHash.slice(0, 16)}…); what is not spent goes back to the return invoice.`,
      );
      byId('session-opened').hidden = false;
      step('stream').hidden = false;
      step('close').hidden = false;
    }
    // The request itself spent one unit: it pays for the first chunk.
    current.spentSats += current.offer.unitPriceSats;
    render();
    const words = byId('session-words');
    words.textContent = '';
    let received = 0;
    let paused = false;
    try {
      for await (const { event, data } of serverSentEvents(response.body)) {
        if (session !== current) return;
        const body = parseJson(data);
        if (event === 'message' && data !== '[DONE]') {
          const { chunk, of, word } = fields(body);
          received += 1;
          if (received > 1) current.spentSats += current.offer.unitPriceSats;
          words.append(`${received > 1 ? ' ' : ''}${typeof word === 'string' ? word : '…'}`);
          const total = Number.isSafeInteger(of) ? Number(of) : '?';
          text(
            'session-progress',
            `Chunk ${Number.isSafeInteger(chunk) ? chunk : received} of ${total}${paused ? ': the stream resumed by itself after the top-up' : ''}.`,
          );
          render();
        } else if (event === 'payment-need-topup') {
          const { balanceSpent, balanceRequired } = fields(body);
          // The server's own count of what the session spent, top-ups included.
          if (typeof balanceSpent === 'number') current.spentSats = balanceSpent;
          render();
          paused = true;
          text('session-progress', `Paused after chunk ${received}: the balance is spent. The server holds the stream for a top-up.`);
          text(
            'session-topup-reason',
            `The server sent payment-need-topup: ${sats(Number(balanceSpent) || 0)} spent, ${sats(Number(balanceRequired) || 0)} needed for the next chunk. ` +
              'It holds the stream for up to 30 seconds; pay a fresh deposit and it goes on by itself.',
          );
          step('topup').hidden = false;
          byId('session-topup-done').hidden = true;
          // Not awaited: the stream is read on meanwhile, for its resumption or its end.
          void offerTopUp(current);
        } else if (event === 'session-timeout') {
          topUp.stop();
          byId('topup-invoice').hidden = true;
          text('session-progress', `The stream ended after chunk ${received}: no top-up arrived while the server held it. Close the session for the refund.`);
        } else if (event === 'session-closed') {
          text('session-progress', `The stream ended after chunk ${received}: the session was closed.`);
        } else if (event === 'payment-receipt') {
          const { units, spent } = fields(body);
          text('session-progress', `Done: ${Number(units) || received} chunks, ${sats(Number(spent) || 0)} spent on this stream (its payment-receipt).`);
        }
      }
    } catch (error) {
      if (session === current) showError(`The stream broke off: ${error instanceof Error ? error.message : String(error)}`);
    }
    if (session === current && current.open && current.depositedSats - current.spentSats >= current.offer.unitPriceSats) {
      const chunks = new URL(current.url, window.location.origin).searchParams.get('chunks');
      text('session-more', `Stream ${chunks} more chunks from the balance`);
      byId('session-more').hidden = false;
    }
  }

  /** A fresh 402 on the same route: its deposit, paid, tops the session up. @param {Session} current */
  async function offerTopUp(current) {
    const offer = await askForOffer(current.url);
    if (!offer || session !== current) return;
    topUpOffer = offer;
    await topUp.show({
      invoice: offer.depositInvoice,
      paymentHash: offer.paymentHash,
      amountSats: offer.depositSats,
      expiresAt: offer.expiresAt,
      devWallet: demo.devWallet,
    });
  }

  /** @param {string} preimage @param {import('./invoice.js').InvoiceOffer} paidOffer */
  async function topUpPaid(preimage, paidOffer) {
    const [current, offer] = [session, topUpOffer];
    if (!current || !offer || paidOffer.paymentHash !== offer.paymentHash) return;
    topUp.say('Paid. Sending it as a topUp…');
    // Paid in now, whatever comes of the credit: a top-up that lands on a closed session is refunded with it.
    // Counted before the server's answer, since the held stream may resume (and spend) before that answer arrives.
    topUpOffer = undefined;
    topUpsPaid += 1;
    current.depositedSats += offer.depositSats;
    render();
    const credential = sessionCredential(offer.challenge, { action: 'topUp', sessionId: current.offer.paymentHash, topUpPreimage: preimage });
    const answer = await request(current.url, { headers: { authorization: credential } });
    if (!answer.ok) return showRefusal(answer);
    byId('topup-invoice').hidden = true;
    text('session-topup-done', `Topped up ${sats(offer.depositSats)} (top-up ${topUpsPaid}); the held stream goes on by itself.`);
    byId('session-topup-done').hidden = false;
  }

  async function streamMore() {
    const current = session;
    if (!current?.open) return;
    const credential = sessionCredential(current.offer.challenge, { action: 'bearer', sessionId: current.offer.paymentHash, preimage: current.preimage });
    await stream(current, credential, 'bearer');
  }

  async function closeSession() {
    const current = session;
    if (!current?.open) return;
    const button = byId('session-close', HTMLButtonElement);
    button.disabled = true;
    topUp.stop();
    const credential = sessionCredential(current.offer.challenge, { action: 'close', sessionId: current.offer.paymentHash, preimage: current.preimage });
    const answer = await request(current.url, { headers: { authorization: credential } });
    const { refundSats, refundStatus } = fields(answer.data);
    if (!answer.ok || typeof refundSats !== 'number') {
      button.disabled = false;
      return showRefusal(answer);
    }
    current.open = false;
    button.hidden = true;
    byId('session-begin', HTMLButtonElement).disabled = false;
    byId('session-more').hidden = true;
    byId('topup-invoice').hidden = true;
    text('session-refund', sats(refundSats));
    text('session-refunded', sats(refundSats));
    text('session-balance', '0');
    text(
      'session-refund-detail',
      `${sats(current.depositedSats)} deposited − ${sats(current.spentSats)} spent. refundStatus: ${String(refundStatus)} ` +
        `(${refundStatus === 'succeeded' ? 'paid to the return invoice' : refundStatus === 'skipped' ? 'nothing left to pay' : 'not paid yet: the server retries'}).`,
    );
    byId('session-closed').hidden = false;
    if (current.returnHash) await showReturnPaid(current.returnHash);
  }

  /** In development: the dev wallet's word that the return invoice was paid, and how much. @param {string} paymentHash */
  async function showReturnPaid(paymentHash) {
    const answer = await request(`/api/dev/receive/${paymentHash}`);
    const { paid, amountMsat } = fields(answer.data);
    if (!answer.ok) return showRefusal(answer);
    text(
      'session-return-paid',
      paid === true
        ? `The dev wallet's return invoice was paid ${sats(Number(amountMsat) / 1000)} (GET /api/dev/receive/<hash>).`
        : "The dev wallet's return invoice is not paid yet.",
    );
    byId('session-return-paid').hidden = false;
  }

  returnField.addEventListener('input', () => {
    byId('session-return-problem').hidden = true;
    returnField.removeAttribute('aria-invalid');
  });
  byId('session-start').addEventListener('submit', begin);
  byId('session-open').addEventListener('click', openSession);
  byId('session-more').addEventListener('click', streamMore);
  byId('session-close').addEventListener('click', closeSession);
}

/** @param {string} data @returns {unknown} */
function parseJson(data) {
  try {
    return JSON.parse(data);
  } catch {
    return null;
  }
}
