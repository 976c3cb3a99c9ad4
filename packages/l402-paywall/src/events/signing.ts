// Standard Webhooks signatures (HMAC-SHA256): headers webhook-id,
// webhook-timestamp (unix seconds) and webhook-signature ("v1,<base64>",
// space-separated when there are several) over `${id}.${timestamp}.${body}`,
// with a secret "whsec_" + base64 of 24 to 64 random bytes. Receivers can check
// them with the `standardwebhooks` or `svix` libraries, or with verifyEvent.
import { hmac } from '@noble/hashes/hmac.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { base64 } from '@scure/base';
import type { L402Event } from './types.js';

export const SECRET_PREFIX = 'whsec_';
/** Receivers refuse events signed further than this from their clock (the standardwebhooks library's tolerance). */
export const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

export type EventVerificationCode = 'INVALID_SECRET' | 'MISSING_HEADERS' | 'INVALID_TIMESTAMP' | 'STALE' | 'FUTURE' | 'BAD_SIGNATURE' | 'MALFORMED_EVENT';

export class EventVerificationError extends Error {
  override readonly name = 'EventVerificationError';
  constructor(
    readonly code: EventVerificationCode,
    message: string,
  ) {
    super(message);
  }
}

const encoder = new TextEncoder();

/** The key inside a `whsec_` secret; throws a TypeError naming what is wrong (never the secret). */
export function secretKey(secret: string): Uint8Array {
  if (typeof secret !== 'string' || !secret.startsWith(SECRET_PREFIX))
    throw new TypeError(`an event secret is "${SECRET_PREFIX}" followed by base64 (generateEventSecret() makes one)`);
  let key: Uint8Array;
  try {
    key = base64.decode(secret.slice(SECRET_PREFIX.length));
  } catch {
    throw new TypeError(`an event secret is "${SECRET_PREFIX}" followed by base64; this one is not base64`);
  }
  if (key.length < 24 || key.length > 64) throw new TypeError(`an event secret holds 24 to 64 bytes, this one ${key.length}`);
  return key;
}

/** A new secret: whsec_ and 32 random bytes in base64. */
export function generateEventSecret(): string {
  return SECRET_PREFIX + base64.encode(crypto.getRandomValues(new Uint8Array(32)));
}

function signature(key: Uint8Array, id: string, timestamp: number, body: string): string {
  return base64.encode(hmac(sha256, key, encoder.encode(`${id}.${timestamp}.${body}`)));
}

/** The three headers for `body` (the exact bytes sent, as text) under `id` at `timestampSeconds` (default now). */
export function signEvent(body: string, id: string, secret: string | Uint8Array, timestampSeconds = Math.floor(Date.now() / 1000)): SignatureHeaders {
  const key = typeof secret === 'string' ? secretKey(secret) : secret;
  return { 'webhook-id': id, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${signature(key, id, timestampSeconds, body)}` };
}

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}

function equalText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * Checks a delivered event: the signature must be a v1 HMAC of this body under
 * `secret`, made within `toleranceSeconds` (default 5 minutes) of now, and the
 * body a CloudEvent whose id is the webhook-id. Answers the event; throws
 * EventVerificationError (with a `code`) for anything tampered, unsigned,
 * signed with another key, stale or malformed.
 */
export function verifyEvent(
  body: string | Uint8Array,
  headers: HeaderSource,
  secret: string,
  options: { toleranceSeconds?: number; nowSeconds?: number } = {},
): L402Event {
  let key: Uint8Array;
  try {
    key = secretKey(secret);
  } catch (error) {
    throw new EventVerificationError('INVALID_SECRET', (error as Error).message);
  }
  const id = header(headers, 'webhook-id');
  const timestampText = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestampText || !signatures)
    throw new EventVerificationError('MISSING_HEADERS', 'webhook-id, webhook-timestamp and webhook-signature are required');
  if (!/^\d{1,12}$/.test(timestampText)) throw new EventVerificationError('INVALID_TIMESTAMP', 'webhook-timestamp must be unix seconds');
  const timestamp = Number(timestampText);
  const now = options.nowSeconds ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (now - timestamp > tolerance) throw new EventVerificationError('STALE', `signed more than ${tolerance} s ago`);
  if (timestamp - now > tolerance) throw new EventVerificationError('FUTURE', `signed more than ${tolerance} s in the future`);
  let text: string;
  try {
    text = typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new EventVerificationError('MALFORMED_EVENT', 'the body is not UTF-8');
  }
  const expected = signature(key, id, timestamp, text);
  let matched = false;
  for (const candidate of signatures.split(' ')) {
    const comma = candidate.indexOf(',');
    if (candidate.slice(0, comma) === 'v1' && equalText(candidate.slice(comma + 1), expected)) matched = true;
  }
  if (!matched) throw new EventVerificationError('BAD_SIGNATURE', 'no v1 signature matches this body and secret');
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    throw new EventVerificationError('MALFORMED_EVENT', 'the body is not JSON');
  }
  const e = event as Partial<L402Event> | null;
  if (!e || typeof e !== 'object' || e.specversion !== '1.0' || typeof e.type !== 'string' || typeof e.source !== 'string' || e.id !== id) {
    throw new EventVerificationError('MALFORMED_EVENT', 'the body is not a CloudEvent 1.0 whose id is the webhook-id');
  }
  return e as L402Event;
}
