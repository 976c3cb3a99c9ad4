// The Lightning charge as a server issues and verifies it, without zod: what
// the paywall (the edge-safe core, core/ and schemes/charge) takes from the Payment
// scheme, so the core bundle stays small (tests/package/packed.test.ts holds
// it to 25 KB gzipped). Issuing a challenge, formatting it, reading and
// verifying a credential, the receipt header's name.
//
// The checks here accept exactly what the zod schemas of challenge.ts and
// credential.ts accept, and give the same values (unknown fields dropped);
// those modules wrap these functions and hand in an `explain`, which says
// with zod what is wrong when a check fails. Without it (the paywall) a
// refusal names the part that is wrong, not the field.
import { isConditionName as isCaveatName } from '../../core/conditions.js';
import { base64ToBytes, base64UrlEncode, isHex32 } from '../../crypto/encoding.js';
import { isPreimageOf } from '../../crypto/preimage.js';
import type { BindingKeyring, BoundParameters } from './binding.js';
import { refuse, type Refused } from '../../core/problem.js';
import { MAX_PARAM_LENGTH, decodeBase64Transient, encodeJson, formatTime, parseJsonBytes, parseTime, utf8Text } from './wire.js';

export const PAYMENT_SCHEME = 'Payment';
export const LIGHTNING_METHOD = 'lightning';
export const CHARGE_INTENT = 'charge';
// The receipt header is named by the core's paid-request contract (core/decision.ts).
export { PAYMENT_RECEIPT_HEADER } from '../../core/decision.js';

/** The networks the Lightning method names (draft-lightning-charge): testnet has no name there. */
export type LightningNetwork = 'mainnet' | 'regtest' | 'signet';

/**
 * A Payment challenge's parameters as sent, which a credential echoes
 * unchanged: its id, what the id binds (request and opaque as their base64url
 * text), and a description for display, which the draft leaves unbound.
 */
export interface PaymentChallenge extends BoundParameters {
  id: string;
  description?: string;
}

/** A Lightning charge's request object (draft-lightning-charge, "Request Schema"). */
export interface LightningChargeRequest {
  amount: string;
  currency: 'sat';
  description?: string;
  recipient?: string;
  externalId?: string;
  methodDetails: { invoice: string; paymentHash?: string; network?: LightningNetwork };
}

/** What opaque carries: a flat map of strings with caveat-like names. */
export type BindingFields = Readonly<Record<string, string>>;

/** A credential's parts: the challenge echoed, the payer if it said, the preimage. */
export interface PaymentCredential {
  challenge: PaymentChallenge;
  source?: string;
  payload: { preimage: string };
}

export const MAX_OPAQUE_LENGTH = 4096;
/** The longest Authorization value read; the core draft asks servers to take credentials of at least 4 KB. */
export const MAX_CREDENTIAL_LENGTH = MAX_PARAM_LENGTH;

