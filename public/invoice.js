// @ts-check
// An invoice on the landing page, for both demos (the 1-sat charge, a
// session's deposit and its top-ups): the QR code (uqr, vendored, loaded on
// first use), a link for a wallet on this device, the text to copy, the dev
// wallet's button where the server has one, a browser wallet (WebLN) where the
// visitor has one, and for any other wallet /api/demo/preimage polled (the
// charge: some wallets do not show the proof) or the preimage pasted from the
// wallet (a session's deposit and top-ups, whose preimage the server never
// hands out: the session id is public, and the preimage is part of its key).
// Whoever notices the payment first hands over the preimage, once per invoice.
import { byId } from './dom.js';
import { fields } from './json-answer.js';
import { preimageProblem } from './prepaid-session.js';
import { postJson, request } from './request.js';

/** A browser wallet (WebLN), when the visitor has one. */
/** @typedef {{ enable(): Promise<unknown>, sendPayment(invoice: string): Promise<unknown> }} WebLN */
/**
 * What an invoice box shows: the invoice, its amount and expiry, and whether the dev wallet may pay it.
 * @typedef {{ invoice: string, paymentHash: string, amountSats: number, expiresAt: string, devWallet: boolean }} InvoiceOffer
 */
/**
 * @typedef {object} InvoiceBox
 * @property {(offer: InvoiceOffer) => Promise<void>} show shows an invoice and waits for its payment (polling the server for its preimage)
 * @property {(text: string) => void} say the box's status line (a live region)
 * @property {() => void} stop stops waiting (the invoice is no longer wanted)
 */

const POLL_MS = 1000;

/**
 * The invoice box whose elements are `<prefix>-invoice`, `-qr`, `-open`, `-bolt11`, `-amount`, `-expiry`,
 * `-devpay`, `-webln`, `-copy` and `-waiting`: paid calls `onPaid` once per invoice, a failure `onError`.
 * With `pastePreimage`, the server is not asked for the preimage: the box's form `-proof` (its field
 * `-preimage`, its problem line `-preimage-problem`) takes the one the visitor's wallet shows.
 * @param {string} prefix
 * @param {{ onPaid(preimage: string, offer: InvoiceOffer): void, onError(message: string): void, pastePreimage?: boolean }} handlers
 * @returns {InvoiceBox}
 */
