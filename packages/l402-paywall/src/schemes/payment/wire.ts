// The Payment scheme's encodings, shared by challenge, credential and receipt:
// JSON as base64url of its JCS text without padding (written), base64url with
// or without padding (read, draft-lightning-charge "Encoding Conventions"), and
// RFC 3339 times. Reading never throws: hostile text gives undefined.
import { MAX_BASE64_LENGTH, base64ToBytes, base64UrlEncode, utf8 } from '../../crypto/encoding.js';
import { canonicalJson } from './jcs.js';

/** The longest base64url parameter read: what base64ToBytes takes (8192 characters, 6 KiB of JSON). */
export const MAX_PARAM_LENGTH = MAX_BASE64_LENGTH;

/** base64url (no padding) of the JCS text of `value`. */
export function encodeJson(value: unknown): string {
  return base64UrlEncode(utf8(canonicalJson(value)));
}

// base64ToBytes's ASCII copy of the text, used and done with inside one call.
const asciiScratch = new Uint8Array(MAX_PARAM_LENGTH);
// decodeBase64Transient's output: a typed array of a kilobyte is allocated
// outside V8's heap, which cost more than the decode.
const transientBytes = new Uint8Array((MAX_PARAM_LENGTH / 4) * 3);

/** The bytes of a base64url (or base64) text, padded or not; undefined when it is not one or is longer than `maxLength`. */
export function decodeBase64(text: string, maxLength = MAX_PARAM_LENGTH): Uint8Array | undefined {
  return decodeBase64Transient(text, maxLength)?.slice();
}

/**
 * decodeBase64 into one buffer shared by every call: the view answered holds
 * the bytes only until the next call, so the caller reads them at once (into
 * a string, a MAC) and never keeps the view.
 */
export function decodeBase64Transient(text: string, maxLength = MAX_PARAM_LENGTH): Uint8Array | undefined {
  if (text.length === 0 || text.length > Math.min(maxLength, MAX_PARAM_LENGTH)) return undefined;
  const length = base64ToBytes(text, 0, text.length, transientBytes, asciiScratch);
  return length < 0 ? undefined : transientBytes.subarray(0, length);
}

// ignoreBOM: a byte-order mark stays in the text, where JSON.parse refuses it, rather than being dropped silently.
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The JSON value in UTF-8 bytes; undefined when they are not UTF-8 or not JSON. */
export function parseJsonBytes(bytes: Uint8Array): unknown {
  const text = utf8Text(bytes);
  try {
    return text === undefined ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** UTF-8 bytes as text; undefined when they are not UTF-8. */
export function utf8Text(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** An RFC 3339 UTC time to the second, as the drafts' examples write it: `2026-03-15T12:05:00Z`. */
export function formatTime(unixSeconds: number): string {
  return new Date(Math.floor(unixSeconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:[Zz]|([+-])(\d{2}):(\d{2}))$/;

/**
 * Unix seconds of an RFC 3339 date-time (any offset, fractions kept); undefined
 * for anything else, an impossible date (February 30th, hour 24) included.
 * Date.parse alone would take other formats too, each runtime its own.
 */
export function parseTime(text: string): number | undefined {
  if (text.length === 20) {
    const utc = utcSeconds(text);
    if (utc !== undefined) return utc;
  }
  const m = text.length <= 40 ? RFC3339.exec(text) : null;
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  const ms = utcMilliseconds(year, month, day, hour, minute, second);
  if (ms === undefined) return undefined;
  let offsetMinutes = 0;
  if (m[8]) {
    const offsetHours = Number(m[9]);
    const offsetMins = Number(m[10]);
    if (offsetHours > 23 || offsetMins > 59) return undefined;
    offsetMinutes = (m[8] === '-' ? -1 : 1) * (offsetHours * 60 + offsetMins);
  }
  return ms / 1000 + (m[7] ? Number(`0${m[7]}`) : 0) - offsetMinutes * 60;
}

/** Date.UTC of the fields, or undefined for an impossible date or time (February 30th, hour 24, minute 60). */
function utcMilliseconds(year: number, month: number, day: number, hour: number, minute: number, second: number): number | undefined {
  // Checked by arithmetic rather than by reading a Date back (a third of a
  // Payment credential's expiry check). Years before 100 are refused, as
  // Date.UTC would take them for 19xx.
  if (year < 100 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (hour > 23 || minute > 59 || second > 59) return undefined;
  return Date.UTC(year, month - 1, day, hour, minute, second);
}

/** The days of a month (1-12) of the proleptic Gregorian calendar. */
function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

// "YYYY-MM-DDTHH:MM:SSZ": every expiry this server writes (formatTime) and so
// every one a credential echoes back, read by character codes rather than the
// regular expression: the separators by position, every other character a digit.
const UTC_SHAPE = '0000-00-00T00:00:00Z';

/** parseTime of a 20-character `YYYY-MM-DDTHH:MM:SSZ` (T and Z in either case); undefined for any other text, which the general reader then reads. */
function utcSeconds(text: string): number | undefined {
  for (let i = 0; i < 20; i++) {
    const shape = UTC_SHAPE.charCodeAt(i);
    const c = text.charCodeAt(i);
    // Digits where the shape has 0; the separators as they are, T and Z in either case (RFC 3339 section 5.6).
    if (shape === 0x30 ? c < 0x30 || c > 0x39 : (c | (shape >= 0x41 ? 0x20 : 0)) !== (shape | (shape >= 0x41 ? 0x20 : 0))) return undefined;
  }
  // Date.UTC's check of the fields (utcMilliseconds) refuses what the general reader refuses, years before 100 among them.
  const ms = utcMilliseconds(
    digitsAt(text, 0, 4),
    digitsAt(text, 5, 2),
    digitsAt(text, 8, 2),
    digitsAt(text, 11, 2),
    digitsAt(text, 14, 2),
    digitsAt(text, 17, 2),
  );
  return ms === undefined ? undefined : ms / 1000;
}

/** The number written by `count` decimal digits (checked by the caller) from `at`. */
function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) value = value * 10 + text.charCodeAt(i) - 0x30;
  return value;
}
