// @ts-check
// A prepaid session's client for the landing page (docs/sessions.md "On the
// wire"): what the browser needs of the Payment scheme's intent="session",
// without the library's code (the page has no bundler). It reads the session
// challenge of a 402's WWW-Authenticate, writes the four credentials (open,
// bearer, topUp, close), checks a pasted return invoice as the server will,
// checks a preimage the visitor pastes from their wallet (the server never
// hands a deposit's preimage out), and reads a metered Server-Sent Events body
// as it arrives (fetch and a reader: EventSource cannot send Authorization).
// No DOM here: the section's own script (landing-session.js) shows what this
// one reads.

/** @typedef {import('l402-paywall/mpp').PaymentChallenge} PaymentChallenge */
/** @typedef {import('l402-paywall/mpp').SessionPayload} SessionPayload */
/**
 * A session challenge as the page reads it: the challenge to echo, and its request's figures.
 * @typedef {object} SessionOffer
 * @property {PaymentChallenge} challenge
 * @property {number} unitPriceSats
 * @property {string} unitType
 * @property {number} depositSats
 * @property {string} depositInvoice
 * @property {string} paymentHash the deposit's: the session's id once opened with it
 * @property {number} idleTimeoutSeconds
 * @property {string} expiresAt RFC 3339, '' when the challenge names none
 * @property {string} request the decoded request, as JSON text, to show
 */
/** @typedef {{ event: string, data: string }} ServerSentEvent */

// The challenge's parameters a credential echoes (the library's PaymentChallenge): the rest are dropped.
const ECHOED = ['id', 'realm', 'method', 'intent', 'request', 'expires', 'digest', 'description', 'opaque'];
const HASH = /^[0-9a-f]{64}$/;
const WHOLE = /^[1-9][0-9]{0,9}$/;

// One part of a WWW-Authenticate value: a parameter (name = quoted string or token), a word (a scheme, or
// a token68 such as an L402 macaroon, padding included), or anything else, skipped.
const PART = /([!#$%&'*+.^_`|~0-9A-Za-z-]+)[ \t]*=[ \t]*(?:"((?:[^"\\]|\\.)*)"|([^\s,"]*))|([!#$%&'*+.^_`|~0-9A-Za-z/-]+=*)|"(?:[^"\\]|\\.)*"?|[^\s,]/g;

/**
 * The auth challenges in a WWW-Authenticate value (RFC 9110: a scheme, then
 * parameters with quoted strings and backslash escapes; several challenges
 * share one value, comma-joined), each with its parameters (names lower-cased,
 * the first of a repeated one kept). A token68 reads as a scheme of its own
 * with no parameters, which is harmless: the page reads Payment challenges
 * only, and they carry parameters. Never throws.
 * @param {string} header
 * @returns {{ scheme: string, params: Map<string, string> }[]}
 */
export function parseAuthenticate(header) {
  /** @type {{ scheme: string, params: Map<string, string> }[]} */
  const challenges = [];
  for (const [, name, quoted, bare, word] of header.matchAll(PART)) {
    const current = challenges.at(-1);
    if (name !== undefined && current && !current.params.has(name.toLowerCase())) {
      current.params.set(name.toLowerCase(), quoted !== undefined ? quoted.replace(/\\(.)/g, '$1') : (bare ?? ''));
    } else if (word !== undefined) {
      challenges.push({ scheme: word, params: new Map() });
    }
  }
  return challenges;
}

/**
 * The Lightning session offered by a 402's WWW-Authenticate, checked; undefined when there is none the page can use.
 * @param {string | null} header
 * @returns {SessionOffer | undefined}
 */
export function readSessionOffer(header) {
  for (const { scheme, params } of parseAuthenticate(header ?? '')) {
    if (scheme.toLowerCase() !== 'payment' || params.get('method') !== 'lightning' || params.get('intent') !== 'session') continue;
    /** @type {Record<string, string>} */
    const echoed = {};
    for (const name of ECHOED) {
      const value = params.get(name);
      if (value !== undefined) echoed[name] = value;
    }
    const request = decodeJson(echoed.request ?? '');
    if (!request || !echoed.id || echoed.realm === undefined) continue;
    const { amount, depositAmount, depositInvoice, paymentHash, idleTimeout, unitType } = request;
    if (typeof amount !== 'string' || !WHOLE.test(amount) || typeof depositAmount !== 'string' || !WHOLE.test(depositAmount)) continue;
    if (typeof depositInvoice !== 'string' || !/^ln[0-9a-z]+$/i.test(depositInvoice) || typeof paymentHash !== 'string' || !HASH.test(paymentHash)) continue;
    return {
      challenge: /** @type {PaymentChallenge} */ (/** @type {unknown} */ (echoed)),
      unitPriceSats: Number(amount),
      unitType: typeof unitType === 'string' ? unitType : 'unit',
      depositSats: Number(depositAmount),
      depositInvoice,
      paymentHash,
      idleTimeoutSeconds: typeof idleTimeout === 'string' && WHOLE.test(idleTimeout) ? Number(idleTimeout) : 0,
      expiresAt: echoed.expires ?? '',
      request: JSON.stringify(request, null, 2),
    };
  }
  return undefined;
}

/**
 * The Authorization value of a session action answering `challenge`: `Payment <base64url JSON {challenge, payload}>`.
 * @param {PaymentChallenge} challenge
 * @param {SessionPayload} payload
 * @returns {string}
 */
export function sessionCredential(challenge, payload) {
  return `Payment ${base64url(new TextEncoder().encode(JSON.stringify({ challenge, payload })))}`;
}

/**
 * Why a return invoice cannot take the refund, as the server will say it (its
 * form, checksum, network and amount), or '' when it can: BOLT 11, on the
 * deposit's network, naming no amount.
 * @param {string} invoice
 * @param {string} depositInvoice
 * @returns {string}
 */
export function returnInvoiceProblem(invoice, depositInvoice) {
  const text = invoice.trim().replace(/^lightning:/i, '');
  if (text === '') return 'Paste an invoice without an amount from your wallet: the refund is paid to it.';
  const lower = text.toLowerCase();
  const hrp = /^(lnbcrt|lntbs|lntb|lnbc)([0-9]*[munp]?)1/.exec(lower);
  if (!hrp || (text !== lower && text !== text.toUpperCase()) || !bech32Valid(lower)) return 'This is not a Lightning invoice (BOLT 11).';
  const network = /^(lnbcrt|lntbs|lntb|lnbc)/.exec(depositInvoice.toLowerCase())?.[1];
  if (hrp[1] !== network) return `This invoice is for another network than the deposit's (${network ?? 'unknown'}).`;
  if (hrp[2] !== '' && !/^0+[munp]?$/.test(hrp[2] ?? '')) return 'This invoice names an amount: the refund needs one without (the server chooses the amount).';
  return '';
}

/**
 * Why a preimage pasted from a wallet is not the proof of payment of the
 * invoice with this payment hash, or '' when it is: 64 hex digits (spaces
 * around them and upper case are forgiven) whose SHA-256 is the payment hash.
 * @param {string} preimage
 * @param {string} paymentHash
 * @returns {Promise<string>}
 */
export async function preimageProblem(preimage, paymentHash) {
  const text = preimage.trim().toLowerCase();
  if (text === '') return 'Paste the preimage your wallet shows for this payment (some wallets call it the proof of payment).';
  if (!HASH.test(text)) return 'A preimage is 64 hexadecimal digits (0 to 9, a to f).';
  const bytes = Uint8Array.from(text.match(/../g) ?? [], (pair) => parseInt(pair, 16));
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  const hash = Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('');
  return hash === paymentHash.toLowerCase() ? '' : "This is not this invoice's preimage: its SHA-256 is not the invoice's payment hash.";
}

/**
 * The events of a Server-Sent Events body, each as it arrives: its name
 * ('message' when it has none) and its data lines joined. An event longer
 * than 64 KiB ends the reading with an error rather than filling memory.
 * @param {ReadableStream<Uint8Array>} body
 * @returns {AsyncGenerator<ServerSentEvent>}
 */
export async function* serverSentEvents(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  // A CR that ends a piece may be the first half of a CRLF: it waits for the next piece.
  let carriedReturn = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      const text = carriedReturn + decoder.decode(value, { stream: true });
      carriedReturn = text.endsWith('\r') ? '\r' : '';
      buffer += (carriedReturn ? text.slice(0, -1) : text).replace(/\r\n?/g, '\n');
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parseEvent(block);
        if (event) yield event;
      }
      if (buffer.length > 65_536) throw new Error('the stream sent an event longer than 64 KiB');
    }
  } finally {
    // The caller stopped reading (or it failed): hang up, so the server stops the stream.
    reader.cancel().catch(() => {});
  }
}