/** Says, with the schemas, why a value failed the plain check (challenge.ts, credential.ts); absent in the core. */
export interface Explain {
  credential(json: unknown): string;
  request(value: unknown): string;
  binding(value: unknown): string;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const optionalString = (v: unknown, max: number) => v === undefined || (typeof v === 'string' && v.length <= max);
const LOWER_HEX_32 = /^[0-9a-f]{64}$/;
const AMOUNT = /^[1-9][0-9]{0,15}$/;
/** An amount in whole satoshis as the drafts write it (a decimal string, no leading zero) that millisatoshis hold exactly. */
export const isSatAmount = (v: unknown): v is string => typeof v === 'string' && AMOUNT.test(v) && Number(v) * 1000 <= Number.MAX_SAFE_INTEGER;
/** One of the networks the Lightning method names. */
export const isLightningNetwork = (v: unknown): v is LightningNetwork => v === 'mainnet' || v === 'regtest' || v === 'signet';
const INVOICE = /^(?:ln[0-9a-z]+|LN[0-9A-Z]+)$/;
const BASE64URL_TEXT = /^[A-Za-z0-9_-]+={0,2}$/;

/** A charge request, when it is one (the schema's value); undefined otherwise. */
export function plainChargeRequest(json: unknown): LightningChargeRequest | undefined {
  if (!isObject(json)) return undefined;
  const { amount, currency, description, recipient, externalId, methodDetails } = json;
  if (!isSatAmount(amount) || currency !== 'sat') return undefined;
  if (!optionalString(description, 639) || !optionalString(recipient, 1024) || !optionalString(externalId, 1024) || !isObject(methodDetails)) return undefined;
  const { invoice, paymentHash, network } = methodDetails;
  if (typeof invoice !== 'string' || invoice.length > 4096 || !INVOICE.test(invoice)) return undefined;
  if (paymentHash !== undefined && !(typeof paymentHash === 'string' && LOWER_HEX_32.test(paymentHash))) return undefined;
  if (network !== undefined && !isLightningNetwork(network)) return undefined;
  return {
    amount,
    currency,
    ...(description !== undefined && { description: description as string }),
    ...(recipient !== undefined && { recipient: recipient as string }),
    ...(externalId !== undefined && { externalId: externalId as string }),
    methodDetails: { invoice, ...(paymentHash !== undefined && { paymentHash }), ...(network !== undefined && { network }) },
  };
}

/** Binding fields, frozen, when they are (the schema's value); undefined otherwise. */
export function plainBindingFields(json: unknown): BindingFields | undefined {
  if (!isObject(json)) return undefined;
  const names = Object.keys(json);
  if (names.length > 16) return undefined;
  const fields: Record<string, string> = {};
  for (const name of names) {
    const value = json[name];
    // The caveat grammar's names; values are any string (opaque is JSON), at most a caveat value's length.
    if (!isCaveatName(name) || typeof value !== 'string' || value.length > 512) return undefined;
    fields[name] = value;
  }
  return Object.freeze(fields);
}

/** A challenge's parameters, when they are (the schema's value); undefined otherwise. */
export function plainChallenge(json: unknown): PaymentChallenge | undefined {
  return challengeOf(json, true);
}

/**
 * plainChallenge, with the request's alphabet checked or left to the caller:
 * the verifier decodes the request anyway, and the decode refuses what the
 * pattern would (verifyChargeReading), so it spares a kilobyte's match.
 */
function challengeOf(json: unknown, checkRequestText: boolean): PaymentChallenge | undefined {
  if (!isObject(json)) return undefined;
  const { id, realm, method, intent, request, expires, digest, description, opaque } = json;
  if (typeof id !== 'string' || id.length === 0 || id.length > 256 || typeof realm !== 'string' || realm.length > 256) return undefined;
  // The names this server issues first: a pattern costs more than the comparison that spares it.
  if (typeof method !== 'string' || (method !== LIGHTNING_METHOD && !/^[a-z]{1,64}$/.test(method))) return undefined;
  if (typeof intent !== 'string' || (intent !== CHARGE_INTENT && !/^[A-Za-z0-9-]{1,64}$/.test(intent))) return undefined;
  if (typeof request !== 'string' || request.length > MAX_PARAM_LENGTH || (checkRequestText && !BASE64URL_TEXT.test(request))) return undefined;
  if (expires !== undefined && !(typeof expires === 'string' && expires.length <= 40 && parseTime(expires) !== undefined)) return undefined;
  if (!optionalString(digest, 1024) || !optionalString(description, 1024)) return undefined;
  if (opaque !== undefined && !(typeof opaque === 'string' && opaque.length <= MAX_OPAQUE_LENGTH && BASE64URL_TEXT.test(opaque))) return undefined;
  const challenge: PaymentChallenge = { id, realm, method, intent, request };
  if (expires !== undefined) challenge.expires = expires as string;
  if (digest !== undefined) challenge.digest = digest as string;
  if (description !== undefined) challenge.description = description as string;
  if (opaque !== undefined) challenge.opaque = opaque as string;
  return challenge;
}

/** A credential's parts, when they are (the schema's value); undefined otherwise. */
export function plainCredential(json: unknown): PaymentCredential | undefined {
  return credentialOf(json, true);
}

function credentialOf(json: unknown, checkRequestText: boolean): PaymentCredential | undefined {
  if (!isObject(json)) return undefined;
  const { challenge, source, payload } = json;
  const echoed = challengeOf(challenge, checkRequestText);
  if (!echoed || !optionalString(source, 512) || !isObject(payload)) return undefined;
  const preimage = payload.preimage;
  if (!isHex32(preimage)) return undefined;
  return { challenge: echoed, ...(source !== undefined && { source: source as string }), payload: { preimage } };
}

export interface LightningChargeOptions {
  /** The protection space, e.g. the API's host name: printable ASCII. */
  realm: string;
  /** The BOLT 11 invoice to pay, as the provider issued (and checked) it. */
  invoice: string;
  /** The invoice's payment hash (hex). */
  paymentHash: string;
  /** The invoice's amount. */
  amountSats: number;
  network: LightningNetwork;
  /** What is paid for, shown to the payer (the invoice's description). */
  description?: string;
  /** When the challenge stops being accepted: no later than the invoice's expiry. Whole seconds (rounded down). */
  expires: Date;
  /** Conditions bound into the challenge (as opaque): route, owner. */
  binding?: BindingFields;
}

/**
 * A Lightning charge challenge for an invoice, its id bound under the
 * keyring's newest key (challenge.ts lightningChargeChallenge, which says
 * with zod what is wrong). Throws a TypeError on options that could not make
 * a valid challenge: they are the server's own, so that is a bug to surface.
 */
export function chargeChallenge(keyring: BindingKeyring, options: LightningChargeOptions, explain?: Explain): PaymentChallenge {
  const { realm, invoice, paymentHash, amountSats, network, description, expires, binding } = options;
  if (!Number.isSafeInteger(amountSats) || amountSats <= 0) throw new TypeError(`amountSats must be a positive whole number, got ${amountSats}`);
  const given = {
    amount: String(amountSats),
    currency: 'sat',
    description,
    methodDetails: { invoice, paymentHash: typeof paymentHash === 'string' ? paymentHash.toLowerCase() : paymentHash, network },
  };
  const request = plainChargeRequest(given);
  if (!request) throw new TypeError(`request: ${explain ? explain.request(given) : 'not a Lightning charge request'}`);
  return issueChallenge(keyring, { realm, intent: CHARGE_INTENT, request, expires, binding }, explain);
}

/** What a Lightning challenge of any intent is made of, its request already checked against its intent's schema. */
export interface ChallengeParts {
  realm: string;
  intent: string;
  request: object;
  expires: Date;
  binding: BindingFields | undefined;
}

/**
 * A Lightning challenge (the charge's or the session's): its realm and expiry
 * checked, its request and binding encoded and held to what a credential can
 * echo, its id bound under the keyring's newest key. Throws a TypeError on
 * parts that could not make a valid challenge: they are the server's own.
 */
export function issueChallenge(keyring: BindingKeyring, { realm, intent, request, expires, binding }: ChallengeParts, explain?: Explain): PaymentChallenge {
  // A realm is quoted in the header and is the first binding slot: no quote-breaking or "|" either way.
  if (typeof realm !== 'string' || !/^[\x20-\x7b\x7d\x7e]{0,256}$/.test(realm))
    throw new TypeError('realm must be at most 256 printable ASCII characters without "|"');
  if (!(expires instanceof Date) || Number.isNaN(expires.getTime())) throw new TypeError('expires must be a valid Date');
  const encodedRequest = encodeJson(request);
  if (encodedRequest.length > MAX_PARAM_LENGTH)
    throw new TypeError(`the request is ${encodedRequest.length} characters of base64url, over the ${MAX_PARAM_LENGTH} a credential can echo`);
  const fields = binding === undefined ? {} : plainBindingFields(binding);
  if (!fields) throw new TypeError(`binding: ${explain ? explain.binding(binding) : 'not a flat map of strings with lower-case names'}`);
  const opaque = Object.keys(fields).length > 0 ? encodeJson(fields) : undefined;
  if (opaque !== undefined && opaque.length > MAX_OPAQUE_LENGTH) throw new TypeError('binding is too large');
  const bound = {
    realm,
    method: LIGHTNING_METHOD,
    intent,
    request: encodedRequest,
    expires: formatTime(expires.getTime() / 1000),
    ...(opaque !== undefined && { opaque }),
  };
  return { id: keyring.issue(bound), ...bound };
}

const SERIALISED_ORDER: readonly (keyof PaymentChallenge)[] = ['id', 'realm', 'method', 'intent', 'request', 'expires', 'digest', 'description', 'opaque'];

/** The WWW-Authenticate value of a challenge: every parameter a quoted-string. Throws on a value a header cannot carry (a control character, non-ASCII). */
export function formatChallenge(challenge: PaymentChallenge): string {
  const parts: string[] = [];
  for (const name of SERIALISED_ORDER) {
    const value = challenge[name];
    if (value !== undefined) parts.push(`${name}=${quoted(name, value)}`);
  }
  return `${PAYMENT_SCHEME} ${parts.join(', ')}`;
}

// RFC 9110 quoted-string: qdtext is tab, space and visible ASCII (obs-text aside); " and \ go as quoted-pairs.
function quoted(name: string, value: string): string {
  if (/[^\t\x20-\x7e]/.test(value)) throw new TypeError(`${name} holds a character a header cannot carry`);
  return `"${value.replace(/[\\"]/g, '\\$&')}"`;
}

export type CredentialParse = { ok: true; credential: PaymentCredential } | Refused;

/** An Authorization value in the Payment scheme decoded to its JSON: what every intent's credential is read from. */
export type PaymentReading = { ok: true; json: unknown } | Refused;

// The credential's bytes and their ASCII copy (base64ToBytes's scratch) are
// decoded into these, read into a string at once and never handed out:
// JavaScript runs one call at a time, so one pair serves every request.
const credentialBytes = new Uint8Array((MAX_CREDENTIAL_LENGTH / 4) * 3);
const credentialAscii = new Uint8Array(MAX_CREDENTIAL_LENGTH);

/**
 * The one decode of a Payment credential (base64url, then JSON), shared by
 * the charge and the session intents: the paywall reads a value once
 * whichever intent it turns out to be. Never repeats the preimage.
 *
 * The form is the scheme in any case (RFC 9110 auth-schemes are
 * case-insensitive), spaces, then base64 or base64url, padded or not, with
 * nothing after it but the trim: read by position, as the decode itself
 * refuses every character outside the alphabets (whitespace included) and
 * padding anywhere but at the end.
 */
export function readPaymentAuthorization(authorization: string): PaymentReading {
  if (authorization.length > MAX_CREDENTIAL_LENGTH + 16) return refuse('lightning/malformed-credential', 'Authorization is too long for a Payment credential');
  const text = authorization.trim();
  let at = SCHEME_LOWER.length;
  let scheme = text.length > at;
  for (let i = 0; i < SCHEME_LOWER.length && scheme; i++) scheme = (text.charCodeAt(i) | 0x20) === SCHEME_LOWER.charCodeAt(i);
  if (scheme && text.charCodeAt(at) !== 0x20) scheme = false;
  while (scheme && text.charCodeAt(at) === 0x20) at++;
  const length =
    scheme && at < text.length && text.length - at <= MAX_CREDENTIAL_LENGTH ? base64ToBytes(text, at, text.length, credentialBytes, credentialAscii) : -1;
  const json = length < 0 ? undefined : parseJsonBytes(credentialBytes.subarray(0, length));
  if (json !== undefined) return { ok: true, json };
  // Refused: which of the two reasons, by the form's own grammar (off the hot path).
  if (!CREDENTIAL.test(text)) return refuse('lightning/malformed-credential', 'Authorization is not of the form "Payment <base64url>"');
  return refuse('lightning/malformed-credential', 'the credential is not base64url JSON');
}

const SCHEME_LOWER = 'payment';
/** The form as a grammar: the scheme in any case, spaces, then base64url or base64, padded or not. */
const CREDENTIAL = /^payment[ ]+[A-Za-z0-9_+/-]+={0,2}$/i;

/** Whether a decoded credential echoes a challenge of `intent`: how the paywall tells the intents apart. */
export function echoesIntent(json: unknown, intent: string): boolean {
  return isObject(json) && isObject(json.challenge) && json.challenge.intent === intent;
}

/** Reads an Authorization value as a Payment credential; a refusal names what is wrong and never repeats the preimage. */
export function readCredential(authorization: string | null | undefined, explain?: Explain): CredentialParse {
  if (!authorization)
    return refuse('payment-required', 'Payment required: pay the invoice in the challenge and retry with Authorization: Payment <credential>');
  return credentialOfReading(readPaymentAuthorization(authorization), explain);
}

/** A decoded Payment credential as a charge credential: its parts, or what is wrong. */
export function credentialOfReading(reading: PaymentReading, explain?: Explain): CredentialParse {
  if (!reading.ok) return reading;
  const credential = plainCredential(reading.json);
  if (credential) return { ok: true, credential };
  return refuse('lightning/malformed-credential', explain ? `the credential is malformed: ${explain.credential(reading.json)}` : 'the credential is malformed');
}

/** A Lightning charge credential that verified. */
export interface VerifiedCharge {
  ok: true;
  challengeId: string;
  realm: string;
  amountSats: number;
  /** Lower-case hex: the replay key. */
  paymentHash: string;
  invoice: string;
  network: LightningNetwork;
  /** Unix seconds: when the challenge expires (the replay store may forget the payment after). */
  expiresAt: number;
  /** The opaque fields the challenge was issued with (none: empty). */
  binding: BindingFields;
  /** The payer, if it said. Unverified: the draft forbids requiring it. */
  source?: string;
}

export type CredentialVerification = VerifiedCharge | Refused;

const NO_BINDING: BindingFields = Object.freeze({});

/**
 * Verifies an Authorization value as an answer to one of this server's
 * Lightning charge challenges, at `nowSeconds`. Checks in order: form,
 * method and intent, binding (any key of the ring), expiry, preimage.
 * Local: no store, no network.
 */
export function verifyCharge(
  keyring: BindingKeyring,
  authorization: string | null | undefined,
  nowSeconds = Date.now() / 1000,
  explain?: Explain,
): CredentialVerification {
  const parsed = readCredential(authorization, explain);
  return parsed.ok ? verifyChargeCredential(keyring, parsed.credential, nowSeconds) : parsed;
}

/** verifyCharge of a credential already read (credentialOfReading). */
export function verifyChargeCredential(keyring: BindingKeyring, credential: PaymentCredential, nowSeconds: number): CredentialVerification {
  const { challenge } = credential;
  if (!isCharge(challenge)) return notCharge(challenge);
  const echo = checkEcho(keyring, challenge);
  return echo.ok ? chargeOfEcho(credential, echo, nowSeconds) : echo;
}

/**
 * verifyChargeCredential(credentialOfReading(reading)) in one pass, the
 * paywall's path: the same answer, refusals included, but the echoed request
 * decoded once, its alphabet checked by that decode rather than by a pattern
 * first (plainChallenge's, run here only to tell why a decode failed).
 */
export function verifyChargeReading(keyring: BindingKeyring, reading: PaymentReading, nowSeconds: number): CredentialVerification {
  if (!reading.ok) return reading;
  const credential = credentialOf(reading.json, false);
  // base64's "+" and "/" decode, but are not base64url: plainChallenge's pattern refuses them.
  if (!credential || credential.challenge.request.includes('+') || credential.challenge.request.includes('/')) return malformed();
  const { challenge } = credential;
  const opaque = challenge.opaque === undefined ? undefined : opaqueOf(challenge.opaque);
  const requestBytes = decodeBase64Transient(challenge.request);
  if (!requestBytes && !BASE64URL_TEXT.test(challenge.request)) return malformed();
  if (!isCharge(challenge)) return notCharge(challenge);
  if (!requestBytes || opaque === null) return notBase64Url();
  const echo = bindEcho(keyring, challenge, requestBytes, opaque);
  return echo.ok ? chargeOfEcho(credential, echo, nowSeconds) : echo;
}

function isCharge(challenge: PaymentChallenge): boolean {
  return challenge.method === LIGHTNING_METHOD && challenge.intent === CHARGE_INTENT;
}

function notCharge(challenge: PaymentChallenge): Refused {
  return refuse('method-unsupported', `this server takes lightning/charge credentials, not ${challenge.method}/${challenge.intent}`);
}

function malformed(): Refused {
  return refuse('lightning/malformed-credential', 'the credential is malformed');
}

function notBase64Url(): Refused {
  return refuse('lightning/malformed-credential', 'the echoed request or opaque is not base64url');
}

/** A charge credential whose echo verified (its request's bytes still in the shared buffer): expiry, what it holds, the preimage. */
function chargeOfEcho(credential: PaymentCredential, echo: VerifiedEcho, nowSeconds: number): CredentialVerification {
  const { challenge, payload, source } = credential;
  const { expiresAt, binding } = echo;
  // Read at once: the request's bytes are in the shared buffer until the next decode.
  const terms = writtenChargeTerms(echo.requestBytes) ?? boundChargeTerms(parseJsonBytes(echo.requestBytes));
  if (expiresAt <= nowSeconds) return refuse('lightning/expired-invoice', 'the challenge has expired: request a new one');
  // Bound by this server, so these fail only if it issued something it cannot read back.
  if (!terms || !binding) return refuse('verification-failed', 'the challenge does not hold what this server issues');
  if (!isPreimageOf(payload.preimage, terms.paymentHash))
    return refuse('lightning/invalid-preimage', 'SHA-256 of the preimage is not the payment hash of the challenge');
  const verified: VerifiedCharge = {
    ok: true,
    challengeId: challenge.id,
    realm: challenge.realm,
    amountSats: Number(terms.amount),
    paymentHash: terms.paymentHash,
    invoice: terms.invoice,
    network: terms.network ?? 'mainnet',
    expiresAt,
    binding,
  };
  if (source !== undefined) verified.source = source;
  return verified;
}

/** What a verifier reads from a charge request (writtenChargeTerms and boundChargeTerms are exported for their differential test). */
type ChargeTerms = { amount: string; paymentHash: string; invoice: string; network: LightningNetwork | undefined };

const AMOUNT_HEAD = '{"amount":"';
const CURRENCY_SAT = '","currency":"sat",';
const DETAILS_HEAD = '"methodDetails":{"invoice":"';
const NETWORK_MEMBER = ',"network":"';
const HASH_MEMBER = ',"paymentHash":"';

/**
 * boundChargeTerms of a request as chargeChallenge writes it, read at its
 * two ends instead of parsed (a third of a credential's verification went to
 * parsing it): JCS sorts the members, so the text begins
 * `{"amount":"<digits>","currency":"sat",` and, with no recipient written,
 * ends `"methodDetails":{"invoice":"<invoice>",["network":"<name>",]"paymentHash":"<hex>"}}`.
 * Inside a JSON string a quote is escaped, so these quoted names stand only
 * where the members are, whatever a description holds. Undefined for any
 * other text: the caller parses that one.
 */
export function writtenChargeTerms(bytes: Uint8Array): ChargeTerms | undefined {
  const text = utf8Text(bytes);
  if (text === undefined || !text.startsWith(AMOUNT_HEAD)) return undefined;
  const amountEnd = text.indexOf('"', AMOUNT_HEAD.length);
  const amount = text.slice(AMOUNT_HEAD.length, amountEnd);
  if (!isSatAmount(amount) || !text.startsWith(CURRENCY_SAT, amountEnd)) return undefined;
  const details = text.lastIndexOf(DETAILS_HEAD);
  if (details < 0) return undefined;
  const invoiceFrom = details + DETAILS_HEAD.length;
  let at = text.indexOf('"', invoiceFrom);
  const invoice = text.slice(invoiceFrom, at);
  let network: LightningNetwork | undefined;
  if (text.startsWith(NETWORK_MEMBER, at + 1)) {
    const from = at + 1 + NETWORK_MEMBER.length;
    at = text.indexOf('"', from);
    const named = text.slice(from, at);
    if (!isLightningNetwork(named)) return undefined;
    network = named;
  }
  const hashFrom = at + 1 + HASH_MEMBER.length;
  const paymentHash = text.slice(hashFrom, hashFrom + 64);
  if (!text.startsWith(HASH_MEMBER, at + 1) || text.length !== hashFrom + 67 || !text.endsWith('"}}') || !isHex32(paymentHash)) return undefined;
  return { amount, paymentHash, invoice, network };
}

/**
 * What a verifier reads from a request whose challenge id verified: the
 * amount and payment hash it computes with, in their forms, and the invoice
 * and network it reports, in their types. The rest of plainChargeRequest's
 * checks (the invoice's grammar, the lengths) held when this server issued
 * the request (chargeChallenge), and the id proves the request is that one,
 * so they are not run again on a kilobyte per credential.
 */
export function boundChargeTerms(json: unknown): ChargeTerms | undefined {
  if (!isObject(json) || !isObject(json.methodDetails)) return undefined;
  const { amount, currency } = json;
  const { invoice, paymentHash, network } = json.methodDetails;
  if (!isSatAmount(amount) || currency !== 'sat') return undefined;
  if (typeof invoice !== 'string' || !isHex32(paymentHash)) return undefined;
  if (network !== undefined && !isLightningNetwork(network)) return undefined;
  return { amount, paymentHash, invoice, network };
}

/** An echoed challenge this server issued: its request's bytes, its expiry and its bound fields (undefined when they are not ours to read). */
export interface VerifiedEcho {
  ok: true;
  requestBytes: Uint8Array;
  expiresAt: number;
  binding: BindingFields | undefined;
}

/**
 * Checks an echoed challenge of any intent against this server's keys: its
 * request and opaque decode, its id re-derives over them (any key of the
 * ring), and it has an expiry (every challenge this server issues does).
 * Whether the expiry has passed is the caller's to judge.
 */
export function verifyEcho(keyring: BindingKeyring, challenge: PaymentChallenge): VerifiedEcho | Refused {
  const echo = checkEcho(keyring, challenge);
  return echo.ok ? { ...echo, requestBytes: echo.requestBytes.slice() } : echo;
}

/** verifyEcho with the request's bytes left in the shared buffer (decodeBase64Transient): the caller reads them before anything else decodes. */
function checkEcho(keyring: BindingKeyring, challenge: PaymentChallenge): VerifiedEcho | Refused {
  // The opaque first: its decode shares the buffer the request's bytes must stay in.
  const opaque = challenge.opaque === undefined ? undefined : opaqueOf(challenge.opaque);
  const requestBytes = decodeBase64Transient(challenge.request);
  if (!requestBytes || opaque === null) return notBase64Url();
  return bindEcho(keyring, challenge, requestBytes, opaque);
}

/** The echo's id checked against the keys over its parts as decoded, then its expiry read (undefined opaque: the challenge had none). */
function bindEcho(keyring: BindingKeyring, challenge: PaymentChallenge, requestBytes: Uint8Array, opaque: OpaqueReading | undefined): VerifiedEcho | Refused {
  // The id binds the request's and opaque's bytes: they are bound as this
  // server wrote them (base64url, no padding), so an echo that spells the same
  // bytes with padding still verifies, and the fields read after are the bytes bound.
  const bound = {
    realm: challenge.realm,
    method: challenge.method,
    intent: challenge.intent,
    request: asWritten(challenge.request, requestBytes),
    expires: challenge.expires,
    digest: challenge.digest,
    opaque: opaque?.written,
  };
  if (!keyring.verify(challenge.id, bound)) {
    return refuse('lightning/unknown-challenge', 'the challenge was not issued by this server, or was changed since');
  }
  const expiresAt = challenge.expires === undefined ? undefined : parseTime(challenge.expires);
  if (expiresAt === undefined) return refuse('lightning/unknown-challenge', 'the challenge has no expiry');
  if (opaque !== undefined) rememberOpaque(challenge.opaque!, opaque);
  return { ok: true, requestBytes, expiresAt, binding: opaque ? opaque.fields : NO_BINDING };
}

/** An opaque parameter as bound (its base64url as this server writes it) and as read (its fields; undefined when they are not ours to read). */
interface OpaqueReading {
  written: string;
  fields: BindingFields | undefined;
}

// A route's challenges all carry the same opaque (its route and conditions),
// so its reading is kept, keyed by its text: the reading is a function of the
// text alone, so a kept one is the one a fresh decode would give. Only
// opaques of challenges that verified are kept (never a stranger's text), and
// at most MAX_KEPT_OPAQUES: the lot is dropped when full.
const keptOpaques = new Map<string, OpaqueReading>();
const MAX_KEPT_OPAQUES = 256;

/** An opaque text's reading, kept or fresh; null when it is not base64url. */
function opaqueOf(text: string): OpaqueReading | null {
  const kept = keptOpaques.get(text);
  if (kept) return kept;
  const bytes = decodeBase64Transient(text);
  if (!bytes) return null;
  return { written: asWritten(text, bytes), fields: plainBindingFields(parseJsonBytes(bytes)) };
}

function rememberOpaque(text: string, reading: OpaqueReading): void {
  if (keptOpaques.has(text)) return;
  if (keptOpaques.size >= MAX_KEPT_OPAQUES) keptOpaques.clear();
  keptOpaques.set(text, reading);
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * The bytes' base64url as this server writes it (no padding): the echoed
 * text itself when it already is that (no padding, no stray bits in its last
 * digit, as every text this server wrote), which spares re-encoding a
 * kilobyte per credential; otherwise written again.
 */
export function asWritten(text: string, bytes: Uint8Array): string {
  const tail = text.length % 4;
  if (!text.includes('=') && tail !== 1) {
    const last = BASE64URL.indexOf(text[text.length - 1]!);
    if (last >= 0 && (tail === 0 || (last & (tail === 2 ? 15 : 3)) === 0)) return text;
  }
  return base64UrlEncode(bytes);
}