export function invoiceBox(prefix, { onPaid, onError, pastePreimage = false }) {
  const part = (/** @type {string} */ name) => byId(`${prefix}-${name}`);
  const devPay = byId(`${prefix}-devpay`, HTMLButtonElement);
  const text = byId(`${prefix}-bolt11`, HTMLTextAreaElement);
  const say = (/** @type {string} */ message) => {
    part('waiting').textContent = message;
  };
  /** @type {InvoiceOffer | undefined} */
  let current;
  /** @type {string | undefined} the payment hash already handed over */
  let handedOver;
  let stopPolling = () => {};

  /** @param {InvoiceOffer} offer @param {string} preimage */
  const paid = (offer, preimage) => {
    if (handedOver === offer.paymentHash || current !== offer) return;
    handedOver = offer.paymentHash;
    stopPolling();
    onPaid(preimage, offer);
  };

  devPay.addEventListener('click', async () => {
    const offer = current;
    if (!offer) return;
    devPay.disabled = true;
    const answer = await postJson('/api/dev/pay', { invoice: offer.invoice });
    const { preimage } = fields(answer.data);
    if (answer.ok && typeof preimage === 'string') return paid(offer, preimage);
    devPay.disabled = false;
    onError(answer.error);
  });
  byId(`${prefix}-webln`).addEventListener('click', async () => {
    const [offer, wallet] = [current, browserWallet()];
    if (!offer || !wallet) return;
    try {
      await wallet.enable();
      const { preimage } = fields(await wallet.sendPayment(offer.invoice));
      if (typeof preimage === 'string') return paid(offer, preimage);
      // The payment went through: the server hands a charge's preimage over while polled; a deposit's is pasted.
      say(pastePreimage ? 'Paid. Paste the preimage your wallet shows for it below.' : 'Paid. Waiting for the server to confirm it…');
    } catch (error) {
      onError(`The browser wallet did not pay: ${error instanceof Error ? error.message : String(error)}`);
    }
  });
  byId(`${prefix}-copy`).addEventListener('click', async () => {
    if (!current) return;
    try {
      await navigator.clipboard.writeText(current.invoice);
      say('Invoice copied. Waiting for the payment…');
    } catch {
      // No clipboard permission: the invoice is selected in its box for copying by hand.
      text.select();
    }
  });

  if (pastePreimage) {
    const field = byId(`${prefix}-preimage`, HTMLInputElement);
    const problemLine = byId(`${prefix}-preimage-problem`);
    field.addEventListener('input', () => {
      problemLine.hidden = true;
      field.removeAttribute('aria-invalid');
    });
    byId(`${prefix}-proof`).addEventListener('submit', async (event) => {
      event.preventDefault();
      const offer = current;
      if (!offer) return;
      const problem = await preimageProblem(field.value, offer.paymentHash);
      problemLine.textContent = problem;
      problemLine.hidden = problem === '';
      field.setAttribute('aria-invalid', String(problem !== ''));
      if (problem) return field.focus();
      paid(offer, field.value.trim().toLowerCase());
    });
  }

  /** Polls /api/demo/preimage until the invoice is paid: the proof for wallets that do not show it. @param {InvoiceOffer} offer */
  const poll = (offer) => {
    let stopped = false;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    stopPolling = () => {
      stopped = true;
      clearTimeout(timer);
    };
    const again = async () => {
      const answer = await request(`/api/demo/preimage?hash=${offer.paymentHash}`);
      if (stopped) return;
      const { preimage } = fields(answer.data);
      if (answer.status === 200 && typeof preimage === 'string') return paid(offer, preimage);
      if (answer.status === 202 || answer.status === 0 || answer.status >= 500) {
        timer = setTimeout(again, POLL_MS);
        return;
      }
      stopPolling();
      onError(answer.error);
    };
    timer = setTimeout(again, POLL_MS);
  };

  return {
    async show(offer) {
      stopPolling();
      current = offer;
      const { renderSVG } = await import('./vendor/uqr-0.1.3.mjs');
      // Upper case lets the QR code use its compact alphanumeric mode (BOLT11 is case-insensitive).
      const svg = renderSVG(`lightning:${offer.invoice}`.toUpperCase(), { ecc: 'M', border: 2 });
      byId(`${prefix}-qr`, HTMLImageElement).src = `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;
      byId(`${prefix}-open`, HTMLAnchorElement).href = `lightning:${offer.invoice}`;
      text.value = offer.invoice;
      part('amount').textContent = String(offer.amountSats);
      const expires = Date.parse(offer.expiresAt);
      part('expiry').textContent = Number.isNaN(expires) ? '–' : new Date(expires).toLocaleTimeString();
      devPay.hidden = !offer.devWallet;
      devPay.disabled = false;
      byId(`${prefix}-webln`).hidden = browserWallet() === undefined;
      say(pastePreimage ? 'Waiting for the payment: then paste the preimage your wallet shows for it below.' : 'Waiting for the payment…');
      part('invoice').hidden = false;
      if (pastePreimage) {
        const field = byId(`${prefix}-preimage`, HTMLInputElement);
        field.value = '';
        field.removeAttribute('aria-invalid');
        byId(`${prefix}-preimage-problem`).hidden = true;
      } else poll(offer);
    },
    say,
    stop() {
      stopPolling();
      current = undefined;
    },
  };
}

/** @returns {WebLN | undefined} */
function browserWallet() {
  const { webln } = fields(/** @type {unknown} */ (window));
  const wallet = fields(webln);
  return typeof wallet.enable === 'function' && typeof wallet.sendPayment === 'function' ? /** @type {WebLN} */ (webln) : undefined;
}