/** @param {string} block @returns {ServerSentEvent | undefined} */
function parseEvent(block) {
  let event = 'message';
  /** @type {string[]} */
  const data = [];
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const [field, value] = colon < 0 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')];
    if (field === 'event') event = value;
    else if (field === 'data') data.push(value);
  }
  return data.length > 0 ? { event, data: data.join('\n') } : undefined;
}

/** @param {string} text base64url (or base64) of UTF-8 JSON @returns {Record<string, unknown> | undefined} */
function decodeJson(text) {
  try {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, ''));
    const json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(binary, (char) => char.charCodeAt(0))));
    return typeof json === 'object' && json !== null && !Array.isArray(json) ? json : undefined;
  } catch {
    return undefined;
  }
}

/** @param {Uint8Array} bytes */
function base64url(bytes) {
  return btoa(Array.from(bytes, (byte) => String.fromCharCode(byte)).join(''))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

const CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3];

/** BIP 173's checksum over a lower-case bech32 text, without its length limit (BOLT 11 invoices are longer). @param {string} text */
function bech32Valid(text) {
  const separator = text.lastIndexOf('1');
  const [hrp, data] = [text.slice(0, separator), text.slice(separator + 1)];
  if (separator < 1 || data.length < 6) return false;
  let check = 1;
  const step = (/** @type {number} */ value) => {
    const top = check >>> 25;
    check = ((check & 0x1ffffff) << 5) ^ value;
    for (let i = 0; i < 5; i++) if ((top >>> i) & 1) check ^= GENERATOR[i] ?? 0;
  };
  for (const char of hrp) step(char.charCodeAt(0) >> 5);
  step(0);
  for (const char of hrp) step(char.charCodeAt(0) & 31);
  for (const char of data) {
    const value = CHARSET.indexOf(char);
    if (value < 0) return false;
    step(value);
  }
  return check === 1;
}
